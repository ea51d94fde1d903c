/// A GIF's blocks walked from its header to its trailer (GIF89a §17–27); the LZW data is stepped over sub-block by
/// sub-block, not decoded.
///
/// ```
/// 0   "GIF87a" | "GIF89a"
/// 6   screen width (2, LE, > 0)  height (2, LE, > 0)  flags (global table: bit 7, its size 2^(n+1): bits 0–2)
///     background (1)  aspect (1)
/// 13  the global colour table (3 bytes a colour), when flagged
///     21 label  sub-blocks                            an extension (graphic control, comment, application, …)
///     2C left top width (> 0) height (> 0) flags      an image: its local table when flagged, the LZW minimum code
///        [local table]  LZW size (2–8)  sub-blocks    size, the data's sub-blocks
///     sub-blocks: size (1), that many bytes, …, until a size of 0
/// -1  3B                                              the trailer: the file's last byte, after at least one image
/// ```
enum GIFStructure {
    /// The logical screen's width and height; throws `truncated` or `malformed` (GIF) at the first block not right.
    static func dimensions(_ bytes: [UInt8]) throws(ImageSniffError) -> (width: Int, height: Int) {
        let r = ImageBytes(bytes: bytes, format: .gif)
        let width = try r.u16LE(6), height = try r.u16LE(8), flags = try r.u8(10)
        try r.need(13)
        guard width > 0, height > 0 else { throw r.malformed("its logical screen is \(width) × \(height) pixels") }
        var at = 13 + colourTableBytes(flags)
        var images = 0
        while true {
            switch try r.u8(at) {
            case 0x21:
                _ = try r.u8(at + 1)  // the label: any extension is stepped over
                at = try subBlocksEnd(r, from: at + 2)
            case 0x2C:
                let w = try r.u16LE(at + 5), h = try r.u16LE(at + 7), imageFlags = try r.u8(at + 9)
                guard w > 0, h > 0 else { throw r.malformed("an image of it is \(w) × \(h) pixels") }
                at += 10 + colourTableBytes(imageFlags)
                let codeSize = try r.u8(at)
                guard (2...8).contains(codeSize) else { throw r.malformed("an image's LZW code size is \(codeSize)") }
                at = try subBlocksEnd(r, from: at + 1)
                images += 1
            case 0x3B:
                guard images > 0 else { throw r.malformed("it has no image") }
                guard at + 1 == bytes.count else { throw r.malformed("\(bytes.count - at - 1) bytes follow its trailer") }
                return (width, height)
            case let other:
                throw r.malformed("it has an unknown block 0x\(String(other, radix: 16))")
            }
        }
    }

    /// Bytes of the colour table `flags` announce (bit 7; 3 × 2^(size+1)), 0 when none.
    static func colourTableBytes(_ flags: Int) -> Int { flags & 0x80 == 0 ? 0 : 3 << ((flags & 0x07) + 1) }

    /// Where the sub-blocks starting at `start` end (after their 0 terminator).
    private static func subBlocksEnd(_ r: ImageBytes, from start: Int) throws(ImageSniffError) -> Int {
        var at = start
        while true {
            let size = try r.u8(at)
            at += 1 + size
            if size == 0 { return at }
        }
    }
}
