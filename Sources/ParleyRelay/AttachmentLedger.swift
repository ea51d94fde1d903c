/// What the attachment store keeps, in memory, to decide without touching the disk: each attachment's uploader, size,
/// blob and upload time; each identity's kept bytes and files and its upload allowance; which blobs are shared. Pure:
/// every call takes `now` (Unix milliseconds). `AttachmentFiles` rebuilds it from the records at start and holds it
/// under a lock.
///
///     admit (headers)      quota: kept bytes + declared ≤ bytesPerIdentity, kept files < filesPerIdentity
///                          rate: one upload from the identity's allowance, which must hold the declared bytes too
///                          (both refilled per minute)
///     saved                the bytes from the allowance (it may go below zero: the next upload waits), kept counts up
///     expired(now)         uploads older than expiryDays: their records go, a blob once no record names it
public struct AttachmentLedger: Sendable {
    /// One kept attachment.
    public struct Entry: Equatable, Sendable {
        public var id: AttachmentID
        public var uploader: String
        public var size: Int
        public var sha256: String
        public var createdAt: Int64

        /// An entry.
        public init(id: AttachmentID, uploader: String, size: Int, sha256: String, createdAt: Int64) {
            self.id = id; self.uploader = uploader; self.size = size; self.sha256 = sha256; self.createdAt = createdAt
        }
    }

    /// What one identity keeps.
    public struct Usage: Equatable, Sendable {
        public var bytes = 0
        public var files = 0

        /// A usage.
        public init(bytes: Int = 0, files: Int = 0) {
            self.bytes = bytes
            self.files = files
        }
    }

    /// An identity's upload allowance: a token bucket of uploads and one of bytes, both refilled per minute.
    struct Allowance: Equatable, Sendable {
        var uploads: Double
        var bytes: Double
        var at: Int64
    }

    /// The limits applied.
    public private(set) var quota: AttachmentQuota
    /// The bytes an identity may upload in one burst: a minute's worth, and at least one largest upload.
    public private(set) var byteBurst: Double
    public private(set) var entries: [AttachmentID: Entry] = [:]
    public private(set) var usage: [String: Usage] = [:]
    /// Records naming each blob.
    public private(set) var blobRecords: [String: Int] = [:]
    private var allowances: [String: Allowance] = [:]
    /// No entry expires before this (Unix ms).
    private var nextExpiry = Int64.max
    /// Allowances kept before the full ones are dropped.
    static let allowancesKept = 4096

    /// An empty ledger with `quota`, for uploads of at most `largestUpload` bytes.
    public init(quota: AttachmentQuota, largestUpload: Int) {
        self.quota = quota
        byteBurst = Double(max(quota.bytesPerMinute, largestUpload))
    }

    /// New limits (a reload): what is kept stays kept; the next expiry sweep applies the new expiry.
    public mutating func replaceQuota(_ quota: AttachmentQuota, largestUpload: Int) {
        self.quota = quota
        byteBurst = Double(max(quota.bytesPerMinute, largestUpload))
        nextExpiry = .min
    }

    /// Whether `uploader` may start an upload of `bytes` (declared; nil: not said) at `now`; when it may, one upload is
    /// taken from its allowance (its bytes are, once saved). Nothing changes on a refusal.
    public mutating func admit(uploader: String, bytes: Int?, now: Int64) -> AttachmentQuotaRefusal? {
        if let refusal = quotaRefusal(uploader: uploader, adding: bytes ?? 0) { return refusal }
        var a = allowance(uploader, now: now)
        let wanted = Double(min(bytes ?? 1, Int(byteBurst)))
        guard a.uploads >= 1, a.bytes >= wanted else {
            let perMinute = (uploads: Double(quota.uploadsPerMinute), bytes: Double(quota.bytesPerMinute))
            let waitUploads = max(0, 1 - a.uploads) / perMinute.uploads * 60
            let waitBytes = max(0, wanted - a.bytes) / max(1, perMinute.bytes) * 60
            return .rate(identity: uploader, retryAfterSeconds: max(1, Int(max(waitUploads, waitBytes).rounded(.up))))
        }
        a.uploads -= 1
        allowances[uploader] = a
        return nil
    }

