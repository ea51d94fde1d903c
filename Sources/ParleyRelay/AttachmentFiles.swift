import Foundation
import ParleyNet
import ParleyRelayCore
import Synchronization

/// Image attachments kept in the relay's state directory:
///
/// ```
/// state_dir/attachments/            0700 (made with blobs/ and ids/ at the first upload; refused when group or
///                                   others may write to any of the three)
///   blobs/<sha256 hex>              0600: the bytes, one file per distinct content
///   ids/<id>                        0600: the upload's record (`AttachmentRecord` as JSON), one file per upload
///   blobs/.<hex>.XXXX, ids/.<id>.XXXX   being written: 0600, O_EXCL, fsync'd, linked to their name, then removed
/// ```
///
/// Every file appears under its name in one step, complete (`PrivateFile.publish`); a save that fails removes its
/// temporary files and the blob it made, so nothing half-written is ever found under a name. Saves run one at a time
/// (`saving`), so a failed save may remove its blob without racing a concurrent save of the same bytes.
///
/// A blob that is there already is written and flushed all the same, and its new copy dropped (`link` says EEXIST):
/// an upload of known bytes takes as long as one of new bytes, so timing does not tell an uploader whether someone
/// else uploaded that image. Ids are random (`AttachmentID`), never the hash, for the same reason.
///
/// Bounded (`AttachmentQuota`, kept in an `AttachmentLedger` rebuilt from the records at start): each identity's kept
/// bytes and files and its upload rate; the free space a save leaves (`attachment_reserve_bytes`, for `messages.db` and
/// recordings: below it, `.reserve`); and time — an attachment older than `attachment_expiry_days` is removed at the next
/// save, when it is fetched (then it is gone: nil), or at the next start, its blob with its last record.
///
/// Blocking file I/O through `SystemCalls` (tests inject failures): call it on an API thread. The details of a failure
/// (paths, errno) go to the log; callers get an `AttachmentStoreError` that names no path.
public final class AttachmentFiles: AttachmentStore {
    /// `<state_dir>/attachments/`.
    public let directory: String
    /// `directory` + `blobs/`.
    public let blobs: String
    /// `directory` + `ids/`.
    public let ids: String
    private let calls: SystemCalls
    private let log: any LogSink
    private let saving = Mutex(())
    /// What is kept, by whom, since when; each identity's allowance. Its own lock: admission reads it on
    /// libmicrohttpd's thread while a save holds `saving` over the disk.
    private let ledger: Mutex<AttachmentLedger>
    /// Unix milliseconds now (tests move it).
    private let clock: @Sendable () -> Int64

    /// Longest record file read back (an identity is at most 128 bytes; the rest is fixed).
    static let recordLimit = 16 * 1024
    /// The folder's name inside the state directory.
    public static let folderName = "attachments"

    /// The store under `stateDirectory` (nothing is made until the first save), within `quota` for uploads of at most
    /// `largestUpload` bytes: the records there are read now, and those expired removed.
    public init(stateDirectory: String, log: any LogSink, calls: SystemCalls = .kernel, quota: AttachmentQuota = AttachmentQuota(),
                largestUpload: Int = RelayConfig.defaultAttachmentMaxBytes,
                clock: @escaping @Sendable () -> Int64 = { Int64(Clock.unixMilliseconds()) }) {
        directory = (stateDirectory.hasSuffix("/") ? stateDirectory : stateDirectory + "/") + Self.folderName + "/"
        blobs = directory + "blobs/"
        ids = directory + "ids/"
        self.log = log
        self.calls = calls
        self.clock = clock
        ledger = Mutex(AttachmentLedger(quota: quota, largestUpload: largestUpload))
        readRecords()
        saving.withLock { _ in removeExpired(now: clock()) }
    }

    /// New limits (a reload): uploads admitted from now on are held to them.
    public func replaceQuota(_ quota: AttachmentQuota, largestUpload: Int) {
        ledger.withLock { $0.replaceQuota(quota, largestUpload: largestUpload) }
    }

