/// A JPEG's marker segments walked from SOI to EOI (ITU-T T.81 Annex B); the tables and headers are read, the
/// entropy-coded scans are only stepped over (to the next marker), no pixel is decoded.
///
/// ```
/// FF D8                               SOI
/// FF xx  length (2, BE, ≥ 2, counts itself)  payload     a segment; FF fill bytes may come before a marker
///   C0–C3 C5–C7 C9–CB CD–CF  SOFn     precision (8|12; 2–16 lossless)  height (2, > 0)  width (2, > 0)
///                                     components Nf (1–4) × (id, sampling H|V each 1–4, table 0–3); length 8 + 3 Nf
///   C4  DHT   (class 0|1, id 0–3, 16 counts, their symbols: ≤ 256) …, to the segment's end exactly
///   DB  DQT   (precision 0|1, id 0–3, 64 or 128 bytes) …, to the segment's end exactly
///   DD  DRI   length 4
///   DA  SOS   Ns (1–4) × (a frame component's id, tables); length 6 + 2 Ns; then entropy-coded bytes in which
///             FF is followed by 00 (a stuffed byte), D0–D7 (a restart marker) or FF (fill) — until a marker
///   E0–EF APPn, FE COM, CC DAC, DC DNL, DE DHP, DF EXP, F0–FD JPGn     passed unread
/// FF D9                               EOI: the file's end, or another JPEG's SOI (an Ultra HDR gain map, MPF)
/// ```
enum JPEGStructure {
    /// The frame headers (SOF0–15 but DHT C4, JPG C8, DAC CC).
    static let frameMarkers: Set<UInt8> = [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF]
    /// Lossless processes, whose precision may be 2–16.
    static let losslessMarkers: Set<UInt8> = [0xC3, 0xC7, 0xCB, 0xCF]

    /// The (first) image's width and height; throws `truncated` or `malformed` (JPEG) at the first thing not right.
    static func dimensions(_ bytes: [UInt8]) throws(ImageSniffError) -> (width: Int, height: Int) {
        let r = ImageBytes(bytes: bytes, format: .jpeg)
        var first: (width: Int, height: Int)?
        var start = 0
        while true {
            // One image from its SOI; what follows its EOI is either nothing or another image.
            let (size, end) = try image(r, from: start)
            first = first ?? size
            if end == bytes.count { return first! }
            guard end + 3 <= bytes.count, bytes[end] == 0xFF, bytes[end + 1] == 0xD8, bytes[end + 2] == 0xFF else {
                throw r.malformed("\(bytes.count - end) bytes follow its end of image")
            }
            start = end
        }
    }

    /// The image whose SOI is at `start`: its size, and where its EOI ends.
    private static func image(_ r: ImageBytes, from start: Int) throws(ImageSniffError) -> ((width: Int, height: Int), Int) {
        let bytes = r.bytes
        var at = start + 2
        var frame: (width: Int, height: Int, components: [Int])?
        var scans = 0
        while true {
            guard try r.u8(at) == 0xFF else { throw r.malformed("byte \(at) is not a marker") }
            while try r.u8(at) == 0xFF { at += 1 }  // fill bytes
            let marker = bytes[at]
            at += 1
            switch marker {
            case 0x00: throw r.malformed("a stuffed FF 00 stands outside a scan (byte \(at - 2))")
            case 0xD8: throw r.malformed("a second start of image comes before the end of the first")
            case 0xD0...0xD7: throw r.malformed("a restart marker stands outside a scan")
            case 0x01: continue  // TEM: no length
            case 0xD9:
                guard let frame, scans > 0 else { throw r.malformed("it ends before a frame header and a scan") }
                return ((frame.width, frame.height), at)
            default: break
            }
            let length = try r.u16BE(at)
            guard length >= 2 else { throw r.malformed("a segment (FF \(hex(marker))) claims \(length) bytes") }
            let body = at + 2, end = at + length
            try r.need(end)
            switch marker {
            case _ where frameMarkers.contains(marker):
                guard frame == nil else { throw r.malformed("it has a second frame header") }
                frame = try frameHeader(r, at: body, end: end, lossless: losslessMarkers.contains(marker))
            case 0xC4: try huffmanTables(r, at: body, end: end)
            case 0xDB: try quantisationTables(r, at: body, end: end)
            case 0xDD: guard length == 4 else { throw r.malformed("its restart interval segment is not 4 bytes") }
            case 0xDA:
                guard let frame else { throw r.malformed("a scan comes before the frame header") }
                let components = try r.u8(body)
                guard (1...4).contains(components), length == 6 + 2 * components else { throw r.malformed("a scan header is not 1–4 components") }
                for k in 0..<components where !frame.components.contains(try r.u8(body + 1 + 2 * k)) {
                    throw r.malformed("a scan names a component the frame does not have")
                }
                at = try entropyCodedEnd(r, from: end)
                scans += 1
                continue
            case 0xE0...0xEF, 0xFE, 0xCC, 0xDC, 0xDE, 0xDF, 0xF0...0xFD: break
            default: throw r.malformed("it has an unknown marker FF \(hex(marker))")
            }
            at = end
        }
    }

