/// The image types the relay keeps as attachments, recognised by their bytes, never by what a client declares, and
/// checked through: `ImageFormat.inspect` is pure, decodes no pixels, walks each format's structure to its end
/// (`PNGStructure`, `JPEGStructure`, `GIFStructure`, `WebPStructure`), and says why it refuses.
///
/// ```
/// PNG   0  89 50 4E 47 0D 0A 1A 0A        signature (8 bytes), then chunks: length, type, data, CRC-32 (zlib's)
///       8  00 00 00 0D  49 48 44 52       the first chunk: IHDR, 13 bytes: width, height, depth, colour type, …
///     -12  00 00 00 00  49 45 4E 44  AE 42 60 82     the last chunk: IEND
/// JPEG  0  FF D8                          start of image, then marker segments (FF xx, length, payload): a frame
///                                         header (SOFn: precision, height, width, components), tables, scans
///                                         (SOS, then entropy-coded bytes up to the next marker)
///      -2  FF D9                          end of image (another JPEG may follow: an Ultra HDR gain map)
/// WebP  0  52 49 46 46  s0 s1 s2 s3       "RIFF", size little-endian = the body's length - 8
///       8  57 45 42 50                    "WEBP", then chunks tiling the rest: "VP8 " | "VP8L" | "VP8X" first
/// GIF   0  47 49 46 38 37|39 61           "GIF87a" or "GIF89a", the 7-byte screen descriptor, a colour table,
///                                         blocks (extensions, images with their LZW sub-blocks)
///      -1  3B                             trailer
/// ```
///
/// A body that is a prefix of a signature, or that matches one and stops before its structure ends, is `truncated`;
/// one whose structure contradicts its signature (a PNG chunk whose CRC is wrong, a JPEG segment where a marker should
/// be, a RIFF size smaller than the body) is `malformed`; one wider or higher than `ImageLimits` allows, `tooLarge`.
/// What it does not promise: that the compressed pixels decode (a structurally whole file may hold noise), nor that an
/// image carries nothing else (comments, metadata, ancillary chunks pass as they are).
public enum ImageFormat: String, Sendable, CaseIterable {
    /// Portable Network Graphics.
    case png
    /// JPEG (baseline, progressive or lossless; JFIF, Exif).
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
    static let jpegStart: [UInt8] = [0xFF, 0xD8, 0xFF]
    static let riff: [UInt8] = Array("RIFF".utf8)
    static let webpForm: [UInt8] = Array("WEBP".utf8)
    static let gifSignatures: [[UInt8]] = [Array("GIF87a".utf8), Array("GIF89a".utf8)]

    /// The format of `bytes`, checked by content; throws why it is none of them.
    public init(sniffing bytes: [UInt8]) throws(ImageSniffError) {
        self = try Self.inspect(bytes).format
    }

    /// What `bytes` are, their structure walked to the end, within `ImageLimits`; throws why they are not an image the
    /// relay keeps.
    public static func inspect(_ bytes: [UInt8]) throws(ImageSniffError) -> ImageInfo {
        guard !bytes.isEmpty else { throw .empty }
        func starts(_ signature: [UInt8]) -> Bool { bytes.count >= signature.count && bytes[..<signature.count].elementsEqual(signature) }
        /// `bytes` is shorter than `signature` and is its beginning: a file cut inside its signature.
        func cutInside(_ signature: [UInt8]) -> Bool { bytes.count < signature.count && signature.starts(with: bytes) }

        let format: ImageFormat
        let size: (width: Int, height: Int)
        if starts(pngSignature) {
            (format, size) = (.png, try PNGStructure.dimensions(bytes))
        } else if starts(jpegStart) {
            (format, size) = (.jpeg, try JPEGStructure.dimensions(bytes))
        } else if starts(riff) {
            guard bytes.count >= 12 else { throw .truncated(.webp) }  // cut before its form type
            guard bytes[8..<12].elementsEqual(webpForm) else { throw .unknown }  // WAV, AVI, ...
            (format, size) = (.webp, try WebPStructure.dimensions(bytes))
        } else if gifSignatures.contains(where: starts) {
            (format, size) = (.gif, try GIFStructure.dimensions(bytes))
        } else if cutInside(pngSignature) {
            throw .truncated(.png)
        } else if cutInside(jpegStart) {
            throw .truncated(.jpeg)
        } else if cutInside(riff) {
            throw .truncated(.webp)
        } else if gifSignatures.contains(where: cutInside) {
            throw .truncated(.gif)
        } else {
            throw .unknown
        }
        guard ImageLimits.admits(width: size.width, height: size.height) else { throw .tooLarge(format, width: size.width, height: size.height) }
        return ImageInfo(format: format, width: size.width, height: size.height)
    }
}

/// An image as the relay checked it: its format and size in pixels.
public struct ImageInfo: Equatable, Sendable {
    /// Which of the four.
    public var format: ImageFormat
    /// Pixels across (a GIF's or an extended WebP's canvas; a JPEG's or PNG's image).
    public var width: Int
    /// Pixels down.
    public var height: Int

    /// An image's facts.
    public init(format: ImageFormat, width: Int, height: Int) {
        self.format = format
        self.width = width
        self.height = height
    }
}

/// The largest image the relay keeps, in pixels: whoever fetches one decodes it, so a few kilobytes of well-formed
/// header must not ask a page for gigabytes (a decompression bomb).
public enum ImageLimits {
    /// Pixels on either side at most (libwebp's limit, and more than a browser's largest canvas side needs).
    public static let maxSide = 16_384
    /// Pixels in all at most: 100 megapixels (a 12,000 × 8,000 photo).
    public static let maxPixels = 100_000_000

    /// Whether `width` × `height` is within both bounds (each side at least 1).
    public static func admits(width: Int, height: Int) -> Bool {
        (1...maxSide).contains(width) && (1...maxSide).contains(height) && width * height <= maxPixels
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
    /// A well-formed image of more pixels than `ImageLimits` allows.
    case tooLarge(ImageFormat, width: Int, height: Int)

    /// For the API's error message.
    public var description: String {
        switch self {
        case .empty: "the body is empty: send the image's bytes"
        case .unknown: "the body is not a PNG, JPEG, WebP or GIF image"
        case .truncated(let f): "the body starts as a \(f.name) image but ends before its end: truncated?"
        case .malformed(let f, let why): "the body starts as a \(f.name) image but \(why)"
        case .tooLarge(let f, let width, let height):
            "the body is a \(f.name) image of \(width) × \(height) pixels: the relay keeps images of at most \(ImageLimits.maxSide) pixels a side and \(ImageLimits.maxPixels / 1_000_000) megapixels"
        }
    }
}
