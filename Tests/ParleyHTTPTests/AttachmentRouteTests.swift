import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import ParleyTestSupport
import Testing

/// `POST /v1/attachments` and `GET /v1/attachments/{id}` through `admit` and `route`, as the server calls them, over
/// an in-memory store: who may, what is refused on the headers alone, what the bytes must be, what comes back.
@Suite("Attachments: the router — tokens, declared and sniffed types, sizes, ids as capabilities")
struct AttachmentRouteTests {
    let store = MemoryAttachmentStore()
    let maxBytes = 1000

    var router: HTTPRouter { router(maxBytes: maxBytes) }

    func router(maxBytes: Int) -> HTTPRouter {
        HTTPRouter(backend: CoreBackend(), verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil,
                   config: RelayCoreConfig(), attachments: store, attachmentMaxBytes: maxBytes)
    }

    static func token(_ identity: String = "ann", room: String? = "lobby", grants: Grants = Grants(), expiresIn: Int64 = 600) -> String {
        "Bearer " + TokenSigner(apiKey: "k", apiSecret: RouterTests.secret).mint(
            TokenClaims(identity: identity, room: room, expiresAt: RouterTests.now + expiresIn, grants: grants))
    }

    /// What the server does: `admit` on the headers; when admitted, the body, then `route`. `admitted` says which.
    /// `length`: the declared Content-Length (default: the body's, none when it is empty or `chunked`).
    func send(_ method: String, _ path: String, _ body: [UInt8] = [], type: String? = nil, length: UInt64? = nil, chunked: Bool = false,
              auth: String? = AttachmentRouteTests.token(), maxBytes: Int? = nil) -> (response: HTTPResponse, admitted: HTTPRouter.Admission?) {
        let router = router(maxBytes: maxBytes ?? self.maxBytes)
        let headers = HTTPRequest(method: method, path: path, authorization: auth, contentType: type,
                                  contentLength: length ?? (body.isEmpty || chunked ? nil : UInt64(body.count)))
        let admission = router.admit(headers, now: RouterTests.now)
        switch admission {
        case .answer(let r): return (r, nil)
        case .eventStream, .presenceStream: Issue.record("a stream for \(path)"); return (HTTPResponse(status: 0, body: []), admission)
        case .route, .attachment:
            var request = headers
            request.body = body
            return (router.route(request, now: RouterTests.now), admission)
        }
    }

    func upload(_ bytes: [UInt8], type: String = "image/png", auth: String? = AttachmentRouteTests.token()) -> HTTPResponse {
        send("POST", "/v1/attachments", bytes, type: type, auth: auth).response
    }

