import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyNet
import ParleyRelay
import ParleyRelayCore
import ParleyTestSupport
import Testing

/// What the router answers when the attachment store refuses an upload for its identity's quota, its rate or the
/// disk's reserve (issue 33, finding 6), over an in-memory store and over `AttachmentFiles` in a temporary directory.
/// The ledger and the files themselves are `ParleyRelayTests`' `AttachmentQuotaTests`.
@Suite("Attachments: the router's answers to the store's quota, rate and reserve refusals")
struct AttachmentQuotaRouteTests {
    let scratch = ScratchDirectory()
    let log = MemoryLogSink(threshold: .debug)
    static let t0: Int64 = 1_800_000_000_000

    func files(quota: AttachmentQuota = AttachmentQuota(), calls: SystemCalls = .kernel,
               now: Int64 = AttachmentQuotaRouteTests.t0) -> AttachmentFiles {
        AttachmentFiles(stateDirectory: scratch.path, log: log, calls: calls, quota: quota, largestUpload: 1000,
                        clock: { now })
    }

    func router(_ store: any AttachmentStore) -> HTTPRouter {
        HTTPRouter(backend: CoreBackend(), verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil,
                   config: RelayCoreConfig(), attachments: store, attachmentMaxBytes: 100_000)
    }

    @Test("the router asks the store on the headers: a rate refusal is 429 with Retry-After before the body; quota 507 quota_exceeded; the reserve 507 insufficient_storage")
    func routerAnswers() throws {
        defer { scratch.remove() }
        let memory = MemoryAttachmentStore()
        memory.refusal.withLock { $0 = .rate(identity: "ann", retryAfterSeconds: 12) }
        let headers = HTTPRequest(method: "POST", path: "/v1/attachments", authorization: AttachmentRouteTests.token(), contentType: "image/png",
                                  contentLength: 67)
        guard case .answer(let limited) = router(memory).admit(headers, now: RouterTests.now) else {
            Issue.record("admitted past its rate")
            return
        }
        #expect(limited.status == 429 && limited.headers["Retry-After"] == "12" && limited.text.contains("rate_limited"), "\(limited.text)")
        #expect(limited.headers["Access-Control-Allow-Origin"] == "*")
        memory.refusal.withLock { $0 = nil }
        #expect(router(memory).admit(headers, now: RouterTests.now) == .attachment(.upload, maxBodyBytes: 100_000))
        #expect(memory.admitted.withLock { $0.map(\.0) == ["ann"] && $0.map(\.1) == [67] })

        var quota = AttachmentQuota()
        quota.bytesPerIdentity = 100
        var calls = SystemCalls.kernel
        calls.freeBytes = { _ in 10 }
        for (store, status, code) in [(files(quota: quota), 507, "quota_exceeded"), (files(calls: calls), 507, "insufficient_storage")] {
            var request = headers
            request.body = TestImages.jpeg
            request.contentType = "image/jpeg"
            request.contentLength = nil
            let r = router(store).route(request, now: RouterTests.now)
            #expect(r.status == status && r.text.contains(code), "\(r.text)")
        }
    }

    @Test("a kept upload is answered with its pixels and when it expires")
    func answerSaysSizeAndExpiry() throws {
        defer { scratch.remove() }
        let store = files(now: RouterTests.now * 1000)
        var request = HTTPRequest(method: "POST", path: "/v1/attachments", authorization: AttachmentRouteTests.token(), contentType: "image/gif")
        request.body = TestImages.gif
        let r = router(store).route(request, now: RouterTests.now)
        #expect(r.status == 201, "\(r.text)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
        #expect(json["width"] as? Int == 1 && json["height"] as? Int == 1)
        #expect((json["expires_at"] as? NSNumber)?.int64Value == RouterTests.now * 1000 + 30 * 86_400_000)
    }
}