    /// The ledger as it stands (tests, and the log line at start).
    public var kept: AttachmentLedger { ledger.withLock { $0 } }

    public func admitUpload(uploader: String, bytes: Int?, unixMilliseconds: Int64) -> AttachmentQuotaRefusal? {
        ledger.withLock { $0.admit(uploader: uploader, bytes: bytes, now: unixMilliseconds) }
    }

    public func expiry(ofCreatedAt createdAt: Int64) -> Int64? {
        ledger.withLock { $0.quota.expiryMilliseconds.map { createdAt &+ $0 } }
    }

    /// Writes the blob (unless the same bytes are kept already) and a new record; see the type's comment.
    public func save(_ bytes: [UInt8], format: ImageFormat, uploader: String,
                     unixMilliseconds: Int64) throws(AttachmentStoreError) -> (id: AttachmentID, record: AttachmentRecord) {
        let record = AttachmentRecord(bytes: bytes, format: format, uploader: uploader, createdAt: unixMilliseconds)
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let json = try? encoder.encode(record) else { throw .failed }
        return try saving.withLock { _ throws(AttachmentStoreError) -> (id: AttachmentID, record: AttachmentRecord) in
            removeExpired(now: unixMilliseconds)
            if let refusal = ledger.withLock({ $0.quotaRefusal(uploader: uploader, adding: bytes.count) }) { throw .quota(refusal) }
            try prepare()
            // Whether or not these bytes are kept already (that must not show), they must leave the reserve free.
            let reserve = ledger.withLock { $0.quota.reserveBytes }
            let free = directory.withCString { calls.freeBytes($0) }
            if free >= 0, free - Int64(bytes.count) < reserve {
                log.write(.warning, "attachments: an upload of \(bytes.count) bytes refused: \(free) bytes free, \(reserve) kept in reserve (attachment_reserve_bytes)")
                throw .reserve(freeBytes: free, reserveBytes: reserve)
            }
            let blob = blobs + record.sha256
            let made: Bool
            do throws(SystemError) {
                made = try PrivateFile.publish(bytes, at: blob, calls: calls)
            } catch {
                throw failure(error, "cannot store \(blob)")
            }
            var lastError: SystemError?
            do throws(SystemError) {
                // A collision of 128 random bits will not happen; a second try costs nothing to write.
                for _ in 0..<2 {
                    let id = AttachmentID.random()
                    if try PrivateFile.publish(Array(json), at: ids + id.text, calls: calls) {
                        ledger.withLock { $0.saved(Self.entry(id, record), now: unixMilliseconds) }
                        return (id, record)
                    }
                }
            } catch {
                lastError = error
            }
            if made {
                let rc = blob.withCString { calls.unlink($0) }
                if rc < 0 { log.write(.error, "attachments: cannot remove \(blob) after a failed save: \(SystemError("unlink", -rc))") }
            }
            guard let lastError else {
                log.write(.error, "attachments: two random ids in a row were taken in \(ids): is the random source broken?")
                throw .failed
            }
            throw failure(lastError, "cannot write a record in \(ids)")
        }
    }

    /// Reads the record (no symbolic link followed) and the blob it names, whose size must be the record's.
    public func load(_ id: AttachmentID) throws(AttachmentStoreError) -> (record: AttachmentRecord, bytes: [UInt8])? {
        let path = ids + id.text
        let found: (status: PrivateFile.Status, bytes: [UInt8])?
        do throws(SystemError) {
            found = try PrivateFile.read(path, limit: Self.recordLimit, calls: calls)
        } catch {
            throw failure(error, "cannot read \(path)")
        }
        guard let (status, text) = found else { return nil }
        guard status.isRegularFile, status.size == text.count, let record = Self.record(text) else {
            log.write(.error, "attachments: \(path) is not an attachment record (\(status.size) bytes): move it away")
            throw .damaged
        }
        let now = clock()
        if ledger.withLock({ $0.isExpired(createdAt: record.createdAt, now: now) }) {
            saving.withLock { _ in removeExpired(now: now) }
            return nil
        }
        let blob = blobs + record.sha256
        let stored: (status: PrivateFile.Status, bytes: [UInt8])?
        do throws(SystemError) {
            stored = try PrivateFile.read(blob, limit: record.size, calls: calls)
        } catch {
            throw failure(error, "cannot read \(blob)")
        }
        guard let (blobStatus, bytes) = stored, blobStatus.isRegularFile, blobStatus.size == record.size, bytes.count == record.size else {
            log.write(.error, "attachments: \(path) names \(blob) of \(record.size) bytes, which is \(stored == nil ? "missing" : "not that")")
            throw .damaged
        }
        return (record, bytes)
    }

