import Foundation
import Glibc
import ParleyAuth
import ParleyNet
import ParleyRelay
import ParleyRelayCore
import ParleyTestSupport
import Testing

/// `AttachmentFiles` on a real temporary directory: the layout and modes, one blob for identical bytes, and what a
/// full disk, an unwritable folder or a damaged file leaves behind (nothing half-written, no stray blob).
@Suite("Attachments: files in state_dir — content-addressed blobs, random ids, nothing half-written after a failure")
struct AttachmentFilesTests {
    let scratch = ScratchDirectory()
    let log = MemoryLogSink(threshold: .debug)

    /// The store, its clock at Unix millisecond 100 (the saves below are stamped 1, 2, 3…: none has expired).
    func store(_ calls: SystemCalls = .kernel) -> AttachmentFiles {
        AttachmentFiles(stateDirectory: scratch.path, log: log, calls: calls, clock: { 100 })
    }
    func names(_ folder: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() }

    /// The kernel's calls, with `openFile` failing with `errno` for temporary files whose path contains `marker`.
    static func failingOpen(_ marker: String, _ errno: Int32) -> SystemCalls {
        var calls = SystemCalls.kernel
        let open = calls.openFile
        calls.openFile = { path, flags, mode in
            String(cString: path).contains(marker) && flags & O_CREAT != 0 ? -errno : open(path, flags, mode)
        }
        return calls
    }

