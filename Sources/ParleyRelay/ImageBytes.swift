/// Bounds-checked reads over an image's bytes for the structure walkers: reading past the end is `truncated`, since
/// a file cut anywhere reads as one that stops early. Integers big-endian (PNG, JPEG) or little-endian (GIF, WebP).
struct ImageBytes {
    let bytes: [UInt8]
    /// The format whose structure is walked, for the errors.
    let format: ImageFormat

    var count: Int { bytes.count }

    /// Throws `truncated` unless `end` bytes are there.
    func need(_ end: Int) throws(ImageSniffError) {
        guard end <= bytes.count else { throw .truncated(format) }
    }

    /// A `malformed` error of this format.
    func malformed(_ why: String) -> ImageSniffError { .malformed(format, why) }

    func u8(_ at: Int) throws(ImageSniffError) -> Int {
        try need(at + 1)
        return Int(bytes[at])
    }

    func u16BE(_ at: Int) throws(ImageSniffError) -> Int {
        try need(at + 2)
        return Int(bytes[at]) << 8 | Int(bytes[at + 1])
    }

    func u16LE(_ at: Int) throws(ImageSniffError) -> Int {
        try need(at + 2)
        return Int(bytes[at]) | Int(bytes[at + 1]) << 8
    }

    func u24LE(_ at: Int) throws(ImageSniffError) -> Int {
        try need(at + 3)
        return Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16
    }

    func u32BE(_ at: Int) throws(ImageSniffError) -> Int {
        try need(at + 4)
        return Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
    }

    func u32LE(_ at: Int) throws(ImageSniffError) -> Int {
        try need(at + 4)
        return Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
    }

    /// Four bytes at `at` as text (a chunk's type), for messages and comparisons.
    func fourCC(_ at: Int) throws(ImageSniffError) -> String {
        try need(at + 4)
        return String(decoding: bytes[at..<at + 4], as: UTF8.self)
    }
}
