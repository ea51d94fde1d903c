import ParleyRelay
import ParleyTestSupport
import ParleyWire
import Testing

/// Attachments are checked through their structure, not by their first and last bytes (issue 33, finding 6: anything
/// between FF D8 FF and FF D9 passed as a JPEG). Each case is what a forger would try; each must be refused with why.
@Suite("Attachments: image structure walked to the end — chunk CRCs, marker segments, blocks, RIFF chunks, dimensions")
struct ImageStructureTests {
    /// Noise from a seeded generator.
    static func noise(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandomNumberGenerator(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    @Test("a fake JPEG — FF D8 FF, then anything, then FF D9 — is refused, whatever the anything", arguments: 1...50)
    func fakeJPEG(seed: UInt64) {
        let fake = [0xFF, 0xD8, 0xFF] + Self.noise(Int(seed) * 97, seed: seed) + [0xFF, 0xD9]
        let error = #expect(throws: ImageSniffError.self) { try ImageFormat(sniffing: fake) }
        switch error {
        case .malformed(.jpeg, _)?, .truncated(.jpeg)?: break
        default: Issue.record("seed \(seed): \(String(describing: error))")
        }
    }

    @Test("a JPEG's header before noise is refused: APP0 and then bytes that are no segment, a frame header without a scan, a scan without a frame")
    func jpegHeadersAlone() {
        let app0 = Array(TestImages.jpeg[0..<20])
        for (bytes, why) in [(app0 + [0x12] + Self.noise(1000, seed: 1) + [0xFF, 0xD9], "byte 20 is not a marker"),
                             (Array(TestImages.jpeg[0..<146]) + [0xFF, 0xD9], "it ends before a frame header and a scan"),
                             (Array(TestImages.jpeg[0..<89]) + Array(TestImages.jpeg[102...]), "a scan comes before the frame header")] {
            #expect(throws: ImageSniffError.malformed(.jpeg, why)) { try ImageFormat(sniffing: bytes) }
        }
    }

    @Test("JPEG segments that lie: a Huffman table past its segment, a precision of 7, a frame of 0 rows, an unknown marker, a second frame header, junk after EOI")
    func jpegLies() {
        let j = TestImages.jpeg
        var twoCodes = j, precision = j, noRows = j
        twoCodes[107] = 0x02  // the DC table: 2 codes of length 1, 1 symbol
        precision[93] = 7
        noRows[95] = 0
        let cases: [([UInt8], String)] = [
            (twoCodes, "a Huffman table runs past its segment"),
            (precision, "its frame's sample precision is 7 bits"),
            (noRows, "its frame header says 1 × 0 pixels"),
            (Array(j[0..<89]) + [0xFF, 0x02, 0x00, 0x02] + Array(j[89...]), "it has an unknown marker FF 02"),
            (Array(j[0..<102]) + Array(j[89..<102]) + Array(j[102...]), "it has a second frame header"),
            (j + [0x00], "1 bytes follow its end of image"),
        ]
        for (bytes, why) in cases {
            #expect(throws: ImageSniffError.malformed(.jpeg, why)) { try ImageFormat(sniffing: bytes) }
        }
    }

    @Test("a PNG chunk whose CRC is wrong is refused, wherever the flipped bit is (IHDR, IDAT, an ancillary chunk, IEND)")
    func pngCRC() throws {
        let png = TestImages.png(size: 200)
        for offset in [17, 24, 29, 41, 46, 60, 80, 150, 193, 199] {
            var bad = png
            bad[offset] ^= 0x10
            let error = #expect(throws: ImageSniffError.self, "bit flipped at \(offset)") { try ImageFormat(sniffing: bad) }
            guard case .malformed(.png, let why)? = error else { Issue.record("\(offset): \(String(describing: error))"); continue }
            #expect(why.hasSuffix("CRC is wrong") || why.contains("IHDR") || why.contains("chunk"), "\(offset): \(why)")
        }
        #expect(try ImageFormat(sniffing: png) == .png)
    }

    @Test("PNG structure: every rule with its own refusal", arguments: [
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1, depth: 3)), TestImages.pngChunk("IDAT", TestImages.idat)],
         "its IHDR's bit depth 3 and colour type 0 are no PNG's"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 0, height: 1)), TestImages.pngChunk("IDAT", TestImages.idat)],
         "its IHDR says 0 × 1 pixels"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1, interlace: 2)), TestImages.pngChunk("IDAT", TestImages.idat)],
         "its IHDR names an unknown compression, filter or interlace method"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1))], "it has no IDAT (no image data)"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1)), TestImages.pngChunk("IDAT", [0x12, 0x34, 0, 0])],
         "its image data is not a zlib stream"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1)), TestImages.pngChunk("IDAT", TestImages.idat),
          TestImages.pngChunk("tEXt", Array("a\u{0}b".utf8)), TestImages.pngChunk("IDAT", TestImages.idat)], "its IDAT chunks are not consecutive"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1)), TestImages.pngChunk("QUUX", []),
          TestImages.pngChunk("IDAT", TestImages.idat)], "it has an unknown critical chunk QUUX"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1, colourType: 3)), TestImages.pngChunk("IDAT", TestImages.idat)],
         "a palette image has no PLTE before its image data"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1)), TestImages.pngChunk("PLTE", [0, 0, 0]),
          TestImages.pngChunk("IDAT", TestImages.idat)], "a grey image has a PLTE"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1)), TestImages.pngChunk("IDAT", TestImages.idat),
          TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1))], "it has a second IHDR"),
        ([TestImages.pngChunk("IHDR", TestImages.ihdr(width: 1, height: 1)), TestImages.pngChunk("IDAT", TestImages.idat),
          TestImages.pngChunk("IE1D", [])], "a chunk's type is not four letters"),
    ] as [([[UInt8]], String)])
    func pngRules(chunks: [[UInt8]], why: String) {
        #expect(throws: ImageSniffError.malformed(.png, why)) { try ImageFormat(sniffing: TestImages.png(chunks: chunks)) }
    }

    @Test("a PNG palette image with its PLTE, an interlaced one, an APNG's ancillary chunks: all pass, with their sizes")
    func pngThatPass() throws {
        let palette = TestImages.png(chunks: [TestImages.pngChunk("IHDR", TestImages.ihdr(width: 3, height: 2, depth: 8, colourType: 3)),
                                              TestImages.pngChunk("PLTE", [0, 0, 0, 255, 255, 255]),
                                              TestImages.pngChunk("IDAT", TestImages.idat)])
        #expect(try ImageFormat.inspect(palette) == ImageInfo(format: .png, width: 3, height: 2))
        let animated = TestImages.png(chunks: [TestImages.pngChunk("IHDR", TestImages.ihdr(width: 640, height: 480, colourType: 6, interlace: 1)),
                                               TestImages.pngChunk("acTL", [0, 0, 0, 1, 0, 0, 0, 0]),
                                               TestImages.pngChunk("IDAT", TestImages.idat)])
        #expect(try ImageFormat.inspect(animated) == ImageInfo(format: .png, width: 640, height: 480))
        // Bytes after IEND are refused: they would ride along unchecked.
        #expect(throws: ImageSniffError.malformed(.png, "1 bytes follow its IEND")) { try ImageFormat(sniffing: animated + [0]) }
    }

    @Test("dimensions: a well-formed header asking for more pixels than ImageLimits is refused (a decompression bomb for whoever fetches it)",
          arguments: [(20_000, 1), (1, 16_385), (12_000, 9_000), (16_384, 16_384)])
    func tooLarge(width: Int, height: Int) {
        let png = TestImages.png(chunks: [TestImages.pngChunk("IHDR", TestImages.ihdr(width: UInt32(width), height: UInt32(height))),
                                          TestImages.pngChunk("IDAT", TestImages.idat)])
        #expect(throws: ImageSniffError.tooLarge(.png, width: width, height: height)) { try ImageFormat(sniffing: png) }
        var jpeg = TestImages.jpeg
        guard width <= 0xFFFF, height <= 0xFFFF else { return }
        jpeg[94] = UInt8(height >> 8); jpeg[95] = UInt8(height & 0xFF); jpeg[96] = UInt8(width >> 8); jpeg[97] = UInt8(width & 0xFF)
        #expect(throws: ImageSniffError.tooLarge(.jpeg, width: width, height: height)) { try ImageFormat(sniffing: jpeg) }
        #expect(!ImageLimits.admits(width: width, height: height))
    }

    @Test("the largest images kept: 16,384 a side, 100 megapixels")
    func largestKept() throws {
        let png = TestImages.png(chunks: [TestImages.pngChunk("IHDR", TestImages.ihdr(width: 16_384, height: 6_103)),
                                          TestImages.pngChunk("IDAT", TestImages.idat)])
        #expect(try ImageFormat.inspect(png) == ImageInfo(format: .png, width: 16_384, height: 6_103))
        #expect(ImageLimits.admits(width: 10_000, height: 10_000) && !ImageLimits.admits(width: 10_000, height: 10_001))
    }

    @Test("GIF blocks: no image, an image of 0 pixels, an LZW code size of 12, an unknown block, bytes after the trailer", arguments: [
        (Array(TestImages.gif[0..<19]) + [0x3B], "it has no image"),
        (Array(TestImages.gif[0..<32]) + [0x00] + Array(TestImages.gif[33...]), "an image of it is 0 × 1 pixels"),
        (Array(TestImages.gif[0..<37]) + [0x0C] + Array(TestImages.gif[38...]), "an image's LZW code size is 12"),
        (Array(TestImages.gif[0..<19]) + [0x99] + Array(TestImages.gif[19...]), "it has an unknown block 0x99"),
        (TestImages.gif + [0x3B], "1 bytes follow its trailer"),
        (Array(TestImages.gif[0..<6]) + [0, 0, 1, 0] + Array(TestImages.gif[10...]), "its logical screen is 0 × 1 pixels"),
    ] as [([UInt8], String)])
    func gifRules(bytes: [UInt8], why: String) {
        #expect(throws: ImageSniffError.malformed(.gif, why)) { try ImageFormat(sniffing: bytes) }
    }

    /// A lossy WebP whose VP8 frame header says `width` × `height` (the rest of its bitstream is not read).
    static func lossyWebP(width: Int = 2, height: Int = 3, tag: [UInt8] = [0x50, 0x01, 0x00], start: [UInt8] = [0x9D, 0x01, 0x2A]) -> [UInt8] {
        let payload = tag + start + [UInt8(width & 0xFF), UInt8(width >> 8), UInt8(height & 0xFF), UInt8(height >> 8)] + [UInt8](repeating: 0, count: 12)
        return riff(chunk("VP8 ", payload))
    }

    static func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        Array(type.utf8) + le32(payload.count) + payload + (payload.count % 2 == 1 ? [0] : [])
    }

    static func riff(_ chunks: [UInt8]) -> [UInt8] { Array("RIFF".utf8) + le32(chunks.count + 4) + Array("WEBP".utf8) + chunks }

    static func le32(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24 & 0xFF)] }

    @Test("WebP: a lossy frame header, an extended canvas with its image, an animation — read for their sizes")
    func webpThatPass() throws {
        #expect(try ImageFormat.inspect(Self.lossyWebP()) == ImageInfo(format: .webp, width: 2, height: 3))
        #expect(try ImageFormat.inspect(TestImages.webp) == ImageInfo(format: .webp, width: 1, height: 1))
        let vp8l = Array(TestImages.webp[20..<33])
        let extended = Self.riff(Self.chunk("VP8X", [0x10, 0, 0, 0, 0x3F, 0x01, 0, 0xEF, 0, 0]) + Self.chunk("ALPH", [0]) + Self.chunk("VP8L", vp8l))
        #expect(try ImageFormat.inspect(extended) == ImageInfo(format: .webp, width: 320, height: 240))
        let frame = [UInt8](repeating: 0, count: 16) + Self.chunk("VP8L", vp8l)
        let animated = Self.riff(Self.chunk("VP8X", [0x02, 0, 0, 0, 9, 0, 0, 9, 0, 0]) + Self.chunk("ANIM", [0, 0, 0, 0, 0, 0])
                                 + Self.chunk("ANMF", frame) + Self.chunk("ANMF", frame))
        #expect(try ImageFormat.inspect(animated) == ImageInfo(format: .webp, width: 10, height: 10))
    }

    @Test("WebP structure: each lie with its refusal", arguments: [
        (ImageStructureTests.lossyWebP(tag: [0x51, 0x01, 0x00]), "its VP8 frame is not a key frame"),
        (ImageStructureTests.lossyWebP(start: [0x9D, 0x01, 0x2B]), "its VP8 frame lacks the start code 9D 01 2A"),
        (ImageStructureTests.lossyWebP(width: 0), "its VP8 frame is 0 × 3 pixels"),
        (ImageStructureTests.lossyWebP(tag: [0x50, 0xFF, 0x00]), "its VP8 first partition runs past the chunk"),
        (ImageStructureTests.riff(ImageStructureTests.chunk("VP8L", [0x2F, 0, 0, 0, 0x30])), "its VP8L version is 1, not 0"),
        (ImageStructureTests.riff(ImageStructureTests.chunk("VP8L", [0x2E, 0, 0, 0, 0])), "its VP8L chunk lacks the 0x2F signature"),
        (ImageStructureTests.riff(ImageStructureTests.chunk("VP8X", [UInt8](repeating: 0, count: 10))), "its VP8X is followed by no image chunk"),
        (ImageStructureTests.riff(ImageStructureTests.chunk("VP8L", Array(TestImages.webp[20..<33])) + ImageStructureTests.chunk("EXIF", [1, 2])),
         "a simple WebP holds one image chunk, this one 2 chunks"),
        (ImageStructureTests.riff(Array("VP8L".utf8) + ImageStructureTests.le32(40) + Array(TestImages.webp[20..<34])),
         "chunk VP8L runs past its container's size"),
    ] as [([UInt8], String)])
    func webpRules(bytes: [UInt8], why: String) {
        #expect(throws: ImageSniffError.malformed(.webp, why)) { try ImageFormat(sniffing: bytes) }
    }
}
