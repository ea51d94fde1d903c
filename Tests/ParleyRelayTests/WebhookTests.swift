import Foundation
import ParleyHistory
import ParleyRelay
import ParleyTestSupport
import Testing

@testable import ParleyRelayCore

/// The webhooks' pure parts: the Standard Webhooks signature against the spec's example, relay events to webhook
/// bodies, and the outbox on a real SQLite file with a manual clock (`now` passed in), a fixed jitter.
@Suite("Webhooks: signature, event mapping, the outbox's order, retries, expiry and cap")
struct WebhookTests {
    // MARK: Signature

    /// The example of the Standard Webhooks specification (its reference libraries' tests use it too).
    @Test func signatureMatchesTheSpecExample() throws {
        let secret = try #require(WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        #expect(
            secret.signature(
                id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: #"{"test": 2432232314}"#)
                == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test(arguments: [
        "", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not base64!", "whsec_c2hvcnQ=",
        "whsec_" + String(repeating: "A", count: 100),
    ])
    func badSecretsAreRefused(_ text: String) {
        #expect(WebhookSecret(text) == nil)
    }

    // MARK: Event mapping

    static let t: Int64 = 1_614_265_330_123

    static func data(_ e: WebhookEvent?) throws -> [String: Any] {
        let e = try #require(e)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(e.body.utf8)) as? [String: Any])
        #expect(object["id"] as? String == e.id)
        #expect(object["type"] as? String == e.type)
        #expect(object["timestamp"] as? String == "2021-02-25T15:02:10.123Z")
        return try #require(object["data"] as? [String: Any])
    }

    @Test func roomAndMemberEvents() throws {
        let started = WebhookEvent.from(
            RelayEvent(kind: .roomStarted, room: "r", detail: "mix, audience", unixMilliseconds: Self.t), id: "msg_1")
        #expect(started?.type == "room.started" && started?.orderKey == "room:r")
        let s = try Self.data(started)
        #expect(s["mode"] as? String == "mix" && s["audience"] as? Bool == true)
        let left = WebhookEvent.from(
            RelayEvent(kind: .memberLeft, room: "r", identity: "bob", detail: "timed out", unixMilliseconds: Self.t),
            id: "msg_2")
        #expect(left?.type == "member.left")
        let l = try Self.data(left)
        #expect(
            l["identity"] as? String == "bob" && l["reason"] as? String == "timed out" && l["room"] as? String == "r")
        let closed = WebhookEvent.from(
            RelayEvent(kind: .roomClosed, room: "r", detail: "empty", unixMilliseconds: Self.t), id: "msg_3")
        let c = try Self.data(closed)
        #expect(closed?.type == "room.finished" && c["reason"] as? String == "empty")
        #expect(WebhookEvent.from(RelayEvent(kind: .speakers, room: "r", unixMilliseconds: Self.t), id: "x") == nil)
        #expect(
            WebhookEvent.from(RelayEvent(kind: .text, room: "r", detail: "hi", unixMilliseconds: Self.t), id: "x")
                == nil)
    }

    static func call(_ kind: CallEvent.Kind, _ reason: CallEndReason? = nil) -> RelayEvent {
        RelayEvent(
            CallEvent(
                kind: kind, callID: 7, caller: "alice", callee: "bob", room: kind == .answered ? "call-7" : "",
                endReason: reason, detail: "bob is not online", unixMilliseconds: Self.t))
    }

    @Test func callEvents() throws {
        #expect(WebhookEvent.from(Self.call(.started), id: "a")?.type == "call.ringing")
        #expect(try Self.data(WebhookEvent.from(Self.call(.answered), id: "b"))["room"] as? String == "call-7")
        let missed = WebhookEvent.from(Self.call(.ended, .unavailable), id: "c")
        #expect(missed?.type == "call.missed" && missed?.orderKey == "call:7")
        let m = try Self.data(missed)
        #expect(m["callee"] as? String == "bob" && m["reason"] as? String == "unavailable" && m["call_id"] as? Int == 7)
        #expect(WebhookEvent.from(Self.call(.ended, .noAnswer), id: "d")?.type == "call.missed")
        #expect(WebhookEvent.from(Self.call(.ended, .hungUp), id: "e") == nil)
        #expect(WebhookEvent.from(Self.call(.ended, .declined), id: "f") == nil)
    }

