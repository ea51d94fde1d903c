import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import Synchronization
import Testing

/// A backend that says whether it is ready.
final class ReadinessBackend: APIBackend, Sendable {
    let reason = Mutex<String?>(nil)
    var notReadyReason: String? { reason.withLock { $0 } }
    func snapshots() -> [WorkerSnapshot] { [] }
    func execute(_ command: AdminCommand) -> AdminResult? { nil }
}

@Suite("/readyz fails from the first moment of a drain or a stop; /healthz stays live")
struct ReadinessTests {
    @Test("ready: 200 on both; draining or stopping: /readyz 503 with the reason, /healthz 200; no token needed")
    func readiness() {
        let backend = ReadinessBackend()
        let router = HTTPRouter(
            backend: backend, verifier: TokenVerifier(keys: ["k": "a-secret-of-enough-bytes"]),
            signer: nil, config: RelayCoreConfig())
        func get(_ path: String) -> HTTPResponse {
            guard case .answer(let r) = router.admit(HTTPRequest(method: "GET", path: path), now: 0) else {
                return HTTPResponse(status: 0, body: [])
            }
            return r
        }
        #expect(get("/readyz").status == 200 && get("/healthz").status == 200)
        for reason in ["draining", "stopping"] {
            backend.reason.withLock { $0 = reason }
            let r = get("/readyz")
            #expect(r.status == 503)
            #expect(String(decoding: r.body, as: UTF8.self) == #"{"detail":"\#(reason)","ok":false}"# + "\n")
            #expect(get("/healthz").status == 200)
        }
        #expect(get("/readyz").status == 503)
        #expect(router.admit(HTTPRequest(method: "POST", path: "/readyz"), now: 0) != .route)
    }
}