    func json(_ r: HTTPResponse) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:] }
    func errorCode(_ r: HTTPResponse) -> String? { (json(r)["error"] as? [String: Any])?["code"] as? String }

    @Test("upload then download, byte for byte, with the stored type, nosniff, a disposition and CORS", arguments: [
        (TestImages.png, "image/png"), (TestImages.jpeg, "image/jpeg"), (TestImages.webp, "image/webp"), (TestImages.gif, "image/gif"),
    ])
    func roundTrip(image: [UInt8], type: String) throws {
        let (created, admitted) = send("POST", "/v1/attachments", image, type: type + "; charset=binary")
        #expect(admitted == .attachment(.upload, maxBodyBytes: maxBytes))
        #expect(created.status == 201)
        let answer = json(created)
        let id = try #require(answer["id"] as? String)
        #expect(AttachmentID(id) != nil)
        #expect(answer["content_type"] as? String == type)
        #expect(answer["size"] as? Int == image.count)
        #expect(answer["sha256"] as? String == Crypto.hex(Crypto.sha256(image)))
        #expect(created.headers["Location"] == "/v1/attachments/\(id)")
        #expect(created.headers["Access-Control-Allow-Origin"] == "*")

        // Another member, of another room, holding the id: the bytes as they came.
        let (fetched, how) = send("GET", "/v1/attachments/\(id)", auth: Self.token("bob", room: "elsewhere"))
        #expect(how == .attachment(.download, maxBodyBytes: 0))
        #expect(fetched.status == 200)
        #expect(fetched.body == image)
        #expect(fetched.contentType == type)
        #expect(fetched.headers["X-Content-Type-Options"] == "nosniff")
        let ext = String(type.dropFirst("image/".count))
        #expect(fetched.headers["Content-Disposition"] == "inline; filename=\"\(id).\(ext)\"")
        #expect(fetched.headers["Access-Control-Allow-Origin"] == "*")
        #expect(send("HEAD", "/v1/attachments/\(id)").response.status == 200)
        // Kept with its uploader and time.
        let record = try #require(store.contents.withLock { $0.records[AttachmentID(id)!] })
        #expect(record.uploader == "ann" && record.createdAt == RouterTests.now * 1000)
    }

    @Test("identical uploads get two ids and share one stored copy")
    func identicalUploadsShareOneBlob() throws {
        let first = json(upload(TestImages.png)), second = json(upload(TestImages.png))
        #expect(first["id"] as? String != second["id"] as? String)
        #expect(first["sha256"] as? String == second["sha256"] as? String)
        #expect(store.blobCount == 1 && store.recordCount == 2)
        #expect(json(upload(TestImages.gif, type: "image/gif"))["content_type"] as? String == "image/gif")
        #expect(store.blobCount == 2 && store.recordCount == 3)
    }

    @Test("no token, a bad or expired one, or a foreign-signed one: 401 on the headers, before any body is read", arguments: [
        nil, "Basic abc", "Bearer not.a.token", AttachmentRouteTests.token(expiresIn: -60),
        "Bearer " + TokenSigner(apiKey: "k", apiSecret: "another-secret-0123456789").mint(
            TokenClaims(identity: "ann", room: "lobby", expiresAt: RouterTests.now + 60)),
    ] as [String?])
    func unauthorised(auth: String?) {
        for (method, path) in [("POST", "/v1/attachments"), ("GET", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA")] {
            let (r, admitted) = send(method, path, TestImages.png, type: "image/png", auth: auth)
            #expect(admitted == nil, "admitted \(method) \(path)")
            #expect(r.status == 401 && errorCode(r) == "unauthorized")
            #expect(r.body.count < 120)  // nothing unauthenticated gets a long answer
        }
        #expect(store.recordCount == 0)
    }

    @Test("a token without the join grant is refused 403; an admin token with join is taken")
    func grants() {
        let noJoin = Self.token(grants: Grants(join: false))
        #expect(send("POST", "/v1/attachments", TestImages.png, type: "image/png", auth: noJoin).response.status == 403)
        #expect(send("GET", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA", auth: noJoin).response.status == 403)
        #expect(upload(TestImages.png, auth: Self.token("ops", room: nil, grants: Grants(admin: true))).status == 201)
    }

    @Test("refused on the headers: a declared length over the limit 413, a type that is no image 415, a method 405")
    func refusedOnHeaders() {
        let tooLong = send("POST", "/v1/attachments", type: "image/png", length: UInt64(maxBytes) + 1)
        #expect(tooLong.admitted == nil && tooLong.response.status == 413 && errorCode(tooLong.response) == "body_too_large")
        #expect(tooLong.response.text.contains("attachment_max_bytes"))
        let huge = send("POST", "/v1/attachments", type: "image/png", length: .max)
        #expect(huge.admitted == nil && huge.response.status == 413)
        #expect(send("POST", "/v1/attachments", type: "image/png", length: UInt64(maxBytes)).admitted == .attachment(.upload, maxBodyBytes: maxBytes))
        for type in [nil, "text/html", "image/svg+xml", "application/octet-stream"] as [String?] {
            let r = send("POST", "/v1/attachments", TestImages.png, type: type)
            #expect(r.admitted == nil && r.response.status == 415 && errorCode(r.response) == "unsupported_media_type", "\(String(describing: type))")
        }
        #expect(send("PUT", "/v1/attachments", TestImages.png, type: "image/png").response.status == 405)
        #expect(send("DELETE", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA").response.status == 405)
        #expect(send("POST", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA", TestImages.png, type: "image/png").response.status == 405)
        let preflight = send("OPTIONS", "/v1/attachments", auth: nil).response
        #expect(preflight.status == 204 && preflight.headers["Access-Control-Allow-Headers"] == "Authorization, Content-Type")
        #expect(store.recordCount == 0)
    }

    @Test("a body over the limit (no length declared: a chunked upload) is refused 413 when routed")
    func streamedBodyTooLarge() {
        let r = send("POST", "/v1/attachments", TestImages.png(size: maxBytes + 1), type: "image/png", chunked: true)
        #expect(r.admitted == .attachment(.upload, maxBodyBytes: maxBytes))
        #expect(r.response.status == 413 && errorCode(r.response) == "body_too_large")
        #expect(upload(TestImages.png(size: maxBytes)).status == 201)  // exactly the limit is fine
        #expect(store.recordCount == 1)
    }

    @Test("the bytes decide: another type than declared 415, no image 415, a cut or broken one 400, nothing 400", arguments: [
        (TestImages.jpeg, "image/png", 415, "content_type_mismatch"),
        (TestImages.png, "image/gif", 415, "content_type_mismatch"),
        (TestImages.gif, "image/webp", 415, "content_type_mismatch"),
        (Array("<svg onload=alert(1)>".utf8), "image/png", 415, "unsupported_media_type"),
        (Array(TestImages.png.dropLast(5)), "image/png", 400, "invalid_image"),
        (Array(TestImages.jpeg.dropLast(2)), "image/jpeg", 400, "invalid_image"),
        (Array(TestImages.webp.dropLast(1)), "image/webp", 400, "invalid_image"),
        (TestImages.webp + [0], "image/webp", 400, "invalid_image"),
        (Array(TestImages.gif.prefix(6)), "image/gif", 400, "invalid_image"),
        ([], "image/png", 400, "empty_body"),
    ] as [([UInt8], String, Int, String)])
    func contentDecides(bytes: [UInt8], type: String, status: Int, code: String) {
        let r = upload(bytes, type: type)
        #expect(r.status == status && errorCode(r) == code, "\(r.text)")
        #expect(store.recordCount == 0)
    }

    @Test("a mismatch says both types")
    func mismatchMessage() {
        #expect(upload(TestImages.jpeg, type: "image/png").text.contains("JPEG image (image/jpeg), but Content-Type says image/png"))
    }

    @Test("path tricks and malformed ids never reach the store: 404 on the headers (paths arrive percent-decoded)", arguments: [
        "/v1/attachments/..", "/v1/attachments/../../relay-key", "/v1/attachments/../blobs/x", "/v1/attachments/%2e%2e",
        "/v1/attachments/%2e%2e%2frelay-key", "/v1/attachments/.AAAAAAAAAAAAAAAAAAAAA", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAA",
        "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAAA", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAA=", "/v1/attachments/AAAAAAAAAAAAAAAAAAAA/A",
        "/v1/attachments/AAAAAAAAAAAAAAAAAAAAA\u{0}", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAA+", "/v1/attachments/",
        "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAB",  // 22 characters whose last one has bits a 16-byte id cannot have
        "/v1/attachments/" + String(repeating: "a", count: 64),  // a blob's name (a SHA-256) is no id
        "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA/x",
    ])
    func pathTricks(path: String) {
        let r = send("GET", path)
        #expect(r.admitted == nil)
        #expect(r.response.status == 404 && errorCode(r.response) == "not_found")
        // `route` alone (no server in front) says the same.
        #expect(router.route(HTTPRequest(method: "GET", path: path, authorization: Self.token()), now: RouterTests.now).status == 404)
    }

    @Test("a well-formed id that was never handed out is 404, as a malformed one is")
    func unknownID() {
        _ = upload(TestImages.png)
        let r = send("GET", "/v1/attachments/" + AttachmentID.random().text)
        #expect(r.admitted == .attachment(.download, maxBodyBytes: 0))
        #expect(r.response.status == 404 && r.response.text == send("GET", "/v1/attachments/..").response.text)
    }

    @Test("attachment_max_bytes 0: uploads refused 403 on the headers; what is kept stays readable")
    func disabled() throws {
        let id = try #require(json(upload(TestImages.png))["id"] as? String)
        let r = send("POST", "/v1/attachments", TestImages.png, type: "image/png", maxBytes: 0)
        #expect(r.admitted == nil && r.response.status == 403 && errorCode(r.response) == "attachments_disabled")
        #expect(r.response.text.contains("attachment_max_bytes is 0"))
        #expect(router(maxBytes: 0).route(HTTPRequest(method: "POST", path: "/v1/attachments", authorization: Self.token(),
                                                       body: TestImages.png, contentType: "image/png"), now: RouterTests.now).status == 403)
        #expect(send("GET", "/v1/attachments/\(id)", maxBytes: 0).response.body == TestImages.png)
    }

    @Test("a relay without a store: uploads 403, downloads 404")
    func noStore() {
        let bare = HTTPRouter(backend: CoreBackend(), verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil, config: RelayCoreConfig())
        let post = bare.admit(HTTPRequest(method: "POST", path: "/v1/attachments", authorization: Self.token(), contentType: "image/png"),
                              now: RouterTests.now)
        guard case .answer(let refused) = post else { Issue.record("admitted: \(post)"); return }
        #expect(refused.status == 403 && errorCode(refused) == "attachments_disabled")
        #expect(bare.route(HTTPRequest(method: "GET", path: "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA", authorization: Self.token()),
                           now: RouterTests.now).status == 404)
    }

    @Test("the store fails: a full disk 507, anything else 500, damage 500; nothing is said of paths", arguments: [
        (AttachmentStoreError.full, 507, "insufficient_storage"), (.failed, 500, "storage_failed"), (.damaged, 500, "attachment_damaged"),
    ])
    func storeFailures(error: AttachmentStoreError, status: Int, code: String) {
        store.failure.withLock { $0 = error }
        let up = upload(TestImages.png)
        #expect(up.status == status && errorCode(up) == code)
        #expect(!up.text.contains("/"))
        let down = send("GET", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA").response
        #expect(down.status == status && errorCode(down) == code)
    }
}
