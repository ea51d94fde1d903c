import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import Testing

/// A `CoreBackend` that keeps recordings in `directory`.
final class CatalogBackend: APIBackend, @unchecked Sendable {
    let inner = CoreBackend()
    let recordings: RecordingCatalog?
    init(stateDirectory: String?) { recordings = stateDirectory.map { RecordingCatalog(stateDirectory: $0) } }
    func snapshots() -> [WorkerSnapshot] { inner.snapshots() }
    func execute(_ command: AdminCommand) -> AdminResult? { inner.execute(command) }
}

@Suite("HTTP router: room recordings — start, stop, list, download; ids checked before any path is made")
struct RecordingRouteTests {
    let state = NSTemporaryDirectory() + "parley-recroutes-\(UInt32.random(in: 0...UInt32.max))"

    func router(_ backend: any APIBackend) -> HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig())
    }

    func call(_ r: HTTPRouter, _ method: String, _ path: String, admin: Bool = true, query: [String: String] = [:]) -> HTTPResponse {
        r.route(HTTPRequest(method: method, path: path, authorization: "Bearer " + RouterTests.token(admin: admin), query: query), now: RouterTests.now)
    }

    func json(_ r: HTTPResponse) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:] }

    @Test("start → 201 with the id, members' room marked; again → 409; stop → 200, again → 404; unknown room → 404; member token → 403")
    func startAndStop() throws {
        let backend = CatalogBackend(stateDirectory: state)
        let r = router(backend)
        #expect(backend.execute(.createRoom(name: "lobby", mode: nil, maxMembers: nil, emptyTimeout: nil)) == .ok)
        let started = call(r, "POST", "/v1/rooms/lobby/recording")
        #expect(started.status == 201, "\(started.text)")
        let id = try #require(json(started)["recording"] as? String)
        #expect(id.count == 16 && id.allSatisfy(\.isHexDigit))
        #expect(json(started)["files"] as? String == "/v1/recordings?recording=" + id)
        let rooms = json(call(r, "GET", "/v1/rooms"))["rooms"] as? [[String: Any]]
        #expect(rooms?.first?["recording"] as? String == id)
        #expect(call(r, "POST", "/v1/rooms/lobby/recording").status == 409)
        #expect(call(r, "DELETE", "/v1/rooms/lobby/recording").status == 200)
        #expect(call(r, "DELETE", "/v1/rooms/lobby/recording").status == 404)
        #expect(call(r, "POST", "/v1/rooms/nowhere/recording").status == 404)
        #expect(call(r, "POST", "/v1/rooms/lobby/recording", admin: false).status == 403)
        #expect(call(r, "PUT", "/v1/rooms/lobby/recording").status == 405)
    }

    @Test("a relay without a state directory keeps no recordings: 503 with a reason")
    func noStateDirectory() {
        let r = router(CatalogBackend(stateDirectory: nil))
        for (method, path) in [("POST", "/v1/rooms/lobby/recording"), ("GET", "/v1/recordings"), ("GET", "/v1/recordings/0000000000000001-mix")] {
            let answer = call(r, method, path)
            #expect(answer.status == 503 && answer.text.contains("without a state directory"), "\(method) \(path): \(answer.text)")
        }
    }

    @Test("the list reads each recording's manifest, newest first, with sizes from the disk and download URLs; the download names the file")
    func listAndDownload() throws {
        let folder = state + "/recordings/00000000000000aa"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let manifest = #"{"id":"00000000000000aa","room":"lobby","mode":"forward","started_at_ms":1000,"stopped_at_ms":5000,"reason":"stopped by the backend","files":[{"file":"t0000002a.opus","kind":"track","identity":"alice","name":"Alice","ssrc":42,"duration_ms":3900,"bytes":5}]}"#
        try Data(manifest.utf8).write(to: URL(fileURLWithPath: folder + "/recording.json"))
        try Data([1, 2, 3, 4, 5, 6, 7]).write(to: URL(fileURLWithPath: folder + "/t0000002a.opus"))
        let newer = state + "/recordings/00000000000000bb"
        try FileManager.default.createDirectory(atPath: newer, withIntermediateDirectories: true)
        try Data(#"{"id":"00000000000000bb","room":"hall","mode":"mix","started_at_ms":9000,"files":[{"file":"mix.opus","kind":"mix","duration_ms":10,"bytes":0}]}"#.utf8)
            .write(to: URL(fileURLWithPath: newer + "/recording.json"))
        // Not recordings: a stray folder, a manifest naming a file outside its folder.
        try FileManager.default.createDirectory(atPath: state + "/recordings/notes", withIntermediateDirectories: true)
        let odd = state + "/recordings/00000000000000cc"
        try FileManager.default.createDirectory(atPath: odd, withIntermediateDirectories: true)
        try Data(#"{"room":"x","files":[{"file":"../../relay-key","kind":"track"}]}"#.utf8).write(to: URL(fileURLWithPath: odd + "/recording.json"))

        let r = router(CatalogBackend(stateDirectory: state))
        let list = try #require(json(call(r, "GET", "/v1/recordings"))["recordings"] as? [[String: Any]])
        #expect(list.map { $0["id"] as? String } == ["00000000000000bb-mix", "00000000000000aa-t0000002a"])
        let alice = list[1]
        #expect(alice["room"] as? String == "lobby" && alice["kind"] as? String == "track" && alice["identity"] as? String == "alice")
        #expect(alice["size"] as? Int == 7 && alice["duration_ms"] as? Int == 3900 && alice["stopped_at"] as? Int == 5000)
        #expect(alice["url"] as? String == "/v1/recordings/00000000000000aa-t0000002a")
        #expect(list[0]["stopped_at"] == nil)  // still running
        let one = try #require(json(call(r, "GET", "/v1/recordings", query: ["recording": "00000000000000aa"]))["recordings"] as? [[String: Any]])
        #expect(one.count == 1)

        let download = call(r, "GET", "/v1/recordings/00000000000000aa-t0000002a")
        #expect(download.status == 200 && download.contentType == "audio/ogg")
        #expect(download.file == folder + "/t0000002a.opus")
        #expect(download.headers["X-Content-Type-Options"] == "nosniff")
        #expect(call(r, "GET", "/v1/recordings/00000000000000aa-t0000002a", admin: false).status == 403)
    }

    @Test("ids that are not a recording file's are 404 before any path is made",
          arguments: ["..", "00000000000000aa-..", "00000000000000aa-t0000002a/../../relay-key", "00000000000000aa", "00000000000000AA-mix",
                      "00000000000000aa-t2a", "00000000000000aa-t0000002g", "00000000000000aa-mix.opus", "%2e%2e", "00000000000000aa--mix",
                      "0000000000000aa-mix", "00000000000000aa-t0000002a-mix"])
    func pathTricks(id: String) {
        let r = router(CatalogBackend(stateDirectory: state))
        let answer = call(r, "GET", "/v1/recordings/" + id)
        #expect(answer.status == 404 && answer.file == nil, "\(id): \(answer.status)")
    }
}
