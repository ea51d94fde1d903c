import Foundation
import ParleyAuth
import ParleyCluster
import ParleyHTTP
import ParleyNet
import ParleyRelay
import ParleyRelayCore
import ParleyWire
import Testing

/// A backend over one core that keeps texts, as the relay runs: what the core logs goes to a real `TextStore` on
/// its own thread, and what the store answers runs on the core.
final class KeepingBackend: APIBackend, @unchecked Sendable {
    // Invariant: the core is used only under `lock` (the test's thread and the store's both call in).
    let core: RelayCore
    let store: TextStore
    private let lock = NSLock()
    private var thread: OSThread?
    /// What the store answered.
    private(set) var answered: [AdminCommand] = []
    var messages: TextStore? { store }

    init(store: TextStore) throws {
        let shared = RelayShared(config: RelayCoreConfig(), verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                                 cookieSecret: Array(repeating: 1, count: 32), workerPorts: [7400], keepsHistory: true)
        core = RelayCore(shared: shared, workerIndex: 0, log: MemoryLogSink(threshold: .error))
        self.store = store
        store.post = { [weak self] command in
            guard let self else { return }
            lock.withLock { answered.append(command) }
            _ = run(command)
        }
        thread = try OSThread(name: "test-store") { store.run() }
    }

    func stop() {
        store.stop()
        thread?.join()
    }

    func snapshots() -> [WorkerSnapshot] {
        lock.withLock { [WorkerSnapshot.capture(core, worker: 0, busyNanoseconds: 0, mixTime: DurationHistogram(), datagrams: DatagramCounters())] }
    }

    func execute(_ command: AdminCommand) -> AdminResult? { run(command) }

    private func run(_ command: AdminCommand) -> AdminResult {
        lock.withLock {
            let result = command.apply(to: core, now: Moment(monotonic: .origin + .seconds(1), unixMilliseconds: RouterTests.now * 1000))
            if !core.history.isEmpty { store.submitForTests(core.history.take()) }
            return result
        }
    }
}

/// A room text the relay could not keep is said so to its sender (issue 33, finding 6: after the disk filled, room
/// texts were silently not kept and the API still said 200).
@Suite("Room texts: the API's answer says whether the text was kept")
struct TextKeptTests {
    func router(_ backend: KeepingBackend) -> HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil, config: RelayCoreConfig())
    }

    func post(_ router: HTTPRouter, _ text: String) -> HTTPResponse {
        router.route(HTTPRequest(method: "POST", path: "/v1/rooms/r/messages", authorization: "Bearer " + RouterTests.token(admin: true),
                                 body: Array(#"{"text":"\#(text)"}"#.utf8)), now: RouterTests.now)
    }

    func errorCode(_ r: HTTPResponse) -> String? {
        let object = (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any]
        return (object?["error"] as? [String: Any])?["code"] as? String
    }

    @Test("a store that cannot keep the text (the cluster's Redis unreachable): 503 text_not_kept, saying the room got it — not 200")
    func notKept() throws {
        let store = try TextStore(redis: ClusterURL("redis://127.0.0.1:1")!, nodeID: "n",
                                     mac: ClusterMAC(root: Array(repeating: 1, count: 32), purpose: .texts), log: MemoryLogSink(threshold: .error))
        let backend = try KeepingBackend(store: store)
        defer { backend.stop() }
        #expect(backend.execute(.createRoom(name: "r", mode: nil, maxMembers: nil, emptyTimeout: nil)) == .ok)
        let r = post(router(backend), "lost")
        #expect(r.status == 503 && errorCode(r) == "text_not_kept", "\(r.text)")
        #expect(r.text.contains("reached the room's members") && r.text.contains("unreachable"), "\(r.text)")
        #expect(store.keeping.count == 0, "nothing left waiting")
    }

    @Test("a store that keeps it: 200 once it is committed, and the history lists it")
    func kept() throws {
        let folder = NSTemporaryDirectory() + "parley-kept-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = try TextStore(stateDirectory: folder, log: MemoryLogSink(threshold: .error))
        let backend = try KeepingBackend(store: store)
        defer { backend.stop() }
        #expect(backend.execute(.createRoom(name: "r", mode: nil, maxMembers: nil, emptyTimeout: nil)) == .ok)
        let start = Date()
        let r = post(router(backend), "kept")
        #expect(r.status == 200, "\(r.text)")
        #expect(Date().timeIntervalSince(start) < TimeInterval(HTTPRouter.keepWaitSeconds))
        #expect(try store.roomMessages(room: "r", before: nil, limit: 5).map(\.text) == ["kept"])
        // No room: 404 as before, and nothing waits.
        let none = router(backend).route(HTTPRequest(method: "POST", path: "/v1/rooms/nowhere/messages",
                                                     authorization: "Bearer " + RouterTests.token(admin: true), body: Array(#"{"text":"x"}"#.utf8)),
                                         now: RouterTests.now)
        #expect(none.status == 404 && store.keeping.count == 0)
    }
}
