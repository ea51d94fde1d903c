/// The image types the relay keeps as attachments, recognised by their bytes, never by what a client declares.
/// `init(sniffing:)` is pure: it looks at the first and last bytes only, decodes nothing, and says why it refuses.
///
/// ```
/// PNG   0  89 50 4E 47 0D 0A 1A 0A        signature (8 bytes)
///       8  00 00 00 0D  49 48 44 52       the first chunk: IHDR, 13 bytes long
///      16  13 bytes of header, 4 of CRC   (33 bytes in all)
///     -12  00 00 00 00  49 45 4E 44  AE 42 60 82     the last chunk: IEND
/// JPEG  0  FF D8 FF                       start of image, then a marker
///      -2  FF D9                          end of image
/// WebP  0  52 49 46 46  s0 s1 s2 s3       "RIFF", size little-endian = the body's length - 8
///       8  57 45 42 50                    "WEBP"
///      12  "VP8 " | "VP8L" | "VP8X"       the first chunk (20 bytes at least)
/// GIF   0  47 49 46 38 37|39 61           "GIF87a" or "GIF89a", then the 7-byte screen descriptor
///      -1  3B                             trailer
/// ```
///
/// A body that is a prefix of a signature, or that matches one and stops before its end marker, is `truncated`;
/// one whose structure contradicts its signature (a PNG whose first chunk is not IHDR, a RIFF size smaller than the
/// body) is `malformed`.
public enum ImageFormat: String, Sendable, CaseIterable {
    /// Portable Network Graphics.
    case png
    /// JPEG (JFIF, Exif: anything from SOI to EOI).
    case jpeg
    /// WebP (lossy, lossless or extended), in its RIFF container.
    case webp
    /// GIF, 1987 or 1989.
    case gif

    /// Its media type: `image/png`, `image/jpeg`, `image/webp`, `image/gif`.
    public var mediaType: String { "image/" + rawValue }

    /// What people call it in messages.
    public var name: String {
        switch self {
        case .png: "PNG"
        case .jpeg: "JPEG"
        case .webp: "WebP"
        case .gif: "GIF"
        }
    }

    /// The four media types, for messages: "image/png, image/jpeg, image/webp or image/gif".
    public static let mediaTypes = "image/png, image/jpeg, image/webp or image/gif"

    /// The format a `Content-Type` value names (case-insensitive, parameters after `;` ignored); nil for anything else.
    public init?(mediaType: String) {
        let bare = mediaType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let type = String(bare.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()).lowercased()
        guard type.hasPrefix("image/"), let format = ImageFormat(rawValue: String(type.dropFirst("image/".count))) else { return nil }
        self = format
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    static let pngHeaderChunk: [UInt8] = [0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52]  // length 13, "IHDR"
    static let pngEndChunk: [UInt8] = [0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82]  // IEND + CRC
    /// Signature, IHDR chunk (8 + 13 + CRC 4).
    static let pngHeaderEnd = 33
    static let jpegStart: [UInt8] = [0xFF, 0xD8, 0xFF]
    static let jpegEnd: [UInt8] = [0xFF, 0xD9]
    /// Start of image, one marker, end of image.
    static let jpegMinimum = 6
    static let riff: [UInt8] = Array("RIFF".utf8)
    static let webpForm: [UInt8] = Array("WEBP".utf8)
    static let webpChunks: [[UInt8]] = ["VP8 ", "VP8L", "VP8X"].map { Array($0.utf8) }
    /// RIFF header (12) and the first chunk's header (8).
    static let webpMinimum = 20
    static let gifSignatures: [[UInt8]] = [Array("GIF87a".utf8), Array("GIF89a".utf8)]
    static let gifTrailer: UInt8 = 0x3B
    /// Signature (6), logical screen descriptor (7), trailer (1).
    static let gifMinimum = 14

    /// The format of `bytes`, checked by content; throws why it is none of them.
    public init(sniffing bytes: [UInt8]) throws(ImageSniffError) {
        guard !bytes.isEmpty else { throw .empty }
        func starts(_ signature: [UInt8]) -> Bool { bytes.count >= signature.count && bytes[..<signature.count].elementsEqual(signature) }
        func ends(_ marker: [UInt8]) -> Bool { bytes.count >= marker.count && bytes.suffix(marker.count).elementsEqual(marker) }
        /// `bytes` is shorter than `signature` and is its beginning: a file cut inside its signature.
        func cutInside(_ signature: [UInt8]) -> Bool { bytes.count < signature.count && signature.starts(with: bytes) }

        if starts(Self.pngSignature) {
            guard bytes.count >= Self.pngHeaderEnd else { throw .truncated(.png) }
            guard bytes[8..<16].elementsEqual(Self.pngHeaderChunk) else { throw .malformed(.png, "its first chunk is not a 13-byte IHDR") }
            guard bytes.count >= Self.pngHeaderEnd + Self.pngEndChunk.count, ends(Self.pngEndChunk) else { throw .truncated(.png) }
            self = .png
        } else if starts(Self.jpegStart) {
            guard bytes.count >= Self.jpegMinimum, ends(Self.jpegEnd) else { throw .truncated(.jpeg) }
            self = .jpeg
        } else if starts(Self.riff) {
            guard bytes.count >= 12 else { throw .truncated(.webp) }  // cut before its form type
            guard bytes[8..<12].elementsEqual(Self.webpForm) else { throw .unknown }  // WAV, AVI, ...
            guard bytes.count >= Self.webpMinimum else { throw .truncated(.webp) }
            let size = Int(bytes[4]) | Int(bytes[5]) << 8 | Int(bytes[6]) << 16 | Int(bytes[7]) << 24
            if size + 8 > bytes.count { throw .truncated(.webp) }
            guard size + 8 == bytes.count else { throw .malformed(.webp, "its RIFF size says \(size + 8) bytes, the body has \(bytes.count)") }
            guard Self.webpChunks.contains(where: { bytes[12..<16].elementsEqual($0) }) else {
                throw .malformed(.webp, "its first chunk is not VP8, VP8L or VP8X")
            }
            self = .webp
        } else if Self.gifSignatures.contains(where: starts) {
            guard bytes.count >= Self.gifMinimum, bytes.last == Self.gifTrailer else { throw .truncated(.gif) }
            self = .gif
        } else if cutInside(Self.pngSignature) {
            throw .truncated(.png)
        } else if cutInside(Self.jpegStart) {
            throw .truncated(.jpeg)
        } else if cutInside(Self.riff) {
            throw .truncated(.webp)
        } else if Self.gifSignatures.contains(where: cutInside) {
            throw .truncated(.gif)
        } else {
            throw .unknown
        }
    }
}

/// Why a body is not an image the relay keeps.
public enum ImageSniffError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No bytes at all.
    case empty
    /// Starts with no signature of PNG, JPEG, WebP or GIF.
    case unknown
    /// Starts as this format but stops before its end (or inside its signature).
    case truncated(ImageFormat)
    /// Starts as this format, but its structure says otherwise.
    case malformed(ImageFormat, String)

    /// For the API's error message.
    public var description: String {
        switch self {
        case .empty: "the body is empty: send the image's bytes"
        case .unknown: "the body is not a PNG, JPEG, WebP or GIF image"
        case .truncated(let f): "the body starts as a \(f.name) image but ends before its end: truncated?"
        case .malformed(let f, let why): "the body starts as a \(f.name) image but \(why)"
        }
    }
}
