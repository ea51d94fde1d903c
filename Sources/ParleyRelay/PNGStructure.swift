import CZlib

/// A PNG's chunks walked from its signature to IEND (PNG spec, 3rd ed. §5, §11), each CRC checked with zlib's
/// CRC-32; no pixel is decoded.
///
/// ```
/// 0   89 50 4E 47 0D 0A 1A 0A                     signature
/// 8   length (4, BE, < 2^31)  type (4 letters)  data (length)  CRC-32 of type + data (4, BE)    a chunk, repeated
///     IHDR first, 13 bytes:   width (4)  height (4)  bit depth (1)  colour type (1)  compression 0  filter 0  interlace 0|1
///     PLTE (palette images: required; before IDAT; 1–256 entries of 3 bytes; none in grey images)
///     IDAT … IDAT             consecutive; their data is one zlib stream (its 2-byte header checked)
///     IEND last, empty, the file's last bytes
/// ```
///
/// Chunks with a lower-case first letter (ancillary: text, colour profiles, APNG's frames) pass unread; an unknown
/// critical chunk (upper-case first letter) is refused, as a decoder must refuse it.
enum PNGStructure {
    /// Bit depths allowed per colour type (§11.2.2): grey, RGB, palette, grey + alpha, RGBA.
    static let depths: [Int: Set<Int>] = [0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16]]
    /// The chunk types a decoder must understand.
    static let critical: Set<String> = ["IHDR", "PLTE", "IDAT", "IEND"]
    /// The largest chunk length the spec allows.
    static let maxChunkLength = 0x7FFF_FFFF

    /// The image's width and height; throws `truncated` or `malformed` (PNG) at the first chunk that is not right.
    static func dimensions(_ bytes: [UInt8]) throws(ImageSniffError) -> (width: Int, height: Int) {
        let r = ImageBytes(bytes: bytes, format: .png)
        var at = 8
        var size: (width: Int, height: Int)?
        var colourType = 0
        var palette = false
        enum Data { case before, inside, after }
        var data = Data.before
        while true {
            let length = try r.u32BE(at)
            let type = try r.fourCC(at + 4)
            if size == nil, type != "IHDR" || length != 13 { throw r.malformed("its first chunk is not a 13-byte IHDR") }
            guard length <= maxChunkLength else { throw r.malformed("chunk \(type) claims \(length) bytes") }
            guard bytes[at + 4..<at + 8].allSatisfy(isLetter) else { throw r.malformed("a chunk's type is not four letters") }
            let body = at + 8, end = body + length + 4
            try r.need(end)
            guard try r.u32BE(end - 4) == crc32(bytes, from: at + 4, to: end - 4) else { throw r.malformed("chunk \(type)'s CRC is wrong") }
            if data == .inside && type != "IDAT" { data = .after }
            switch type {
            case "IHDR":
                guard size == nil else { throw r.malformed("it has a second IHDR") }
                size = try header(r, at: body, colourType: &colourType)
            case "PLTE":
                guard data == .before, !palette else { throw r.malformed("its PLTE comes after its image data, or twice") }
                guard length % 3 == 0, (3...768).contains(length) else { throw r.malformed("its PLTE holds \(length) bytes, not 1–256 colours of 3") }
                guard colourType != 0 && colourType != 4 else { throw r.malformed("a grey image has a PLTE") }
                palette = true
            case "IDAT":
                guard data != .after else { throw r.malformed("its IDAT chunks are not consecutive") }
                if data == .before {
                    guard colourType != 3 || palette else { throw r.malformed("a palette image has no PLTE before its image data") }
                    if length >= 2, !isZlibHeader(bytes[body], bytes[body + 1]) { throw r.malformed("its image data is not a zlib stream") }
                }
                data = .inside
            case "IEND":
                guard length == 0 else { throw r.malformed("its IEND is not empty") }
                guard data != .before else { throw r.malformed("it has no IDAT (no image data)") }
                guard end == bytes.count else { throw r.malformed("\(bytes.count - end) bytes follow its IEND") }
                return size!  // IHDR came first
            default:
                guard bytes[at + 4] & 0x20 != 0 else { throw r.malformed("it has an unknown critical chunk \(type)") }
            }
            at = end
        }
    }

    /// IHDR's fields at `at`: the size, and the colour type for the chunks after it.
    private static func header(_ r: ImageBytes, at: Int, colourType: inout Int) throws(ImageSniffError) -> (width: Int, height: Int) {
        let width = try r.u32BE(at), height = try r.u32BE(at + 4)
        guard (1...maxChunkLength).contains(width), (1...maxChunkLength).contains(height) else {
            throw r.malformed("its IHDR says \(width) × \(height) pixels")
        }
        let depth = try r.u8(at + 8)
        colourType = try r.u8(at + 9)
        guard let allowed = depths[colourType], allowed.contains(depth) else {
            throw r.malformed("its IHDR's bit depth \(depth) and colour type \(colourType) are no PNG's")
        }
        guard try r.u8(at + 10) == 0, try r.u8(at + 11) == 0, try r.u8(at + 12) <= 1 else {
            throw r.malformed("its IHDR names an unknown compression, filter or interlace method")
        }
        return (width, height)
    }

    static func isLetter(_ c: UInt8) -> Bool { (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) }

    /// RFC 1950's header: deflate (CM 8) with a window of at most 32 KiB, no preset dictionary, check bits right.
    static func isZlibHeader(_ cmf: UInt8, _ flg: UInt8) -> Bool {
        cmf & 0x0F == 8 && cmf >> 4 <= 7 && flg & 0x20 == 0 && (Int(cmf) << 8 | Int(flg)) % 31 == 0
    }

    /// zlib's CRC-32 of `bytes[from..<to]`.
    static func crc32(_ bytes: [UInt8], from: Int, to: Int) -> Int {
        bytes.withUnsafeBufferPointer { Int(parley_crc32(0, $0.baseAddress! + from, to - from)) }
    }
}
