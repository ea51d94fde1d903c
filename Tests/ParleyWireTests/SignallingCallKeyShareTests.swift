import Testing
@testable import ParleyWire

/// The end-to-end key share (tag 48) on call invite, answer, incoming call and the answered status: laid out as
/// documented, absent or exactly 32 bytes, skipped by a reader that does not know it.
@Suite("Signalling v1: call key shares")
struct SignallingCallKeyShareTests {
    static let share = (0..<32).map { UInt8($0) }
    static let shareField: [UInt8] = [0x30, 0x00, 0x20] + share  // key share (48), 32 bytes
    static func header(_ type: UInt8, sequence: UInt8 = 1) -> [UInt8] { [0x50, 0x01, type, 0, 0, 0, 0, 1, 0, 0, 0, sequence, 0, 0, 0, 0] }
    static let id7: [UInt8] = [0x21, 0x00, 0x04, 0, 0, 0, 7]

    static let layouts: [(String, SignalMessage, [UInt8])] = [
        ("invite", .callInvite(callID: 7, to: "bob", keyShare: share),
         header(0x09) + id7 + [0x19, 0x00, 0x03, 0x62, 0x6F, 0x62] + shareField),
        ("answer", .callAnswer(callID: 7, accept: true, keyShare: share),
         header(0x0A) + id7 + [0x22, 0x00, 0x01, 0x01] + shareField),
        ("incoming call", .incomingCall(callID: 7, fromIdentity: "al", fromName: "", keyShare: share),
         header(0x8C) + id7 + [0x0C, 0x00, 0x02, 0x61, 0x6C] + shareField),
        ("answered", .callStatus(CallStatus(callID: 7, state: .answered, room: "call-x", token: "a.b", keyShare: share)),
         header(0x8D) + id7 + [0x24, 0x00, 0x01, 0x02,                          // call state (36) = answered
                               0x02, 0x00, 0x06, 0x63, 0x61, 0x6C, 0x6C, 0x2D, 0x78,  // room (2) "call-x"
                               0x01, 0x00, 0x03, 0x61, 0x2E, 0x62] + shareField),     // token (1) "a.b"
    ]

    @Test("each message carries the share as tag 48 after its other fields", arguments: 0..<4)
    func layout(index: Int) throws {
        let (label, message, bytes) = Self.layouts[index]
        let datagram = SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: message)
        #expect(try datagram.serialized() == bytes, "\(label)")
        #expect(try SignalDatagram(parsing: bytes) == datagram, "\(label)")
    }

    @Test("without a share nothing is written (an old peer's datagram), and it parses as an empty share")
    func absent() throws {
        let datagram = SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .callInvite(callID: 7, to: "bob"))
        let bytes = try datagram.serialized()
        #expect(!bytes.contains(0x30))
        guard case .callInvite(_, _, let share) = try SignalDatagram(parsing: bytes).message else { Issue.record("not an invite"); return }
        #expect(share.isEmpty)
    }

    @Test("a share of any length but 32 is refused", arguments: [1, 16, 31, 33, 64, 4000])
    func badLength(count: Int) {
        let field: [UInt8] = [0x30, UInt8(count >> 8), UInt8(truncatingIfNeeded: count)] + [UInt8](repeating: 7, count: count)
        for bytes in [Self.header(0x09) + Self.id7 + [0x19, 0x00, 0x01, 0x62] + field,
                      Self.header(0x0A) + Self.id7 + [0x22, 0x00, 0x01, 0x01] + field,
                      Self.header(0x8C) + Self.id7 + [0x0C, 0x00, 0x01, 0x61] + field,
                      Self.header(0x8D) + Self.id7 + [0x24, 0x00, 0x01, 0x01] + field] {
            #expect(throws: WireError.badLength) { try SignalDatagram(parsing: bytes) }
        }
    }

    @Test("an unknown tag beside the share is skipped: readers ignore what they do not know")
    func unknownTagsSkipped() throws {
        let bytes = Self.header(0x09) + Self.id7 + [0x19, 0x00, 0x01, 0x62] + [0xEE, 0x00, 0x02, 1, 2] + Self.shareField
        guard case .callInvite(7, "b", let share) = try SignalDatagram(parsing: bytes).message else { Issue.record("not an invite"); return }
        #expect(share == Self.share)
    }
}
