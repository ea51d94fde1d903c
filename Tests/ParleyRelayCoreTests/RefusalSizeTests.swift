import ParleyAuth
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// No refusal is larger than the request that caused it, even from an address that proved it can receive (a valid
/// cookie): the reason text is cut to fit, the code always goes out.
@Suite("Refusals never outgrow their requests")
struct RefusalSizeTests {
    static let attacker = PeerAddress(ipv4: 203, 0, 113, 7, port: 4444)

    /// A cookie-verified join or register with a one-byte token (the smallest that parses), and nothing optional.
    static func tinyRequest(_ net: FakeNetwork, register: Bool) throws -> [UInt8] {
        let cookie = net.shared.cookies.mint(for: attacker, unixSeconds: net.now.unixSeconds)
        let message: SignalMessage = register
            ? .register(RegisterRequest(token: "x", cookie: cookie, nonce: []))
            : .join(JoinRequest(token: "x", room: "r", cookie: cookie, nonce: []))
        return try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: message).serialized()
    }

    @Test("a cookie-verified request with a tiny bad token is refused in no more bytes than it sent, code intact",
          arguments: [false, true])
    func tinyBadToken(register: Bool) throws {
        let net = FakeNetwork()
        let request = try Self.tinyRequest(net, register: register)
        net.deliverToRelay(request, from: Self.attacker, port: 7400)
        net.exchange()
        let answers = net.sent.filter { $0.to == Self.attacker }
        #expect(answers.count == 1)
        let answer = try #require(answers.first)
        #expect(answer.bytes.count <= request.count, "\(answer.bytes.count) bytes back for \(request.count)")
        guard case .refused(let code, let reason) = try SignalDatagram(parsing: answer.bytes).message else {
            Issue.record("no refusal"); return
        }
        #expect(code == .tokenMalformed)
        var whole = ""
        do { _ = try net.shared.verifier.verify("x", now: net.now.unixSeconds) } catch { whole = error.reason }
        #expect(!reason.isEmpty && whole.hasPrefix(reason), "\(reason)")   // the start of the reason, cut on a boundary
        #expect(net.core.counters.joinsRefused[RefusalCode.tokenMalformed.rawValue] == 1)
    }

    @Test("a refusal whose reason fits is sent whole")
    func roomyRequestGetsTheWholeReason() throws {
        let net = FakeNetwork()
        let cookie = net.shared.cookies.mint(for: Self.attacker, unixSeconds: net.now.unixSeconds)
        let token = net.token("mallory", secret: "another-secret-0123456789")
        let request = try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: .join(JoinRequest(
            token: token, room: "lobby", cookie: cookie, nonce: [UInt8](repeating: 1, count: 16)))).serialized()
        net.deliverToRelay(request, from: Self.attacker, port: 7400)
        net.exchange()
        let answer = try #require(net.sent.first { $0.to == Self.attacker })
        #expect(answer.bytes.count <= request.count)
        guard case .refused(let code, let reason) = try SignalDatagram(parsing: answer.bytes).message else {
            Issue.record("no refusal"); return
        }
        #expect(code == .tokenBadSignature)
        #expect(reason == TokenError.badSignature.reason)
    }

    @Test("a reason is cut on a character boundary", arguments: [0, 1, 2, 3, 4, 5, 9, 40])
    func cutOnCharacterBoundary(bytes: Int) {
        let reason = "room «ça» est plein — 🎧"
        let cut = reason.prefix(utf8Bytes: bytes)
        #expect(cut.utf8.count <= bytes)
        #expect(reason.hasPrefix(cut))
        #expect(reason.utf8.count <= bytes ? cut == reason : cut.utf8.count > bytes - 4)
    }
}
