import ParleyAuth
import ParleyRelay

/// Image attachments, for any token of this relay with the `join` grant (a member token, whatever its room):
///
///     POST    /v1/attachments        the image as the body, its type as Content-Type (image/png, image/jpeg,
///                                    image/webp or image/gif: what the bytes are) → 201
///                                    {"id", "content_type", "size", "sha256"}, Location: /v1/attachments/{id}
///     GET     /v1/attachments/{id}   → 200 the bytes, the stored Content-Type, X-Content-Type-Options: nosniff,
///                                    Content-Disposition: inline; filename="{id}.{png|jpeg|webp|gif}"
///     OPTIONS on either              the CORS preflight, without a token
///
/// The id is a capability: random, never derived from the bytes, so holding it is what lets a member fetch an
/// attachment, and nobody can ask whether some known image is stored. It is parsed strictly (`AttachmentID`) before
/// anything reaches the store: any other path under `/v1/attachments/` is 404.
///
/// Admission (libmicrohttpd's thread, headers only, no file touched): the token, the method, the declared type and
/// length; then the server reads the body into one of its few upload places. Routing (an API thread): the bytes'
/// own type, then the store.
extension HTTPRouter {
    /// What an attachment request holds in memory while it lasts, for the server's bound on each kind.
    public enum AttachmentTransfer: Sendable, Equatable {
        /// Its body, up to `attachment_max_bytes`, until stored.
        case upload
        /// The stored bytes, from reading them until the answer is sent.
        case download
    }

    /// Which attachment route a path names, if any.
    enum AttachmentRoute: Equatable {
        /// `/v1/attachments`.
        case upload
        /// `/v1/attachments/{id}` with a well-formed id.
        case download(AttachmentID)
        /// Anything else under `/v1/attachments/`: a malformed id (`..`, `%2e`, a `/`), a trailing slash, more segments.
        case unknown

        /// The route of the (percent-decoded) path's segments, or nil outside `/v1/attachments`.
        init?(_ parts: [String]) {
            guard parts.count >= 2, parts[0] == "v1", parts[1] == "attachments" else { return nil }
            switch parts.count {
            case 2: self = .upload
            case 3: self = AttachmentID(parts[2]).map { .download($0) } ?? .unknown
            default: self = .unknown
            }
        }
    }

    /// The same answer for an unknown id, a malformed one and a relay that keeps none: nothing to tell them apart.
    static let noAttachment = APIError(404, "not_found", "no such attachment")

    /// Admission from the headers: a preflight at once; otherwise a token with `join` first (401/403 before any body
    /// is read), then the method, then for an upload its declared type and length.
    func admitAttachment(_ request: HTTPRequest, _ route: AttachmentRoute, now: Int64) -> Admission {
        if request.method == "OPTIONS" { return .answer(Self.preflight) }
        do throws(APIError) {
            let claims = try attachmentClaims(request, now: now)
            switch route {
            case .unknown:
                throw Self.noAttachment
            case .download:
                guard request.method == "GET" || request.method == "HEAD" else { throw APIError(405, "method_not_allowed", "use GET") }
                guard attachments != nil else { throw Self.noAttachment }
                return .attachment(.download, maxBodyBytes: 0)
            case .upload:
                guard request.method == "POST" else { throw APIError(405, "method_not_allowed", "use POST") }
                _ = try declaredUpload(request)
                // The uploader's quota and rate, before its body is read (the length it declares, when it does).
                let declared = request.contentLength.map { Int(clamping: $0) }
                if let refusal = attachments?.admitUpload(uploader: claims.identity, bytes: declared, unixMilliseconds: now * 1000) {
                    throw Self.quotaError(refusal)
                }
                return .attachment(.upload, maxBodyBytes: attachmentMaxBytes)
            }
        } catch {
            return .answer(Self.withCORS(error.response))
        }
    }

    /// Answers an attachment route (after admission, on an API thread: the store may wait on the disk).
    func routeAttachment(_ request: HTTPRequest, _ route: AttachmentRoute, now: Int64) -> HTTPResponse {
        do throws(APIError) {
            if request.method == "OPTIONS" { return Self.preflight }
            let claims = try attachmentClaims(request, now: now)
            switch (request.method, route) {
            case (_, .unknown):
                throw Self.noAttachment
            case ("POST", .upload):
                return Self.withCORS(try upload(request, uploader: claims.identity, now: now))
            case ("GET", .download(let id)), ("HEAD", .download(let id)):
                return Self.withCORS(try download(id))
            case (_, .upload):
                throw APIError(405, "method_not_allowed", "use POST")
            case (_, .download):
                throw APIError(405, "method_not_allowed", "use GET")
            }
        } catch {
            return Self.withCORS(error.response)
        }
    }

