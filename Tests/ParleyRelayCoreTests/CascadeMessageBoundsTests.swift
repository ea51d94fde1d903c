import ParleyWire
import Testing
@testable import ParleyRelayCore

/// A node passes what a cascade body carries on to its own members as signalling: a room's or a direct text's
/// fragments, an incoming call with the caller's key share, a call status. A member's client refuses a datagram its
/// codec does not accept and never acknowledges it, and after `maxAttempts` unacknowledged sends the relay ends the
/// member's session. So the link's parser refuses what the members' codec refuses: a text of more than
/// `Signalling.maxTextFragments` fragments, a key share that is neither absent nor 32 bytes, a call status that names a
/// room and a token other than exactly when answered. Found by the cascade fuzz target (`Tests/Fuzz/Cascade`).
@Suite("Cascade bodies: only what a node's members can take")
struct CascadeMessageBoundsTests {
    static func parse(_ bytes: [UInt8]) -> CascadeMessage? { bytes.withUnsafeBytes { CascadeMessage(parsing: $0) } }

    /// Whether a member's codec takes `message` (a reliable datagram of its session): serialized, then parsed back.
    static func memberTakes(_ message: SignalMessage) -> Bool {
        let datagram = SignalDatagram(connectionID: 9, sequence: 1, ack: 0, message: message)
        guard let bytes = try? datagram.serialized() else { return false }
        return (try? SignalDatagram(parsing: bytes))?.message == message
    }

    @Test("the fuzzer's three finds are refused", arguments: [
        [0x05, 0x00,                    // invite, room ""
         0xa1, 0xf7, 0x07, 0x01,        // call id
         0x00, 0x00, 0x01, 0x01,        // caller "", name "", callee "\u{1}"
         0x01, 0x00],                   // a key share of 1 byte
        [0x07, 0x00, 0x00,              // call status, room "", to ""
         0x00, 0x00, 0x00, 0xda, 0x04,  // call id 218, state noAnswer
         0x00, 0x00,                    // reason "", room ""
         0x00, 0x07, 0x2f, 0xff, 0xff, 0x06, 0x21, 0x00, 0x16,  // a 7-byte token on a call not answered
         0x00],                         // no key share
        [0x04, 0x00,                    // text, room ""
         0x00, 0x00, 0x00, 0x00,        // from member 0
         0x06, 0x57, 0x00, 0x00, 0x01, 0x01, 0x00,  // to: 6 bytes
         0x00, 0x00, 0x00, 0x00,        // message id 0
         0x00, 0x2f,                    // fragment 0 of 47
         0x00, 0x00],                   // no bytes
    ] as [[UInt8]])
    func fuzzerFinds(body: [UInt8]) {
        #expect(Self.parse(body) == nil)
    }

    @Test("a text's fragment count: taken up to 5, as the members' codec takes it", arguments: 1...7)
    func fragmentCount(count: Int) {
        let fragment = TextFragment(messageID: 4, index: 0, count: UInt8(count), chunk: Array("hi".utf8))
        let text = SignalMessage.text(fromMemberID: 3, fromIdentity: "ann", direct: false, fragment: fragment)
        let memberTakes = Self.memberTakes(text)
        #expect(memberTakes == (count <= Signalling.maxTextFragments))
        for message in [CascadeMessage.text(room: "lobby", from: 3, to: "", fragment: fragment),
                        .directText(from: "ann", to: "bob", fragment: fragment)] {
            #expect((Self.parse(message.bytes) == message) == memberTakes, "\(message)")
            #expect((Self.parse(message.bytes) == nil) == !memberTakes, "\(message)")
        }
    }

    @Test("a key share: absent or 32 bytes, on an invite and on an answered call's status",
          arguments: [0, 1, 16, 31, 32, 33, 64, 255])
    func keyShareLength(length: Int) {
        let share = [UInt8](repeating: 0x42, count: length)
        let incoming = SignalMessage.incomingCall(callID: 5, fromIdentity: "ann", fromName: "Ann", keyShare: share)
        let memberTakes = Self.memberTakes(incoming)
        #expect(memberTakes == (length == 0 || length == CallKeyShare.length))
        let status = CallStatus(callID: 5, state: .answered, room: "call-x", token: "t.o.k", keyShare: share)
        #expect(Self.memberTakes(.callStatus(status)) == memberTakes)
        for message in [CascadeMessage.invite(callID: 5, caller: "ann", name: "Ann", callee: "bob", keyShare: share),
                        .callStatus(to: "ann", status)] {
            #expect((Self.parse(message.bytes) == message) == memberTakes, "\(message)")
            #expect((Self.parse(message.bytes) == nil) == !memberTakes, "\(message)")
        }
    }

    @Test("a call status names a room and its token exactly when answered", arguments: [
        (CallState.answered, "call-x", "t.o.k"), (.answered, "", ""), (.answered, "call-x", ""),
        (.answered, "", "t.o.k"), (.ringing, "", ""), (.ended, "", ""), (.ended, "call-x", "t.o.k"),
        (.noAnswer, "", "t.o.k"), (.declined, "call-x", ""),
    ])
    func callStatusRoom(state: CallState, room: String, token: String) {
        let status = CallStatus(callID: 5, state: state, reason: "why", room: room, token: token)
        let memberTakes = Self.memberTakes(.callStatus(status))
        #expect(memberTakes == ((state == .answered) == !room.isEmpty && room.isEmpty == token.isEmpty))
        let message = CascadeMessage.callStatus(to: "ann", status)
        #expect((Self.parse(message.bytes) == message) == memberTakes)
        #expect((Self.parse(message.bytes) == nil) == !memberTakes)
    }
}
