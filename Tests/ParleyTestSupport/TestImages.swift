/// The smallest images of each kind the relay keeps, byte for byte.
public enum TestImages {
    /// A 1×1 grey PNG (67 bytes).
    public static let png: [UInt8] = [
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A,              // signature
        0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,              // IHDR, 13 bytes
        0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01,              //   width 1, height 1
        0x08, 0x00, 0x00, 0x00, 0x00,                                //   8-bit greyscale, no interlace
        0x3A, 0x7E, 0x9B, 0x55,                                      //   CRC
        0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54,              // IDAT, 10 bytes
        0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01,  //   zlib of one filtered row
        0x48, 0xAF, 0xA4, 0x71,                                      //   CRC
        0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44,              // IEND
        0xAE, 0x42, 0x60, 0x82,                                      //   CRC
    ]

    /// A 1×1 grey baseline JPEG (159 bytes; libjpeg-turbo decodes it to one pixel of 128).
    public static let jpeg: [UInt8] = [
        0xFF, 0xD8,                                                  // SOI
        0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00,        // APP0, 16 bytes, "JFIF\0"
        0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,        //   version 1.1, aspect 1:1, no thumbnail
        0xFF, 0xDB, 0x00, 0x43, 0x00,                                // DQT, 67 bytes: 8-bit table 0,
    ] + [UInt8](repeating: 1, count: 64) + [                         //   every step 1
        0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x00, 0x01, 0x00, 0x01,        // SOF0, 11 bytes: 8 bits, height 1, width 1,
        0x01, 0x01, 0x11, 0x00,                                      //   one component: id 1, sampling 1×1, table 0
        0xFF, 0xC4, 0x00, 0x14, 0x00, 0x01,                          // DHT, 20 bytes: DC table 0, one code of length 1
    ] + [UInt8](repeating: 0, count: 15) + [0x00,                    //   (no others) for symbol 0: difference 0
        0xFF, 0xC4, 0x00, 0x14, 0x10, 0x01,                          // DHT: AC table 0, one code of length 1
    ] + [UInt8](repeating: 0, count: 15) + [0x00,                    //   for symbol 0: end of block
        0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00,  // SOS, 8 bytes: component 1, tables 0/0, 0–63
        0x3F,                                                        // the scan: codes 0, 0, padded with ones
        0xFF, 0xD9,                                                  // EOI
    ]

    /// A 1×1 lossless WebP (34 bytes).
    public static let webp: [UInt8] = [
        0x52, 0x49, 0x46, 0x46, 0x1A, 0x00, 0x00, 0x00,              // "RIFF", 26 bytes follow
        0x57, 0x45, 0x42, 0x50,                                      // "WEBP"
        0x56, 0x50, 0x38, 0x4C, 0x0D, 0x00, 0x00, 0x00,              // "VP8L", 13 bytes
        0x2F, 0x00, 0x00, 0x00, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xFE, 0x07,
        0x00,                                                        // pad to an even size
    ]

    /// A 1×1 transparent GIF (43 bytes).
    public static let gif: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61,                          // "GIF89a"
        0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00,                    // screen 1×1, a 2-colour table
        0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00,                          // the table
        0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00,              // graphic control: transparent
        0x2C, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,  // image descriptor
        0x02, 0x02, 0x44, 0x01, 0x00,                                // LZW data
        0x3B,                                                        // trailer
    ]

    /// `png` grown to `size` bytes (at least 79) by a private ancillary chunk `prVt` of zeros before its IEND: still a
    /// PNG of 1×1 pixels, for size limits.
    public static func png(size: Int) -> [UInt8] {
        precondition(size >= png.count + 12)
        return Array(png.dropLast(12)) + pngChunk("prVt", [UInt8](repeating: 0, count: size - png.count - 12)) + png.suffix(12)
    }

    /// One PNG chunk: length, type, data, CRC (computed here, by `crc32`, independently of the relay's zlib).
    public static func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
    }

    /// A PNG of `chunks` between the signature and IEND (each from `pngChunk`).
    public static func png(chunks: [[UInt8]]) -> [UInt8] { Array(png.prefix(8)) + chunks.joined() + png.suffix(12) }

    /// The 13 bytes of an IHDR.
    public static func ihdr(width: UInt32, height: UInt32, depth: UInt8 = 8, colourType: UInt8 = 0,
                            interlace: UInt8 = 0) -> [UInt8] {
        bigEndian(width) + bigEndian(height) + [depth, colourType, 0, 0, interlace]
    }

    /// The IDAT of `png` (a zlib stream of one filtered grey row).
    public static let idat: [UInt8] = [0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01]

    /// `v` as four bytes, most significant first.
    public static func bigEndian(_ v: UInt32) -> [UInt8] {
        [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)]
    }

    /// CRC-32/ISO-HDLC bit by bit (reflected 0xEDB88320): the test's own oracle.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return crc ^ 0xFFFF_FFFF
    }
}