    /// Checks the bytes' type against the declared one, stores them, and answers 201 with what was kept.
    private func upload(_ request: HTTPRequest, uploader: String, now: Int64) throws(APIError) -> HTTPResponse {
        let declared = try declaredUpload(request)
        guard let attachments else { throw Self.attachmentsDisabled }
        guard request.body.count <= attachmentMaxBytes else { throw tooLarge }
        let image: ImageInfo
        do throws(ImageSniffError) {
            image = try ImageFormat.inspect(request.body)
        } catch {
            switch error {
            case .empty: throw APIError(400, "empty_body", error.description)
            case .unknown: throw APIError(415, "unsupported_media_type", "\(error.description) (the relay keeps \(ImageFormat.mediaTypes))")
            case .truncated, .malformed: throw APIError(400, "invalid_image", error.description)
            case .tooLarge: throw APIError(400, "image_too_large", error.description)
            }
        }
        let found = image.format
        guard found == declared else {
            throw APIError(415, "content_type_mismatch", "the body is a \(found.name) image (\(found.mediaType)), but Content-Type says \(declared.mediaType)")
        }
        let saved: (id: AttachmentID, record: AttachmentRecord)
        do throws(AttachmentStoreError) {
            saved = try attachments.save(request.body, format: found, uploader: uploader, unixMilliseconds: now * 1000)
        } catch {
            throw Self.storeError(error, "the attachment was not kept")
        }
        var response = Self.json(API.Attachment(id: saved.id.text, contentType: saved.record.contentType, size: saved.record.size,
                                                sha256: saved.record.sha256, width: image.width, height: image.height,
                                                expiresAt: attachments.expiry(ofCreatedAt: saved.record.createdAt)), status: 201)
        response.headers["Location"] = "/v1/attachments/\(saved.id.text)"
        return response
    }

    /// The stored bytes with their type, never to be sniffed or run by a browser as anything else.
    private func download(_ id: AttachmentID) throws(APIError) -> HTTPResponse {
        guard let attachments else { throw Self.noAttachment }
        let found: (record: AttachmentRecord, bytes: [UInt8])?
        do throws(AttachmentStoreError) {
            found = try attachments.load(id)
        } catch {
            throw Self.storeError(error, "the attachment could not be read")
        }
        guard let found, let format = ImageFormat(mediaType: found.record.contentType) else { throw Self.noAttachment }
        return HTTPResponse(status: 200, contentType: format.mediaType, body: found.bytes, headers: [
            "X-Content-Type-Options": "nosniff",
            "Content-Disposition": "inline; filename=\"\(id.text).\(format.rawValue)\"",
        ])
    }

    /// The type an upload declares, once uploads are taken and its declared length fits.
    private func declaredUpload(_ request: HTTPRequest) throws(APIError) -> ImageFormat {
        guard attachments != nil, attachmentMaxBytes > 0 else { throw Self.attachmentsDisabled }
        guard let type = request.contentType, let format = ImageFormat(mediaType: type) else {
            throw APIError(415, "unsupported_media_type", "send the image with its Content-Type: \(ImageFormat.mediaTypes)")
        }
        if let length = request.contentLength, length > UInt64(attachmentMaxBytes) { throw tooLarge }
        return format
    }

    /// Uploads when `attachment_max_bytes` is 0 (or the relay has no store).
    static let attachmentsDisabled = APIError(403, "attachments_disabled", "this relay takes no attachments (attachment_max_bytes is 0)")

    private var tooLarge: APIError {
        APIError(413, "body_too_large", "the attachment is larger than \(attachmentMaxBytes) bytes (attachment_max_bytes)")
    }

    private static func storeError(_ error: AttachmentStoreError, _ outcome: String) -> APIError {
        switch error {
        case .full: APIError(507, "insufficient_storage", "the relay's disk is full: \(outcome)")
        case .failed: APIError(500, "storage_failed", "the relay's storage failed: \(outcome) (the relay's log says why)")
        case .damaged: APIError(500, "attachment_damaged", "the relay's copy is damaged: \(outcome) (the relay's log says why)")
        case .reserve(_, let reserve):
            APIError(507, "insufficient_storage",
                     "the relay's disk is nearly full: it keeps its last \(reserve >> 20) MiB for texts and recordings (attachment_reserve_bytes): \(outcome)")
        case .quota(let refusal): quotaError(refusal)
        }
    }

    /// A quota refusal's answer: 429 with `Retry-After` for the rate, 507 `quota_exceeded` for what an identity keeps.
    static func quotaError(_ refusal: AttachmentQuotaRefusal) -> APIError {
        switch refusal {
        case .rate(_, let seconds): APIError(429, "rate_limited", refusal.description, headers: ["Retry-After": String(seconds)])
        case .bytes, .files: APIError(507, "quota_exceeded", refusal.description)
        }
    }

    /// The token's claims when it may use attachments: any valid token of this relay with the `join` grant.
    private func attachmentClaims(_ request: HTTPRequest, now: Int64) throws(APIError) -> TokenClaims {
        let claims = try bearerClaims(request, now: now, missing: "a member token is required (Authorization: Bearer)")
        guard claims.grants.join else { throw APIError(403, "forbidden", "the token does not grant join") }
        return claims
    }
}
