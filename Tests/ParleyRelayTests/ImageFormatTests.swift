import ParleyRelay
import ParleyTestSupport
import ParleyWire
import Testing

/// `ImageFormat(sniffing:)`: the type of an attachment comes from its bytes. Each kind's signature, its end marker
/// or size, and the same bytes cut short at every place that matters.
@Suite("Attachments: image types by content (PNG, JPEG, WebP, GIF), truncated and foreign bytes refused")
struct ImageFormatTests {
    static let soiThenEOI: ArraySlice<UInt8> = [0xFF, 0xD8, 0xFF, 0xD9]
    /// A GIF87a of 1×1 pixels without a colour table: screen, one image, its LZW data, trailer.
    static let gif87a: [UInt8] = Array("GIF87a".utf8) + [0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]
        + [0x2C, 0, 0, 0, 0, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3B]

    @Test("each kind's smallest file is recognised", arguments: [
        (TestImages.png, ImageFormat.png), (TestImages.jpeg, .jpeg), (TestImages.webp, .webp), (TestImages.gif, .gif),
        (ImageFormatTests.gif87a, .gif),                                                 // the 1987 signature, no table
        (TestImages.png(size: 500), .png),                                               // an ancillary chunk passes unread
        (TestImages.jpeg + TestImages.jpeg, .jpeg),                                      // a second image after EOI (Ultra HDR)
    ] as [([UInt8], ImageFormat)])
    func recognised(bytes: [UInt8], format: ImageFormat) throws {
        #expect(try ImageFormat(sniffing: bytes) == format)
    }

    @Test("cut short: inside the signature, before the header's end, or without the end marker", arguments: [
        // PNG
        ([0x89], ImageFormat.png),                                                       // one byte of the signature
        (Array(TestImages.png.prefix(7)), .png),                                         // 7 of its 8 bytes
        (Array(TestImages.png.prefix(8)), .png),                                         // the signature alone
        (Array(TestImages.png.prefix(32)), .png),                                        // IHDR without its CRC's last byte
        (Array(TestImages.png.prefix(33)), .png),                                        // IHDR complete, nothing after
        (Array(TestImages.png.dropLast()), .png),                                        // IEND's CRC cut
        (Array(TestImages.png.dropLast(12)), .png),                                      // no IEND
        // JPEG
        ([0xFF, 0xD8], .jpeg),                                                           // SOI alone
        ([0xFF, 0xD8, 0xFF], .jpeg),                                                     // SOI and a marker's first byte
        (Array(TestImages.jpeg.dropLast()), .jpeg),                                      // EOI cut in half
        (Array(TestImages.jpeg.dropLast(2)), .jpeg),                                     // no EOI
        // WebP
        (Array("RI".utf8), .webp),                                                       // inside "RIFF"
        (Array(TestImages.webp.prefix(11)), .webp),                                      // inside "WEBP"
        (Array(TestImages.webp.prefix(19)), .webp),                                      // the first chunk's header cut
        (Array(TestImages.webp.dropLast()), .webp),                                      // RIFF size 26, 25 bytes follow
        // GIF
        (Array("GIF8".utf8), .gif),                                                      // inside the signature
        (Array("GIF89a".utf8), .gif),                                                    // the signature alone
        (Array(TestImages.gif.dropLast()), .gif),                                        // no trailer
        (Array(TestImages.gif.prefix(13)), .gif),                                        // header only
    ] as [([UInt8], ImageFormat)])
    func truncated(bytes: [UInt8], format: ImageFormat) {
        #expect(throws: ImageSniffError.truncated(format)) { try ImageFormat(sniffing: bytes) }
    }