    /// Whether keeping `adding` more bytes would pass `uploader`'s quota of bytes or files.
    public func quotaRefusal(uploader: String, adding: Int) -> AttachmentQuotaRefusal? {
        let kept = usage[uploader] ?? Usage()
        if kept.files >= quota.filesPerIdentity { return .files(identity: uploader, limit: quota.filesPerIdentity) }
        if kept.bytes + adding > quota.bytesPerIdentity {
            return .bytes(identity: uploader, limit: quota.bytesPerIdentity, kept: kept.bytes, adding: adding)
        }
        return nil
    }

    /// A saved upload: counted as kept, its bytes taken from the allowance.
    public mutating func saved(_ entry: Entry, now: Int64) {
        var a = allowance(entry.uploader, now: now)
        a.bytes -= Double(entry.size)
        allowances[entry.uploader] = a
        add(entry)
    }

    /// An attachment found on disk (at start) or just saved.
    public mutating func add(_ entry: Entry) {
        if let old = entries[entry.id] { forget(old) }
        entries[entry.id] = entry
        usage[entry.uploader, default: Usage()].bytes += entry.size
        usage[entry.uploader, default: Usage()].files += 1
        blobRecords[entry.sha256, default: 0] += 1
        if let expiry = quota.expiryMilliseconds { nextExpiry = min(nextExpiry, entry.createdAt &+ expiry) }
    }

    /// Removes attachment `id`; returns its entry and whether no record names its blob any more (nil: unknown id).
    public mutating func remove(_ id: AttachmentID) -> (entry: Entry, blobUnused: Bool)? {
        guard let entry = entries.removeValue(forKey: id) else { return nil }
        forget(entry)
        return (entry, blobRecords[entry.sha256] == nil)
    }

    private mutating func forget(_ entry: Entry) {
        let u = usage[entry.uploader, default: Usage()]
        usage[entry.uploader] = u.files > 1 ? Usage(bytes: u.bytes - entry.size, files: u.files - 1) : nil
        let n = blobRecords[entry.sha256, default: 0]
        blobRecords[entry.sha256] = n > 1 ? n - 1 : nil
    }

    /// Whether an attachment uploaded at `createdAt` has expired by `now`.
    public func isExpired(createdAt: Int64, now: Int64) -> Bool {
        guard let expiry = quota.expiryMilliseconds else { return false }
        return createdAt &+ expiry <= now
    }

    /// The attachments expired by `now`, oldest first (none without looking, before the earliest expiry).
    public mutating func expired(now: Int64) -> [Entry] {
        guard now >= nextExpiry else { return [] }
        let due = entries.values.filter { isExpired(createdAt: $0.createdAt, now: now) }.sorted { $0.createdAt < $1.createdAt }
        let dueIDs = Set(due.map(\.id))
        let remaining = entries.values.filter { !dueIDs.contains($0.id) }
        nextExpiry = quota.expiryMilliseconds.map { e in remaining.map { $0.createdAt &+ e }.min() ?? .max } ?? .max
        return due
    }

    /// `uploader`'s allowance refilled to `now`; allowances back to full are dropped once there are many.
    private mutating func allowance(_ uploader: String, now: Int64) -> Allowance {
        let full = Allowance(uploads: Double(quota.uploadsPerMinute), bytes: byteBurst, at: now)
        if allowances.count > Self.allowancesKept {
            allowances = allowances.filter { refill($0.value, now: now) != Allowance(uploads: full.uploads, bytes: full.bytes, at: now) }
        }
        guard let a = allowances[uploader] else { return full }
        return refill(a, now: now)
    }

    private func refill(_ a: Allowance, now: Int64) -> Allowance {
        let minutes = Double(max(0, now - a.at)) / 60_000
        return Allowance(uploads: min(Double(quota.uploadsPerMinute), a.uploads + minutes * Double(quota.uploadsPerMinute)),
                         bytes: min(byteBurst, a.bytes + minutes * Double(quota.bytesPerMinute)), at: max(now, a.at))
    }
}
