import ParleyAuth
import ParleyRelay
import Synchronization

/// The smallest images of each kind the relay keeps, byte for byte.
enum TestImages {
    /// A 1×1 grey PNG (67 bytes).
    static let png: [UInt8] = [
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

    /// A JFIF header and the end of image (20 bytes; no scan: sniffing decodes nothing).
    static let jpeg: [UInt8] = [
        0xFF, 0xD8,                                                  // SOI
        0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00,        // APP0, 16 bytes, "JFIF\0"
        0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,        //   version 1.1, aspect 1:1, no thumbnail
        0xFF, 0xD9,                                                  // EOI
    ]

    /// A 1×1 lossless WebP (34 bytes).
    static let webp: [UInt8] = [
        0x52, 0x49, 0x46, 0x46, 0x1A, 0x00, 0x00, 0x00,              // "RIFF", 26 bytes follow
        0x57, 0x45, 0x42, 0x50,                                      // "WEBP"
        0x56, 0x50, 0x38, 0x4C, 0x0D, 0x00, 0x00, 0x00,              // "VP8L", 13 bytes
        0x2F, 0x00, 0x00, 0x00, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xFE, 0x07,
        0x00,                                                        // pad to an even size
    ]

    /// A 1×1 transparent GIF (43 bytes).
    static let gif: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61,                          // "GIF89a"
        0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00,                    // screen 1×1, a 2-colour table
        0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00,                          // the table
        0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00,              // graphic control: transparent
        0x2C, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,  // image descriptor
        0x02, 0x02, 0x44, 0x01, 0x00,                                // LZW data
        0x3B,                                                        // trailer
    ]

    /// `png` grown to `size` bytes by zeros before its IEND chunk (for size limits: sniffing, which decodes nothing, passes).
    static func png(size: Int) -> [UInt8] {
        Array(png.dropLast(12)) + [UInt8](repeating: 0, count: max(0, size - png.count)) + png.suffix(12)
    }
}

/// Attachments in memory, counting what it keeps: router tests need no disk.
final class MemoryAttachmentStore: AttachmentStore {
    struct Contents {
        var blobs: [String: [UInt8]] = [:]
        var records: [AttachmentID: AttachmentRecord] = [:]
    }
    let contents = Mutex(Contents())
    /// What every save and load throws instead, when set.
    let failure = Mutex<AttachmentStoreError?>(nil)

    func save(_ bytes: [UInt8], format: ImageFormat, uploader: String,
              unixMilliseconds: Int64) throws(AttachmentStoreError) -> (id: AttachmentID, record: AttachmentRecord) {
        if let error = failure.withLock({ $0 }) { throw error }
        let record = AttachmentRecord(bytes: bytes, format: format, uploader: uploader, createdAt: unixMilliseconds)
        let id = AttachmentID.random()
        contents.withLock {
            $0.blobs[record.sha256] = bytes
            $0.records[id] = record
        }
        return (id, record)
    }

    func load(_ id: AttachmentID) throws(AttachmentStoreError) -> (record: AttachmentRecord, bytes: [UInt8])? {
        if let error = failure.withLock({ $0 }) { throw error }
        return contents.withLock { c in c.records[id].flatMap { r in c.blobs[r.sha256].map { (r, $0) } } }
    }

    var blobCount: Int { contents.withLock { $0.blobs.count } }
    var recordCount: Int { contents.withLock { $0.records.count } }
}
