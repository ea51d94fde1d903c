/// What one identity may keep and upload, how long attachments are kept, and the free space they leave
/// (RelayConfig's `attachment_*` keys; `AttachmentLedger` applies them, `AttachmentFiles` enforces them).
public struct AttachmentQuota: Sendable, Equatable {
    /// Bytes one identity may have kept at once (`attachment_quota_bytes`): 50 MiB.
    public var bytesPerIdentity = 50 * 1024 * 1024
    /// Attachments one identity may have kept at once (`attachment_quota_files`).
    public var filesPerIdentity = 200
    /// Uploads one identity may start per minute, in a burst or spread (`attachment_uploads_per_minute`).
    public var uploadsPerMinute = 10
    /// Bytes one identity may upload per minute (`attachment_upload_bytes_per_minute`): 16 MiB, and never less than one
    /// upload of `attachment_max_bytes` in a burst.
    public var bytesPerMinute = 16 * 1024 * 1024
    /// Days an attachment is kept after its upload (`attachment_expiry_days`); 0 keeps them until removed by hand.
    public var expiryDays = 30
    /// Bytes of free space uploads never take (`attachment_reserve_bytes`): room for `messages.db` and recordings.
    public var reserveBytes: Int64 = 256 * 1024 * 1024

    /// The defaults.
    public init() {}

    /// Milliseconds an attachment is kept, nil for ever.
    public var expiryMilliseconds: Int64? { expiryDays > 0 ? Int64(expiryDays) * 86_400_000 : nil }
}

/// Why an identity may not upload (more) now: the answer names the setting.
public enum AttachmentQuotaRefusal: Equatable, Sendable {
    /// Keeping `adding` more bytes would pass `limit` (it keeps `kept`).
    case bytes(identity: String, limit: Int, kept: Int, adding: Int)
    /// It keeps `limit` attachments already.
    case files(identity: String, limit: Int)
    /// It uploaded as much as its rate allows for now; it may try again after `retryAfterSeconds`.
    case rate(identity: String, retryAfterSeconds: Int)

    /// For the API's error message.
    public var description: String {
        switch self {
        case .bytes(let identity, let limit, let kept, let adding):
            "\(identity) keeps \(kept) bytes of attachments; \(adding) more would pass the \(limit) each identity may keep (attachment_quota_bytes) until some expire"
        case .files(let identity, let limit):
            "\(identity) keeps \(limit) attachments, the most each identity may keep (attachment_quota_files) until some expire"
        case .rate(let identity, let seconds):
            "\(identity) uploads faster than attachment_uploads_per_minute / attachment_upload_bytes_per_minute allow: retry in \(seconds) s"
        }
    }
}