    @Test func textHeldCarriesNoText() throws {
        var e = RelayEvent(
            kind: .textHeld, room: "", identity: "alice", detail: "bob", unixMilliseconds: Self.t, attachments: ["x"])
        e.operatorOnly = true
        let held = WebhookEvent.from(e, id: "msg_h")
        #expect(held?.type == "text.held" && held?.orderKey == "text:bob")
        let d = try Self.data(held)
        #expect(d["from"] as? String == "alice" && d["to"] as? String == "bob" && d["attachments"] as? Int == 1)
        #expect(d.count == 3)
    }

    @Test func aClusterNodeNamesItselfInTheData() throws {
        let e = RelayEvent(kind: .memberJoined, room: "r", identity: "ann", detail: "Ann", unixMilliseconds: Self.t)
        #expect(try Self.data(WebhookEvent.from(e, id: "msg_n", node: "node-a"))["node"] as? String == "node-a")
        #expect(try Self.data(WebhookEvent.from(e, id: "msg_n"))["node"] == nil)
    }

    @Test func idsAreDistinctAndShaped() {
        let a = WebhookEvent.newID((0..<16).map { UInt8($0) }), b = WebhookEvent.newID((0..<16).map { UInt8(255 - $0) })
        #expect(a.hasPrefix("msg_") && a.count == 26 && a != b)
        #expect(!a.contains("+") && !a.contains("/") && !a.contains("="))
    }

    // MARK: Outbox

    static func event(_ n: Int, room: String = "r", at: Int64 = 1_000) -> WebhookEvent {
        WebhookEvent(
            id: "msg_\(n)", type: "member.joined", orderKey: "room:" + room, unixMilliseconds: at, data: ["n": n])
    }

    func outbox(_ dir: ScratchDirectory, window: Int64 = 60_000, capacity: Int = 100) throws -> WebhookOutbox {
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        return try WebhookOutbox(
            path: dir.path + "/webhooks.db", retryWindow: window, capacity: capacity, jitter: { $0 })
    }

    @Test func storeClaimAckInRoomOrder() throws {
        let dir = ScratchDirectory()
        defer { dir.remove() }
        let box = try outbox(dir)
        try box.store(
            [Self.event(1, room: "a"), Self.event(2, room: "b"), Self.event(3, room: "a")],
            for: ["http://x", "http://y"])
        #expect(box.count == 6)
        // Only each room's head is due: 1 (a) and 2 (b), not 3.
        var due = try box.due(endpoint: "http://x", now: 1_000)
        #expect(due.map(\.event.id) == ["msg_1", "msg_2"])
        // A room with an attempt under way is skipped.
        #expect(try box.due(endpoint: "http://x", now: 1_000, busy: ["room:a"]).map(\.event.id) == ["msg_2"])
        try box.delivered(due[0])
        due = try box.due(endpoint: "http://x", now: 1_000)
        #expect(due.map(\.event.id) == ["msg_3", "msg_2"] || due.map(\.event.id) == ["msg_2", "msg_3"])
        for d in due { try box.delivered(d) }
        #expect(try box.due(endpoint: "http://x", now: 1_000).isEmpty)
        #expect(try box.waiting(endpoint: "http://y") == 3)  // the other receiver is untouched
        #expect(box.count == 3)
    }

    @Test func aFailingHeadHoldsBackOnlyItsRoomWithBackoff() throws {
        let dir = ScratchDirectory()
        defer { dir.remove() }
        let box = try outbox(dir)
        try box.store([Self.event(1, room: "a"), Self.event(2, room: "a"), Self.event(3, room: "b")], for: ["u"])
        let head = try #require(try box.due(endpoint: "u", now: 1_000).first)
        #expect(head.event.id == "msg_1")
        #expect(try box.failed(head, now: 1_000) == .at(2_000))  // 1 s after the first failure
        let b = try box.due(endpoint: "u", now: 1_500)
        #expect(b.map(\.event.id) == ["msg_3"])  // room a waits, b goes on
        #expect(try box.nextDue(endpoint: "u", busy: ["room:b"]) == 2_000)
        var again = try #require(try box.due(endpoint: "u", now: 2_000).first { $0.event.orderKey == "room:a" })
        #expect(again.event.id == "msg_1" && again.attempts == 1)  // the same id on the retry
        #expect(try box.failed(again, now: 2_000) == .at(4_000))  // then 2 s, 4 s, … up to 10 minutes
        again.attempts = 30
        #expect(WebhookOutbox.backoff(attempts: 31) == WebhookOutbox.maxBackoff)
    }

