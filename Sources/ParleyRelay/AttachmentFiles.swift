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

    /// Longest record file read back (an identity is at most 128 bytes; the rest is fixed).
    static let recordLimit = 16 * 1024
    /// The folder's name inside the state directory.
    public static let folderName = "attachments"

    /// The store under `stateDirectory` (nothing is made until the first save).
    public init(stateDirectory: String, log: any LogSink, calls: SystemCalls = .kernel) {
        directory = (stateDirectory.hasSuffix("/") ? stateDirectory : stateDirectory + "/") + Self.folderName + "/"
        blobs = directory + "blobs/"
        ids = directory + "ids/"
        self.log = log
        self.calls = calls
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
            try prepare()
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
                    if try PrivateFile.publish(Array(json), at: ids + id.text, calls: calls) { return (id, record) }
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
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard status.isRegularFile, status.size == text.count, let record = try? decoder.decode(AttachmentRecord.self, from: Data(text)),
              record.isWellFormed else {
            log.write(.error, "attachments: \(path) is not an attachment record (\(status.size) bytes): move it away")
            throw .damaged
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
