import ParleyAuth

/// Where the HTTP API keeps image attachments: `AttachmentFiles` in the relay's state directory; tests keep them in
/// memory. `save` and `load` may block on the disk: call them on an API thread, never on a worker loop or
/// libmicrohttpd's; `admitUpload` never touches the disk.
public protocol AttachmentStore: Sendable {
    /// On the headers, before any body is read: whether `uploader` may start an upload of `bytes` (its declared
    /// length; nil: not said) at `unixMilliseconds` — its quota and its rate (`AttachmentQuota`). An admitted upload is
    /// charged to the rate. Never waits for the disk.
    func admitUpload(uploader: String, bytes: Int?, unixMilliseconds: Int64) -> AttachmentQuotaRefusal?
    /// Keeps `bytes` (already checked to be a `format` image) for `uploader` under a new random id, within its quota and
    /// the disk's reserve. Identical bytes share one stored copy; each call gets its own id and record.
    func save(_ bytes: [UInt8], format: ImageFormat, uploader: String,
              unixMilliseconds: Int64) throws(AttachmentStoreError) -> (id: AttachmentID, record: AttachmentRecord)
    /// The record and bytes of `id`; nil when no attachment has that id (or it expired).
    func load(_ id: AttachmentID) throws(AttachmentStoreError) -> (record: AttachmentRecord, bytes: [UInt8])?
    /// When an attachment uploaded at `createdAt` (Unix ms) expires; nil when attachments are kept until removed.
    func expiry(ofCreatedAt createdAt: Int64) -> Int64?
}

/// An attachment's id: 128 random bits (libsodium's `randombytes_buf`) as 22 base64url characters.
///
/// Not the content's hash: a hash would let anyone who knows an image ask whether it was uploaded. The id is a
/// capability: with any member token of the relay, whoever holds it may fetch the attachment, and nobody can guess
/// one. Parsing is strict (exactly 22 characters of `A–Z a–z 0–9 - _`, canonical base64url), so nothing but such
/// an id ever becomes part of a file name: no `/`, no `.`, no `%`.
public struct AttachmentID: Hashable, Sendable, CustomStringConvertible {
    /// The 22 characters.
    public let text: String
    /// Length of the text.
    public static let length = 22
    /// Random bytes behind it.
    public static let byteCount = 16

    /// The id `text` spells, or nil when it is not one.
    public init?(_ text: some StringProtocol) {
        let utf8 = text.utf8
        guard utf8.count == Self.length, utf8.allSatisfy(Self.isIDCharacter),
              let bytes = Base64URL.decode(Substring(text)), bytes.count == Self.byteCount else { return nil }
        self.text = String(text)
    }

    private init(bytes: [UInt8]) { text = Base64URL.encode(bytes) }

    /// A fresh id from the CSPRNG.
    public static func random() -> AttachmentID { AttachmentID(bytes: Crypto.randomBytes(byteCount)) }

    /// The base64url alphabet, checked before anything decodes.
    static func isIDCharacter(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x5F
    }

    /// The text.
    public var description: String { text }
}

/// What the relay keeps about one attachment besides its bytes: the JSON of `<state_dir>/attachments/ids/<id>`
/// (snake_case keys; the id is the file's name).
public struct AttachmentRecord: Codable, Equatable, Sendable {
    /// SHA-256 of the bytes, 64 lower-case hex digits: the stored copy's name.
    public var sha256: String
    /// The media type found by sniffing (`ImageFormat.mediaType`).
    public var contentType: String
    /// Bytes.
    public var size: Int
    /// The identity of the token that uploaded it.
    public var uploader: String
    /// Unix milliseconds.
    public var createdAt: Int64

    /// The record of `bytes`: their hash and size, the format's media type.
    public init(bytes: [UInt8], format: ImageFormat, uploader: String, createdAt: Int64) {
        sha256 = Crypto.hex(Crypto.sha256(bytes))
        contentType = format.mediaType
        size = bytes.count
        self.uploader = uploader
        self.createdAt = createdAt
    }

    /// Whether the fields can be trusted to name a stored copy: a 64-digit lower-case hex hash, a known image type
    /// as `ImageFormat` writes it, a size that is not negative.
    public var isWellFormed: Bool {
        sha256.utf8.count == 64 && sha256.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
            && ImageFormat(mediaType: contentType)?.mediaType == contentType && size >= 0
    }
}

/// Why the store could not keep or give back an attachment. The messages are for the API's clients and name no
/// path; `AttachmentFiles` logs the details.
public enum AttachmentStoreError: Error, Equatable, Sendable {
    /// The disk (or the user's quota) is full: nothing was kept.
    case full
    /// Writing or reading failed otherwise (an unwritable directory, an I/O error): nothing was kept.
    case failed
    /// A record or stored copy is not what it should be (edited or damaged on disk).
    case damaged
    /// Keeping it would leave less than the reserve free on the disk (`attachment_reserve_bytes`): nothing was kept.
    case reserve(freeBytes: Int64, reserveBytes: Int64)
    /// Keeping it would pass the uploader's quota: nothing was kept.
    case quota(AttachmentQuotaRefusal)
}