    @Test func pastTheRetryWindowAnEventIsDroppedAndTheNextGoes() throws {
        let dir = ScratchDirectory()
        defer { dir.remove() }
        let box = try outbox(dir, window: 10_000)
        try box.store([Self.event(1), Self.event(2, at: 5_000)], for: ["u"])
        var head = try #require(try box.due(endpoint: "u", now: 1_000).first)
        // The last retry is at the window's end, not after it.
        head.attempts = 12
        #expect(try box.failed(head, now: 9_000) == .at(11_000))
        head = try #require(try box.due(endpoint: "u", now: 11_000).first)
        #expect(try box.failed(head, now: 11_000) == .expired)
        #expect(box.expired == 1)
        #expect(try box.due(endpoint: "u", now: 11_000).map(\.event.id) == ["msg_2"])
    }

    @Test func aFullReceiverDropsItsOldestOnly() throws {
        let dir = ScratchDirectory()
        defer { dir.remove() }
        let box = try outbox(dir, capacity: 3)
        try box.store((1...2).map { Self.event($0, room: "r\($0)") }, for: ["slow", "fast"])
        try box.store((3...4).map { Self.event($0, room: "r\($0)") }, for: ["slow"])
        #expect(box.dropped == 1)
        #expect(box.counts == ["slow": 3, "fast": 2])
        #expect(try box.due(endpoint: "slow", now: 1_000).map(\.event.id) == ["msg_2", "msg_3", "msg_4"])
        #expect(try box.due(endpoint: "fast", now: 1_000).map(\.event.id) == ["msg_1", "msg_2"])
    }

    @Test func whatWaitsSurvivesAReopenWithItsIdsAndBodies() throws {
        let dir = ScratchDirectory()
        defer { dir.remove() }
        var before: [WebhookOutbox.Delivery] = []
        do {
            let box = try outbox(dir)
            try box.store([Self.event(1, room: "a"), Self.event(2, room: "b")], for: ["u"])
            before = try box.due(endpoint: "u", now: 1_000)
            try box.failed(before[0], now: 1_000)
        }
        let reopened = try outbox(dir)
        #expect(reopened.count == 2)
        let after = try reopened.due(endpoint: "u", now: 10_000)
        #expect(after.map(\.event) == before.map(\.event))
        #expect(after.map(\.attempts) == [1, 0])
        #expect(try reopened.forget(endpointsOtherThan: ["v"]) == 2 && reopened.count == 0)
    }

    // MARK: Config

    @Test func configTakesReceiversAndRefusesHalfOfOne() throws {
        var config = RelayConfig()
        try config.set(
            "webhooks", #"[{"url": "http://127.0.0.1:9/a", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}]"#)
        #expect(config.webhooks.endpoints.map(\.url) == ["http://127.0.0.1:9/a"])
        try config.set("webhook", "https://hooks.example/b")
        #expect(throws: ConfigError.self) { try config.checkCredentials() }  // no secret yet
        try config.set("webhook_secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
        try config.checkCredentials()
        #expect(config.webhooks.endpoints.map(\.url) == ["https://hooks.example/b"])
        #expect(throws: ConfigError.self) { try config.set("webhook", "ftp://x") }
        #expect(throws: ConfigError.self) { try config.set("webhook_secret", "not-a-secret") }
        #expect(throws: ConfigError.self) { try config.set("webhook_retry_s", "5") }
        try config.set("webhook_retry_s", "3600")
        #expect(config.webhooks.retrySeconds == 3_600)
    }
}