    /// A record's JSON, when it is one and its fields can be trusted.
    static func record(_ text: [UInt8]) -> AttachmentRecord? {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard let record = try? decoder.decode(AttachmentRecord.self, from: Data(text)), record.isWellFormed else { return nil }
        return record
    }

    static func entry(_ id: AttachmentID, _ record: AttachmentRecord) -> AttachmentLedger.Entry {
        AttachmentLedger.Entry(id: id, uploader: record.uploader, size: record.size, sha256: record.sha256, createdAt: record.createdAt)
    }

    /// Reads every record in `ids/` into the ledger (at start); a file that is no record is logged and skipped.
    private func readRecords() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: ids) else { return }
        var entries: [AttachmentLedger.Entry] = []
        for name in names {
            guard let id = AttachmentID(name) else { continue }  // temporary files (.<id>.XXXX) and strays
            guard let (status, text) = try? PrivateFile.read(ids + name, limit: Self.recordLimit, calls: calls),
                  status.isRegularFile, status.size == text.count, let record = Self.record(text) else {
                log.write(.error, "attachments: \(ids + name) is not an attachment record: not counted (move it away)")
                continue
            }
            entries.append(Self.entry(id, record))
        }
        ledger.withLock { l in for e in entries { l.add(e) } }
        if !entries.isEmpty { log.write(.info, "attachments: \(entries.count) kept in \(directory)") }
    }

    /// Removes the records of attachments expired by `now`, and each blob no record names any more (under `saving`).
    private func removeExpired(now: Int64) {
        let due = ledger.withLock { $0.expired(now: now) }
        for entry in due {
            let record = ids + entry.id.text
            let rc = record.withCString { calls.unlink($0) }
            if rc < 0 && rc != -ENOENT {
                log.write(.error, "attachments: cannot remove expired \(record): \(SystemError("unlink", -rc))")
                _ = ledger.withLock { $0.remove(entry.id) }  // no longer served; the next start tries the file again
                continue
            }
            guard let (_, blobUnused) = ledger.withLock({ $0.remove(entry.id) }), blobUnused else { continue }
            let blob = blobs + entry.sha256
            let gone = blob.withCString { calls.unlink($0) }
            if gone < 0 && gone != -ENOENT { log.write(.error, "attachments: cannot remove \(blob): \(SystemError("unlink", -gone))") }
        }
        if !due.isEmpty { log.write(.info, "attachments: \(due.count) expired and removed") }
    }

    /// Makes the three folders (0700) if they are missing; refuses folders others may write to.
    private func prepare() throws(AttachmentStoreError) {
        for folder in [directory, blobs, ids] {
            let status: PrivateFile.Status
            do throws(SystemError) {
                status = try PrivateFile.makeDirectory(folder, calls: calls)
            } catch {
                throw failure(error, "cannot make \(folder)")
            }
            guard status.isDirectory, status.permissions & 0o022 == 0 else {
                log.write(.error, "attachments: \(folder) is not a directory only its owner may write to (mode \(String(status.permissions, radix: 8))): chmod 700 \(folder)")
                throw .failed
            }
        }
    }

    /// Logs `error` with `what`, and says whether the disk is full.
    private func failure(_ error: SystemError, _ what: String) -> AttachmentStoreError {
        log.write(.error, "attachments: \(what): \(error)")
        return error.code == ENOSPC || error.code == EDQUOT ? .full : .failed
    }
}