    @Test("a save makes attachments/blobs/<sha256> and attachments/ids/<id> (0600, folders 0700); load gives both back")
    func layout() throws {
        defer { scratch.remove() }
        let files = store()
        let (id, record) = try files.save(TestImages.png, format: .png, uploader: "ann", unixMilliseconds: 1_800_000_000_123)
        let hash = Crypto.hex(Crypto.sha256(TestImages.png))
        #expect(record == AttachmentRecord(bytes: TestImages.png, format: .png, uploader: "ann", createdAt: 1_800_000_000_123))
        #expect(record.sha256 == hash && record.size == 67 && record.contentType == "image/png")
        #expect(files.directory == scratch.path + "/attachments/")
        #expect(names(scratch.path + "/attachments") == ["blobs", "ids"])
        #expect(names(files.blobs) == [hash])
        #expect(names(files.ids) == [id.text])
        for folder in [files.directory, files.blobs, files.ids] { #expect(scratch.mode(folder) == 0o700, "\(folder)") }
        #expect(scratch.mode(files.blobs + hash) == 0o600 && scratch.mode(files.ids + id.text) == 0o600)
        #expect(FileManager.default.contents(atPath: files.blobs + hash).map(Array.init) == TestImages.png)
        let json = try #require(FileManager.default.contents(atPath: files.ids + id.text))
        #expect(String(decoding: json, as: UTF8.self)
                == #"{"content_type":"image/png","created_at":1800000000123,"sha256":"\#(hash)","size":67,"uploader":"ann"}"#)
        let loaded = try #require(try files.load(id))
        #expect(loaded.record == record && loaded.bytes == TestImages.png)
        // Another instance on the same directory (a restart) reads the same.
        #expect(try AttachmentFiles(stateDirectory: scratch.path + "/", log: log, clock: { 100 }).load(id)?.bytes == TestImages.png)
    }

    @Test("identical bytes from two uploaders: two ids, two records, one blob")
    func identicalBytesShareOneBlob() throws {
        defer { scratch.remove() }
        let files = store()
        let a = try files.save(TestImages.gif, format: .gif, uploader: "ann", unixMilliseconds: 1)
        let b = try files.save(TestImages.gif, format: .gif, uploader: "bob", unixMilliseconds: 2)
        _ = try files.save(TestImages.webp, format: .webp, uploader: "bob", unixMilliseconds: 3)
        #expect(a.id != b.id && a.record.sha256 == b.record.sha256)
        #expect(names(files.blobs).count == 2)
        #expect(names(files.ids).count == 3)
        #expect(try files.load(a.id)?.record.uploader == "ann")
        #expect(try files.load(b.id)?.record.uploader == "bob")
        #expect(try files.load(b.id)?.bytes == TestImages.gif)
    }

    @Test("an id never handed out: nil, before the folders exist and after")
    func unknownID() throws {
        defer { scratch.remove() }
        let files = store()
        #expect(try files.load(AttachmentID.random()) == nil)
        _ = try files.save(TestImages.png, format: .png, uploader: "ann", unixMilliseconds: 1)
        #expect(try files.load(AttachmentID.random()) == nil)
    }

    @Test("a full disk while writing the blob: .full, no temporary file, no blob, no record; the next save works")
    func fullDiskOnBlob() throws {
        defer { scratch.remove() }
        var calls = SystemCalls.kernel
        calls.write = { _, _, _ in -Int(ENOSPC) }
        #expect(throws: AttachmentStoreError.full) { try store(calls).save(TestImages.png, format: .png, uploader: "ann", unixMilliseconds: 1) }
        let files = store()
        #expect(names(files.blobs).isEmpty && names(files.ids).isEmpty)
        #expect(log.lines.contains { $0.contains("No space left on device") })
        let saved = try files.save(TestImages.png, format: .png, uploader: "ann", unixMilliseconds: 2)
        #expect(try files.load(saved.id)?.bytes == TestImages.png)
    }

    @Test("the record cannot be written (unwritable ids/, or a full disk): the blob this save made is removed", arguments: [
        (EACCES, AttachmentStoreError.failed), (ENOSPC, .full), (EDQUOT, .full),
    ])
    func recordFails(errno: Int32, expected: AttachmentStoreError) throws {
        defer { scratch.remove() }
        let failing = store(Self.failingOpen("/ids/.", errno))
        #expect(throws: expected) { try failing.save(TestImages.jpeg, format: .jpeg, uploader: "ann", unixMilliseconds: 1) }
        #expect(names(failing.blobs).isEmpty && names(failing.ids).isEmpty)
    }

    @Test("a failed save never removes a blob an earlier upload shares")
    func failedSaveKeepsASharedBlob() throws {
        defer { scratch.remove() }
        let earlier = try store().save(TestImages.jpeg, format: .jpeg, uploader: "ann", unixMilliseconds: 1)
        let failing = store(Self.failingOpen("/ids/.", EACCES))
        #expect(throws: AttachmentStoreError.failed) { try failing.save(TestImages.jpeg, format: .jpeg, uploader: "bob", unixMilliseconds: 2) }
        #expect(try store().load(earlier.id)?.bytes == TestImages.jpeg)
        #expect(names(failing.blobs).count == 1 && names(failing.ids) == [earlier.id.text])
    }

    @Test("a folder that cannot be made, or one others may write to: .failed, nothing written")
    func folders() throws {
        defer { scratch.remove() }
        var calls = SystemCalls.kernel
        calls.makeDirectory = { _, _ in -EACCES }
        #expect(throws: AttachmentStoreError.failed) { try store(calls).save(TestImages.png, format: .png, uploader: "a", unixMilliseconds: 1) }
        let files = store()
        try FileManager.default.createDirectory(atPath: files.blobs, withIntermediateDirectories: true)
        chmod(files.directory, 0o700)
        chmod(files.blobs, 0o777)
        #expect(throws: AttachmentStoreError.failed) { try files.save(TestImages.png, format: .png, uploader: "a", unixMilliseconds: 1) }
        #expect(names(files.blobs).isEmpty)
        #expect(log.lines.contains { $0.contains("chmod 700") })
    }

    @Test("damage on disk: a record that is no record, one naming a missing blob or a blob of another size: .damaged")
    func damaged() throws {
        defer { scratch.remove() }
        let files = store()
        let (id, record) = try files.save(TestImages.png, format: .png, uploader: "ann", unixMilliseconds: 1)
        // The blob shrinks.
        try Data(TestImages.png.dropLast()).write(to: URL(fileURLWithPath: files.blobs + record.sha256))
        #expect(throws: AttachmentStoreError.damaged) { try files.load(id) }
        // The blob is gone.
        try FileManager.default.removeItem(atPath: files.blobs + record.sha256)
        #expect(throws: AttachmentStoreError.damaged) { try files.load(id) }
        // The record is garbage, or names a path instead of a hash.
        for text in ["not json", #"{"content_type":"image/png","created_at":1,"sha256":"../../relay-key","size":32,"uploader":"x"}"#,
                     #"{"content_type":"text/html","created_at":1,"sha256":"\#(record.sha256)","size":67,"uploader":"x"}"#] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: files.ids + id.text))
            #expect(throws: AttachmentStoreError.damaged) { try files.load(id) }
        }
    }

    @Test("a symbolic link planted as a record is not followed")
    func symbolicLink() throws {
        defer { scratch.remove() }
        let files = store()
        _ = try files.save(TestImages.png, format: .png, uploader: "ann", unixMilliseconds: 1)
        let id = AttachmentID.random()
        try FileManager.default.createSymbolicLink(atPath: files.ids + id.text, withDestinationPath: "/etc/passwd")
        #expect(throws: AttachmentStoreError.failed) { try files.load(id) }
    }
}
