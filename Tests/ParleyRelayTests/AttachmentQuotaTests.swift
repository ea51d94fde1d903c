import Foundation
import ParleyNet
import ParleyRelay
import ParleyRelayCore
import ParleyTestSupport
import Synchronization
import Testing

/// What one identity may keep and upload, how long it is kept, and the free space uploads leave (issue 33, finding 6:
/// one member token stored 40 MiB in half a second, and the texts and recordings after it found a full disk).
@Suite("Attachments: quotas per identity (bytes, files, rate), expiry, the disk's reserve — the ledger and the files")
struct AttachmentQuotaTests {
    static let mib = 1024 * 1024
    static let t0: Int64 = 1_800_000_000_000
    let scratch = ScratchDirectory()
    let log = MemoryLogSink(threshold: .debug)

    static func entry(_ uploader: String, size: Int, sha: String = "a", at: Int64 = t0) -> AttachmentLedger.Entry {
        AttachmentLedger.Entry(id: .random(), uploader: uploader, size: size, sha256: sha, createdAt: at)
    }

    // MARK: The ledger (pure)

    @Test("one identity's upload flood with the defaults: 8 MiB uploads in half a second stop at 16 MiB (429, retry in 30 s); another identity is not slowed")
    func floodStopsAtTheRate() {
        var ledger = AttachmentLedger(quota: AttachmentQuota(), largestUpload: 8 * Self.mib)
        var stored = 0
        for k in 0..<5 {
            let now = Self.t0 + Int64(k) * 100
            if let refusal = ledger.admit(uploader: "eve", bytes: 8 * Self.mib, now: now) {
                #expect(refusal == .rate(identity: "eve", retryAfterSeconds: 30), "\(refusal)")
                continue
            }
            ledger.saved(Self.entry("eve", size: 8 * Self.mib, sha: "\(k)"), now: now)
            stored += 8 * Self.mib
        }
        #expect(stored == 16 * Self.mib)
        #expect(ledger.admit(uploader: "bob", bytes: 8 * Self.mib, now: Self.t0 + 500) == nil)
        // Half a minute later eve's allowance holds 8 MiB again.
        #expect(ledger.admit(uploader: "eve", bytes: 8 * Self.mib, now: Self.t0 + 30_500) == nil)
    }

    @Test("uploads per minute: a burst of the limit, then one every 60/limit seconds")
    func uploadsPerMinute() {
        var quota = AttachmentQuota()
        quota.uploadsPerMinute = 6
        var ledger = AttachmentLedger(quota: quota, largestUpload: 100)
        for _ in 0..<6 { #expect(ledger.admit(uploader: "eve", bytes: 10, now: Self.t0) == nil) }
        #expect(ledger.admit(uploader: "eve", bytes: 10, now: Self.t0) == .rate(identity: "eve", retryAfterSeconds: 10))
        #expect(ledger.admit(uploader: "eve", bytes: 10, now: Self.t0 + 9_000) != nil)
        #expect(ledger.admit(uploader: "eve", bytes: 10, now: Self.t0 + 10_000) == nil)
    }

    @Test("what an identity keeps: its bytes and files, each refused before the body (declared length) and at the save; expiry frees them")
    func keptQuota() {
        var quota = AttachmentQuota()
        quota.bytesPerIdentity = 1000
        quota.filesPerIdentity = 3
        quota.expiryDays = 1
        var ledger = AttachmentLedger(quota: quota, largestUpload: 1000)
        ledger.saved(Self.entry("eve", size: 600, sha: "x"), now: Self.t0)
        #expect(ledger.admit(uploader: "eve", bytes: 401, now: Self.t0) == .bytes(identity: "eve", limit: 1000, kept: 600, adding: 401))
        #expect(ledger.quotaRefusal(uploader: "eve", adding: 400) == nil)
        ledger.saved(Self.entry("eve", size: 100, sha: "x", at: Self.t0 + 1), now: Self.t0 + 1)
        ledger.saved(Self.entry("eve", size: 100, sha: "y", at: Self.t0 + 2), now: Self.t0 + 2)
        #expect(ledger.quotaRefusal(uploader: "eve", adding: 1) == .files(identity: "eve", limit: 3))
        #expect(ledger.usage["eve"] == AttachmentLedger.Usage(bytes: 800, files: 3))
        #expect(ledger.blobRecords == ["x": 2, "y": 1])
        // A day later the first expired (the others a little after): eve may upload again.
        let expired = ledger.expired(now: Self.t0 + 86_400_000)
        #expect(expired.map(\.size) == [600])
        #expect(ledger.remove(expired[0].id).map(\.blobUnused) == false, "x is still named by a record")
        #expect(ledger.quotaRefusal(uploader: "eve", adding: 400) == nil)
        #expect(ledger.expired(now: Self.t0 + 86_400_000).isEmpty)
        let rest = ledger.expired(now: Self.t0 + 86_400_002)
        #expect(rest.count == 2)
        for e in rest { _ = ledger.remove(e.id) }
        #expect(ledger.usage.isEmpty && ledger.blobRecords.isEmpty && ledger.entries.isEmpty)
    }

    @Test("expiry 0 keeps everything; an upload larger than a minute's bytes still fits one burst")
    func keptForEver() {
        var quota = AttachmentQuota()
        quota.expiryDays = 0
        quota.bytesPerMinute = 1000
        var ledger = AttachmentLedger(quota: quota, largestUpload: 5000)
        ledger.saved(Self.entry("eve", size: 10), now: 0)
        #expect(ledger.expired(now: .max).isEmpty)
        #expect(ledger.admit(uploader: "ann", bytes: 5000, now: 0) == nil)
    }

    // MARK: The files

    func files(quota: AttachmentQuota = AttachmentQuota(), calls: SystemCalls = .kernel, now: Int64 = AttachmentQuotaTests.t0) -> AttachmentFiles {
        AttachmentFiles(stateDirectory: scratch.path, log: log, calls: calls, quota: quota, largestUpload: 1000, clock: { now })
    }

    func names(_ folder: String) -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted() }

