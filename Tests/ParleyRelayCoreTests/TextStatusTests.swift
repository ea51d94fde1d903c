import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Every text a member or presence session sends gets exactly one `text status`, also when the relay cannot deliver
/// it: too long, not UTF-8, empty, or fragments out of order — failed, with the reason, and nothing reaches anyone.
@Suite("Text statuses for texts the relay refuses")
struct TextStatusTests {
    /// Texts `ClientSession.sendText` would never build, as a client that skips its checks sends them.
    static let refused: [(label: String, fragments: [TextFragment], reason: String)] = [
        ("4,500 bytes in five full fragments", (0..<5).map {
            TextFragment(messageID: 7, index: UInt8($0), count: 5, chunk: [UInt8](repeating: 0x61, count: 900))
        }, "a text must be at most 4096 bytes"),
        ("invalid UTF-8", [TextFragment(messageID: 7, index: 0, count: 1, chunk: [0x68, 0x69, 0xFF, 0xFE])],
         "a text must be valid UTF-8"),
        ("a lone surrogate encoded as UTF-8", [TextFragment(messageID: 7, index: 0, count: 1, chunk: [0xED, 0xA0, 0x80])],
         "a text must be valid UTF-8"),
        ("empty", [TextFragment(messageID: 7, index: 0, count: 1, chunk: [])], "a text must not be empty"),
        ("second fragment first", [TextFragment(messageID: 7, index: 1, count: 2, chunk: [0x61])],
         "text fragments arrived out of order"),
    ]

    /// Delivers `messages` as the next reliable messages of session `connectionID`, from `address`.
    static func sendRaw(_ net: FakeNetwork, _ messages: [SignalMessage], connectionID: UInt32, after ack: UInt32,
                        from address: PeerAddress) throws {
        for (i, m) in messages.enumerated() {
            let d = try SignalDatagram(connectionID: connectionID, sequence: ack &+ 1 &+ UInt32(i), ack: 0, message: m).serialized()
            net.deliverToRelay(d, from: address, port: 7400)
        }
    }

    @Test("a room text the relay cannot deliver is answered failed, with the reason", arguments: 0..<5)
    func roomText(index: Int) throws {
        let (label, fragments, reason) = Self.refused[index]
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let member = try #require(net.core.member(identity: "alice"))
        try Self.sendRaw(net, fragments.map { .sendText(to: "", fragment: $0) }, connectionID: member.connectionID,
                         after: member.session.channel.ackNumber, from: alice.address)
        net.exchange()
        let statuses = alice.events.filter { if case .textStatus = $0 { true } else { false } }
        #expect(statuses == [.textStatus(messageID: 7, delivered: false, reason: reason)], "\(label)")
        #expect(!bob.events.contains { if case .text = $0 { true } else { false } }, "\(label)")
    }

    @Test("a direct text the relay cannot deliver is answered failed, with the reason", arguments: 0..<5)
    func directText(index: Int) throws {
        let (label, fragments, reason) = Self.refused[index]
        let world = CallWorld()
        let alice = world.addPresence("alice"), bob = world.addPresence("bob")
        world.registerAll()
        let session = try #require(world.core.presence.sessions(of: "alice").first?.session)
        try Self.sendRaw(world.net, fragments.map { .sendText(to: "bob", fragment: $0) }, connectionID: session.connectionID,
                         after: session.channel.ackNumber, from: alice.address)
        world.exchange()
        let statuses = alice.events.filter { if case .textStatus = $0 { true } else { false } }
        #expect(statuses == [.textStatus(messageID: 7, delivered: false, reason: reason)], "\(label)")
        #expect(!bob.events.contains { if case .text = $0 { true } else { false } }, "\(label)")
    }

    @Test("a text cut short by the next one is answered failed, and the next one still goes through")
    func interruptedText() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        let member = try #require(net.core.member(identity: "alice"))
        try Self.sendRaw(net, [
            .sendText(to: "", fragment: TextFragment(messageID: 7, index: 0, count: 2, chunk: Array("half".utf8))),
            .sendText(to: "", fragment: TextFragment(messageID: 8, index: 0, count: 1, chunk: Array("whole".utf8))),
        ], connectionID: member.connectionID, after: member.session.channel.ackNumber, from: alice.address)
        net.exchange()
        let statuses = alice.events.filter { if case .textStatus = $0 { true } else { false } }
        #expect(statuses == [.textStatus(messageID: 7, delivered: false, reason: "text fragments arrived out of order"),
                             .textStatus(messageID: 8, delivered: true, reason: "")])
        #expect(bob.events.contains(.text(from: "alice", direct: false, text: "whole")))
    }
}
