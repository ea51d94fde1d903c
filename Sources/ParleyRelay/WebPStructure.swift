/// A WebP's RIFF chunks walked to the end of the body, and the bitstream headers of its images read (the WebP
/// container spec, RFC 9649; VP8's frame header, RFC 6386 §9.1; VP8L's, RFC 9649 §3.2); no pixel is decoded.
///
/// ```
/// 0   "RIFF"  size (4, LE) = the body's length - 8  "WEBP"
/// 12  fourCC (4)  size (4, LE)  payload (size)  a pad byte when size is odd      chunks, tiling the body exactly
///     simple:   one "VP8 " or "VP8L" chunk, nothing else
///     extended: "VP8X" first: flags (1: animation 0x02), 3 reserved, canvas width - 1 (3, LE), height - 1 (3, LE);
///               then an image chunk ("VP8 " | "VP8L", "ALPH" before it) or, animated, "ANIM" and "ANMF" frames
///               (x, y, width - 1, height - 1, duration: 3 bytes each, flags, then the frame's image chunk)
/// "VP8 "  frame tag (3: key frame, version ≤ 3, shown, first partition within the chunk)  9D 01 2A
///         width (2, LE, 14 bits, > 0)  height (2, LE, 14 bits, > 0)
/// "VP8L"  2F  width - 1 (14 bits)  height - 1 (14 bits)  alpha (1 bit)  version 0 (3 bits), little-endian
/// ```
enum WebPStructure {
    /// The image's (or canvas's) width and height; throws `truncated` or `malformed` (WebP) at the first thing not right.
    static func dimensions(_ bytes: [UInt8]) throws(ImageSniffError) -> (width: Int, height: Int) {
        let r = ImageBytes(bytes: bytes, format: .webp)
        let size = try r.u32LE(4)
        try r.need(20)  // the first chunk's header
        if size + 8 > bytes.count { throw .truncated(.webp) }
        guard size + 8 == bytes.count else { throw r.malformed("its RIFF size says \(size + 8) bytes, the body has \(bytes.count)") }
        let chunks = try self.chunks(r, from: 12, to: bytes.count)
        switch chunks[0].type {
        case "VP8 ", "VP8L":
            guard chunks.count == 1 else { throw r.malformed("a simple WebP holds one image chunk, this one \(chunks.count) chunks") }
            return try image(r, chunks[0])
        case "VP8X":
            return try extended(r, chunks)
        default:
            throw r.malformed("its first chunk is not VP8, VP8L or VP8X")
        }
    }

    /// One chunk: its type and where its payload is.
    struct Chunk {
        var type: String
        var payload: Range<Int>
    }

    /// The chunks from `start` to `end`, which they must tile exactly (each padded to an even size).
    private static func chunks(_ r: ImageBytes, from start: Int, to end: Int) throws(ImageSniffError) -> [Chunk] {
        var found: [Chunk] = []
        var at = start
        while at < end {
            guard at + 8 <= end else { throw r.malformed("a chunk's header is cut by its container's size") }
            let type = try r.fourCC(at), size = try r.u32LE(at + 4)
            let payloadEnd = at + 8 + size
            guard payloadEnd <= end else { throw r.malformed("chunk \(type) runs past its container's size") }
            found.append(Chunk(type: type, payload: at + 8..<payloadEnd))
            at = payloadEnd + (size & 1)
        }
        guard at == end, !found.isEmpty else { throw r.malformed("its chunks do not fill its container") }
        return found
    }

    /// VP8X and what follows it: the canvas, and an image or the frames of an animation.
    private static func extended(_ r: ImageBytes, _ chunks: [Chunk]) throws(ImageSniffError) -> (width: Int, height: Int) {
        let header = chunks[0].payload
        guard header.count >= 10 else { throw r.malformed("its VP8X chunk is \(header.count) bytes, not 10") }
        let flags = try r.u8(header.lowerBound)
        let width = try r.u24LE(header.lowerBound + 4) + 1, height = try r.u24LE(header.lowerBound + 7) + 1
        let rest = chunks.dropFirst()
        if flags & 0x02 != 0 {
            guard rest.contains(where: { $0.type == "ANIM" }) else { throw r.malformed("an animation without ANIM") }
            let frames = rest.filter { $0.type == "ANMF" }
            guard !frames.isEmpty else { throw r.malformed("an animation without frames") }
            for frame in frames {
                guard frame.payload.count > 16 else { throw r.malformed("an animation frame is \(frame.payload.count) bytes") }
                let inside = try Self.chunks(r, from: frame.payload.lowerBound + 16, to: frame.payload.upperBound)
                guard let image = inside.first(where: { $0.type == "VP8 " || $0.type == "VP8L" }) else {
                    throw r.malformed("an animation frame holds no image")
                }
                _ = try self.image(r, image)
            }
        } else {
            guard let image = rest.first(where: { $0.type == "VP8 " || $0.type == "VP8L" }) else {
                throw r.malformed("its VP8X is followed by no image chunk")
            }
            _ = try self.image(r, image)
        }
        return (width, height)
    }

    /// A "VP8 " or "VP8L" chunk's bitstream header: the image's size.
    private static func image(_ r: ImageBytes, _ chunk: Chunk) throws(ImageSniffError) -> (width: Int, height: Int) {
        let at = chunk.payload.lowerBound
        if chunk.type == "VP8L" {
            guard chunk.payload.count >= 5, try r.u8(at) == 0x2F else { throw r.malformed("its VP8L chunk lacks the 0x2F signature") }
            let bits = try r.u32LE(at + 1)
            guard bits >> 29 == 0 else { throw r.malformed("its VP8L version is \(bits >> 29), not 0") }
            return ((bits & 0x3FFF) + 1, (bits >> 14 & 0x3FFF) + 1)
        }
        guard chunk.payload.count >= 10 else { throw r.malformed("its VP8 chunk is \(chunk.payload.count) bytes") }
        let tag = try r.u24LE(at)
        guard tag & 1 == 0 else { throw r.malformed("its VP8 frame is not a key frame") }
        guard tag >> 1 & 7 <= 3, tag >> 4 & 1 == 1 else { throw r.malformed("its VP8 frame's version or show flag is wrong") }
        guard tag >> 5 <= chunk.payload.count - 10 else { throw r.malformed("its VP8 first partition runs past the chunk") }
        guard r.bytes[at + 3] == 0x9D, r.bytes[at + 4] == 0x01, r.bytes[at + 5] == 0x2A else {
            throw r.malformed("its VP8 frame lacks the start code 9D 01 2A")
        }
        let width = try r.u16LE(at + 6) & 0x3FFF, height = try r.u16LE(at + 8) & 0x3FFF
        guard width > 0, height > 0 else { throw r.malformed("its VP8 frame is \(width) × \(height) pixels") }
        return (width, height)
    }
}