    /// SOFn's payload: precision, size and components, the segment's length exactly what they take.
    private static func frameHeader(_ r: ImageBytes, at: Int, end: Int, lossless: Bool) throws(ImageSniffError)
        -> (width: Int, height: Int, components: [Int]) {
        let precision = try r.u8(at)
        guard lossless ? (2...16).contains(precision) : precision == 8 || precision == 12 else {
            throw r.malformed("its frame's sample precision is \(precision) bits")
        }
        let height = try r.u16BE(at + 1), width = try r.u16BE(at + 3), count = try r.u8(at + 5)
        guard width > 0, height > 0 else { throw r.malformed("its frame header says \(width) × \(height) pixels") }
        guard (1...4).contains(count), end - at == 6 + 3 * count else { throw r.malformed("its frame header is not 1–4 components") }
        var components: [Int] = []
        for k in 0..<count {
            let sampling = try r.u8(at + 7 + 3 * k), table = try r.u8(at + 8 + 3 * k)
            guard (1...4).contains(sampling >> 4), (1...4).contains(sampling & 0x0F), table <= 3 else {
                throw r.malformed("a frame component's sampling or table is out of range")
            }
            components.append(try r.u8(at + 6 + 3 * k))
        }
        return (width, height, components)
    }

    /// DHT's tables, which must fill the segment exactly.
    private static func huffmanTables(_ r: ImageBytes, at start: Int, end: Int) throws(ImageSniffError) {
        var at = start
        while at < end {
            let id = try r.u8(at)
            guard id >> 4 <= 1, id & 0x0F <= 3 else { throw r.malformed("a Huffman table's class or id is out of range") }
            guard at + 17 <= end else { throw r.malformed("a Huffman table is cut by its segment") }
            let symbols = r.bytes[at + 1..<at + 17].reduce(0) { $0 + Int($1) }
            guard symbols <= 256 else { throw r.malformed("a Huffman table has \(symbols) codes") }
            at += 17 + symbols
        }
        guard at == end else { throw r.malformed("a Huffman table runs past its segment") }
    }

    /// DQT's tables, which must fill the segment exactly.
    private static func quantisationTables(_ r: ImageBytes, at start: Int, end: Int) throws(ImageSniffError) {
        var at = start
        while at < end {
            let id = try r.u8(at)
            guard id >> 4 <= 1, id & 0x0F <= 3 else { throw r.malformed("a quantisation table's precision or id is out of range") }
            at += 1 + 64 * (1 + id >> 4)
        }
        guard at == end else { throw r.malformed("a quantisation table runs past its segment") }
    }

    /// Where the entropy-coded bytes from `start` end: at the first FF that begins a marker (not 00, not a restart
    /// marker, not a fill byte). Running out first is `truncated`.
    private static func entropyCodedEnd(_ r: ImageBytes, from start: Int) throws(ImageSniffError) -> Int {
        let found: Int? = r.bytes.withUnsafeBufferPointer { b in
            var at = start
            while at + 1 < b.count {
                if b[at] != 0xFF { at += 1; continue }
                let next = b[at + 1]
                if next == 0x00 || (0xD0...0xD7).contains(next) { at += 2; continue }
                if next == 0xFF { at += 1; continue }
                return at
            }
            return nil
        }
        guard let found else { throw .truncated(.jpeg) }
        return found
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