    @Test("a signature whose structure says otherwise is malformed", arguments: [
        // SOI then EOI: no frame, no scan
        (ImageFormatTests.soiThenEOI, ImageFormat.jpeg),
        // PNG whose first chunk is IDAT, not IHDR
        (TestImages.png.prefix(8) + TestImages.png[33...], .png),
        // PNG whose IHDR claims 14 bytes
        (TestImages.png.prefix(11) + [0x0E] + TestImages.png[12...], .png),
        // WebP with a byte after what its RIFF size covers
        (TestImages.webp + [0x00], .webp),
        // WebP whose first chunk is neither VP8, VP8L nor VP8X
        (TestImages.webp.prefix(12) + Array("ALPH".utf8) + TestImages.webp[16...], .webp),
    ] as [(ArraySlice<UInt8>, ImageFormat)])
    func malformed(bytes: ArraySlice<UInt8>, format: ImageFormat) {
        let error = #expect(throws: ImageSniffError.self) { try ImageFormat(sniffing: Array(bytes)) }
        guard case .malformed(let f, let why)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(f == format && !why.isEmpty)
    }

    @Test("no signature of the four: empty, text, SVG, other RIFF forms, BMP, an image's bytes after a prefix", arguments: [
        Array("hello".utf8),
        Array(#"<svg xmlns="http://www.w3.org/2000/svg"/>"#.utf8),                       // scripts: never an attachment
        Array("<html><script>alert(1)</script>".utf8),
        [0x52, 0x49, 0x46, 0x46, 0x24, 0x00, 0x00, 0x00] + Array("WAVEfmt ".utf8),       // RIFF, but a WAV file
        [0x42, 0x4D, 0x3A, 0x00, 0x00, 0x00],                                            // "BM": a bitmap
        [0x00] + TestImages.png,                                                         // a PNG one byte in
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x00] + TestImages.png[8...],         // signature's last byte wrong
        [0xFF, 0xD8, 0x00, 0xFF, 0xD9],                                                  // SOI not followed by a marker
        Array("GIF90a".utf8) + TestImages.gif[6...],                                     // no such GIF version
    ] as [[UInt8]])
    func unknown(bytes: [UInt8]) {
        #expect(throws: ImageSniffError.unknown) { try ImageFormat(sniffing: bytes) }
    }

    @Test("every prefix of each image is truncated (or, below the signature's length, a cut signature), never trapping")
    func everyPrefix() {
        for (image, format) in [(TestImages.png, ImageFormat.png), (TestImages.jpeg, .jpeg), (TestImages.webp, .webp), (TestImages.gif, .gif)] {
            for n in 1..<image.count {
                #expect(throws: ImageSniffError.truncated(format), "\(format) cut to \(n) bytes") { try ImageFormat(sniffing: Array(image.prefix(n))) }
            }
        }
    }

    @Test("seeded random mutations of the images and random bytes: an answer for each, never a trap; a success names the signature")
    func mutations() {
        var random = SeededRandomNumberGenerator(seed: 7)
        let images = [TestImages.png, TestImages.jpeg, TestImages.webp, TestImages.gif]
        for _ in 0..<20_000 {
            var bytes = images.randomElement(using: &random)!
            switch Int.random(in: 0..<4, using: &random) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes = Array(bytes.prefix(Int.random(in: 0...bytes.count, using: &random)))
            case 2: bytes += (0..<Int.random(in: 1...8, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            default: bytes = (0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            if let format = try? ImageFormat(sniffing: bytes) {
                let signature: [UInt8] = switch format {
                case .png: [0x89, 0x50, 0x4E, 0x47]
                case .jpeg: [0xFF, 0xD8, 0xFF]
                case .webp: Array("RIFF".utf8)
                case .gif: Array("GIF8".utf8)
                }
                #expect(bytes.starts(with: signature))
            }
        }
    }

    @Test("nothing at all")
    func empty() {
        #expect(throws: ImageSniffError.empty) { try ImageFormat(sniffing: []) }
    }

    @Test("Content-Type values: case and parameters do not matter; anything but the four does", arguments: [
        ("image/png", ImageFormat.png as ImageFormat?), ("IMAGE/PNG", .png), ("image/png; charset=binary", .png),
        (" image/jpeg ", .jpeg), ("image/webp", .webp), ("image/gif", .gif),
        ("image/jpg", nil), ("image/svg+xml", nil), ("text/html", nil), ("png", nil), ("", nil), ("image/", nil),
        ("application/octet-stream", nil), ("image/png2", nil), ("imagepng", nil),
    ])
    func mediaTypes(text: String, format: ImageFormat?) {
        #expect(ImageFormat(mediaType: text) == format)
    }
}
