import ParleyRelay
import Synchronization

/// Attachments in memory, counting what it keeps: router tests need no disk.
final class MemoryAttachmentStore: AttachmentStore {
    struct Contents {
        var blobs: [String: [UInt8]] = [:]
        var records: [AttachmentID: AttachmentRecord] = [:]
    }
    let contents = Mutex(Contents())
    /// What every save and load throws instead, when set.
    let failure = Mutex<AttachmentStoreError?>(nil)
    /// What every upload's admission answers instead, when set; the uploads admitted, as (uploader, declared bytes).
    let refusal = Mutex<AttachmentQuotaRefusal?>(nil)
    let admitted = Mutex<[(String, Int?)]>([])

    func admitUpload(uploader: String, bytes: Int?, unixMilliseconds: Int64) -> AttachmentQuotaRefusal? {
        if let refusal = refusal.withLock({ $0 }) { return refusal }
        admitted.withLock { $0.append((uploader, bytes)) }
        return nil
    }

    func expiry(ofCreatedAt createdAt: Int64) -> Int64? { nil }

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