    @Test("a save past the identity's quota is refused and writes nothing; a restart counts what is on disk")
    func filesQuota() throws {
        defer { scratch.remove() }
        var quota = AttachmentQuota()
        quota.bytesPerIdentity = 200
        let store = files(quota: quota)
        _ = try store.save(TestImages.png, format: .png, uploader: "eve", unixMilliseconds: Self.t0)
        #expect(throws: AttachmentStoreError.quota(.bytes(identity: "eve", limit: 200, kept: 67, adding: 159))) {
            try store.save(TestImages.jpeg, format: .jpeg, uploader: "eve", unixMilliseconds: Self.t0)
        }
        #expect(names(store.blobs).count == 1 && names(store.ids).count == 1)
        _ = try store.save(TestImages.jpeg, format: .jpeg, uploader: "bob", unixMilliseconds: Self.t0)
        let again = files(quota: quota)
        #expect(again.kept.usage == ["eve": .init(bytes: 67, files: 1), "bob": .init(bytes: 159, files: 1)])
        #expect(again.admitUpload(uploader: "eve", bytes: 140, unixMilliseconds: Self.t0) != nil)
        #expect(again.admitUpload(uploader: "eve", bytes: 130, unixMilliseconds: Self.t0) == nil)
    }

    @Test("a save that would leave less than the reserve free is refused (507's cause) and writes nothing, even of bytes kept already")
    func reserve() throws {
        defer { scratch.remove() }
        var quota = AttachmentQuota()
        quota.reserveBytes = 1_000_000
        var calls = SystemCalls.kernel
        calls.freeBytes = { _ in 1_000_100 }
        let store = files(quota: quota, calls: calls)
        _ = try store.save(TestImages.png, format: .png, uploader: "eve", unixMilliseconds: Self.t0)  // 67 bytes: 33 to spare
        #expect(throws: AttachmentStoreError.reserve(freeBytes: 1_000_100, reserveBytes: 1_000_000)) {
            try store.save(TestImages.jpeg, format: .jpeg, uploader: "eve", unixMilliseconds: Self.t0)
        }
        #expect(throws: AttachmentStoreError.reserve(freeBytes: 1_000_100, reserveBytes: 1_000_000)) {
            try store.save(TestImages.jpeg, format: .jpeg, uploader: "bob", unixMilliseconds: Self.t0)
        }
        #expect(names(store.ids).count == 1 && store.kept.entries.count == 1)
        #expect(log.lines.contains { $0.contains("attachment_reserve_bytes") })
    }

    @Test("expiry: a fetch after it finds nothing and removes the files; a restart or a save removes the rest; a blob stays while a record names it")
    func expiry() throws {
        defer { scratch.remove() }
        var quota = AttachmentQuota()
        quota.expiryDays = 30
        let day: Int64 = 86_400_000
        let early = files(quota: quota)
        let old = try early.save(TestImages.gif, format: .gif, uploader: "eve", unixMilliseconds: Self.t0)
        let shared = try early.save(TestImages.png, format: .png, uploader: "eve", unixMilliseconds: Self.t0)
        let later = try early.save(TestImages.png, format: .png, uploader: "bob", unixMilliseconds: Self.t0 + 10 * day)
        #expect(early.expiry(ofCreatedAt: Self.t0) == Self.t0 + 30 * day)

        // 31 days on: the first two are gone at the first fetch, their records with them; the PNG's blob stays for bob.
        let after = files(quota: quota, now: Self.t0 + 31 * day)
        #expect(names(after.ids) == [later.id.text], "a restart removes what expired")
        #expect(try after.load(old.id) == nil)
        #expect(try after.load(shared.id) == nil)
        #expect(names(after.blobs) == [later.record.sha256])
        #expect(try after.load(later.id)?.bytes == TestImages.png)
        #expect(after.kept.usage == ["bob": .init(bytes: 67, files: 1)])

        // A store that keeps running: the fetch itself finds the attachment expired, and removes it.
        let clock = Atomic<Int64>(Self.t0 + 31 * day)
        let running = AttachmentFiles(stateDirectory: scratch.path, log: log, quota: quota, largestUpload: 1000,
                                      clock: { clock.load(ordering: .relaxed) })
        #expect(try running.load(later.id)?.bytes == TestImages.png)
        clock.store(Self.t0 + 41 * day, ordering: .relaxed)
        #expect(try running.load(later.id) == nil)
        #expect(names(running.ids).isEmpty && names(running.blobs).isEmpty)
        #expect(running.kept.entries.isEmpty)
        #expect(log.lines.contains { $0.contains("expired and removed") })
    }
}
