import Testing
@testable import ParleyWire

@Suite("Signalling v1: presence and call messages")
struct SignallingCallTests {
    static let messages: [SignalMessage] = [
        .register(RegisterRequest(token: "a.b.c", nonce: [UInt8](repeating: 9, count: 16))),
        .register(RegisterRequest(token: "a.b.c", cookie: [UInt8](repeating: 5, count: 20), nonce: [UInt8](repeating: 9, count: 16))),
        .callInvite(callID: 0x8000_0001, to: "bob"),
        .callAnswer(callID: 7, accept: true), .callAnswer(callID: 7, accept: false),
        .callHangup(callID: 0xFFFF_FFFF),
        .incomingCall(callID: 7, fromIdentity: "alice", fromName: "Alice Ä"),
        .incomingCall(callID: 8, fromIdentity: "alice", fromName: ""),
        .callStatus(CallStatus(callID: 1, state: .ringing)),
        .callStatus(CallStatus(callID: 1, state: .answered, room: "call-0123456789abcdef0123456789abcdef", token: String(repeating: "t", count: 400))),
        .callStatus(CallStatus(callID: 1, state: .declined, reason: "busy")),
        .callStatus(CallStatus(callID: 1, state: .noAnswer, reason: "no answer after 30 s")),
        .callStatus(CallStatus(callID: 1, state: .unavailable, reason: "bob is not online")),
        .callStatus(CallStatus(callID: 1, state: .ended, reason: "hung up by alice")),
        .callStatus(CallStatus(callID: 1, state: .failed, reason: "you cannot call yourself")),
    ]

    @Test("every presence and call message survives a round trip", arguments: messages)
    func roundTrip(message: SignalMessage) throws {
        let datagram = SignalDatagram(connectionID: 0x1234_5678, sequence: message.isReliable ? 42 : 0, ack: 17, message: message)
        let bytes = try datagram.serialized()
        #expect(bytes.count <= Signalling.maxDatagramSize)
        #expect(try SignalDatagram(parsing: bytes) == datagram)
    }

    @Test("type codes and reliability are as documented")
    func typeCodes() {
        let expected: [(SignalMessage, UInt8, Bool)] = [
            (Self.messages[0], 0x08, false), (Self.messages[2], 0x09, true), (Self.messages[3], 0x0A, true),
            (Self.messages[5], 0x0B, true), (Self.messages[6], 0x8C, true), (Self.messages[8], 0x8D, true),
        ]
        for (m, code, reliable) in expected {
            #expect(m.typeCode == code)
            #expect(m.isReliable == reliable)
        }
    }

    static let layouts: [(String, SignalDatagram, [UInt8])] = [
        ("register", SignalDatagram(connectionID: 0, sequence: 0, ack: 0,
                                    message: .register(RegisterRequest(token: "t", nonce: [UInt8](repeating: 9, count: 16)))),
         [0x50, 0x01, 0x08, 0x00,  0, 0, 0, 0,  0, 0, 0, 0,  0, 0, 0, 0,   // magic, v1, type 0x08, no connection/seq/ack
          0x01, 0x00, 0x01, 0x74,                                           // token (1) "t"
          0x04, 0x00, 0x10] + [UInt8](repeating: 9, count: 16)),            // nonce (4), 16 bytes
        ("call invite", SignalDatagram(connectionID: 0x0A0B_0C0D, sequence: 3, ack: 2, message: .callInvite(callID: 0x0102_0304, to: "bob")),
         [0x50, 0x01, 0x09, 0x00,  0x0A, 0x0B, 0x0C, 0x0D,  0, 0, 0, 3,  0, 0, 0, 2,
          0x21, 0x00, 0x04, 0x01, 0x02, 0x03, 0x04,                         // call id (33)
          0x19, 0x00, 0x03, 0x62, 0x6F, 0x62]),                             // to (25) "bob"
        ("call answer", SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .callAnswer(callID: 7, accept: true)),
         [0x50, 0x01, 0x0A, 0x00,  0, 0, 0, 1,  0, 0, 0, 1,  0, 0, 0, 0,
          0x21, 0x00, 0x04, 0, 0, 0, 7,                                     // call id (33)
          0x22, 0x00, 0x01, 0x01]),                                         // accept (34) = 1
        ("call hang-up", SignalDatagram(connectionID: 1, sequence: 2, ack: 0, message: .callHangup(callID: 7)),
         [0x50, 0x01, 0x0B, 0x00,  0, 0, 0, 1,  0, 0, 0, 2,  0, 0, 0, 0,
          0x21, 0x00, 0x04, 0, 0, 0, 7]),
        ("incoming call", SignalDatagram(connectionID: 1, sequence: 4, ack: 1, message: .incomingCall(callID: 5, fromIdentity: "al", fromName: "Al")),
         [0x50, 0x01, 0x8C, 0x00,  0, 0, 0, 1,  0, 0, 0, 4,  0, 0, 0, 1,
          0x21, 0x00, 0x04, 0, 0, 0, 5,                                     // call id (33)
          0x0C, 0x00, 0x02, 0x61, 0x6C,                                     // identity (12) "al"
          0x23, 0x00, 0x02, 0x41, 0x6C]),                                   // name (35) "Al"
        ("call status answered", SignalDatagram(connectionID: 1, sequence: 5, ack: 1,
                                                message: .callStatus(CallStatus(callID: 5, state: .answered, room: "call-x", token: "a.b"))),
         [0x50, 0x01, 0x8D, 0x00,  0, 0, 0, 1,  0, 0, 0, 5,  0, 0, 0, 1,
          0x21, 0x00, 0x04, 0, 0, 0, 5,                                     // call id (33)
          0x24, 0x00, 0x01, 0x02,                                           // call state (36) = 2 answered
          0x02, 0x00, 0x06, 0x63, 0x61, 0x6C, 0x6C, 0x2D, 0x78,             // room (2) "call-x"
          0x01, 0x00, 0x03, 0x61, 0x2E, 0x62]),                             // token (1) "a.b"
        ("call status declined", SignalDatagram(connectionID: 1, sequence: 6, ack: 1,
                                                message: .callStatus(CallStatus(callID: 5, state: .declined, reason: "busy"))),
         [0x50, 0x01, 0x8D, 0x00,  0, 0, 0, 1,  0, 0, 0, 6,  0, 0, 0, 1,
          0x21, 0x00, 0x04, 0, 0, 0, 5,
          0x24, 0x00, 0x01, 0x03,                                           // call state (36) = 3 declined
          0x13, 0x00, 0x04, 0x62, 0x75, 0x73, 0x79]),                       // reason (19) "busy"
    ]

    @Test("presence and call messages are laid out as documented", arguments: 0..<7)
    func layout(index: Int) throws {
        let (label, datagram, bytes) = Self.layouts[index]
        #expect(try datagram.serialized() == bytes, "\(label)")
        #expect(try SignalDatagram(parsing: bytes) == datagram, "\(label)")
    }

    static func header(_ type: UInt8, sequence: UInt8 = 1) -> [UInt8] { [0x50, 0x01, type, 0, 0, 0, 0, 1, 0, 0, 0, sequence, 0, 0, 0, 0] }
    static let id7: [UInt8] = [0x21, 0x00, 0x04, 0, 0, 0, 7]

    static let malformed: [(String, [UInt8], WireError)] = [
        ("register without nonce", header(0x08, sequence: 0) + [0x01, 0x00, 0x01, 0x74], .badField),
        ("register without token", header(0x08, sequence: 0) + [0x04, 0x00, 0x01, 0x09], .badField),
        ("register with a sequence number", header(0x08) + [0x01, 0x00, 0x01, 0x74, 0x04, 0x00, 0x01, 0x09], .badField),
        ("invite without sequence number", header(0x09, sequence: 0) + id7 + [0x19, 0x00, 0x01, 0x62], .badField),
        ("invite without callee", header(0x09) + id7, .badField),
        ("invite to an empty identity", header(0x09) + id7 + [0x19, 0x00, 0x00], .badField),
        ("invite with call id 0", header(0x09) + [0x21, 0x00, 0x04, 0, 0, 0, 0, 0x19, 0x00, 0x01, 0x62], .badField),
        ("invite with a 2-byte call id", header(0x09) + [0x21, 0x00, 0x02, 0, 7, 0x19, 0x00, 0x01, 0x62], .badLength),
        ("answer without accept", header(0x0A) + id7, .badField),
        ("hang-up without call id", header(0x0B), .badField),
        ("incoming call without caller", header(0x8C) + id7, .badField),
        ("incoming call with invalid UTF-8 name", header(0x8C) + id7 + [0x0C, 0x00, 0x01, 0x61, 0x23, 0x00, 0x02, 0xC3, 0x28], .badField),
        ("status without state", header(0x8D) + id7, .badField),
        ("status with unknown state 9", header(0x8D) + id7 + [0x24, 0x00, 0x01, 0x09], .badField),
        ("status with state 0", header(0x8D) + id7 + [0x24, 0x00, 0x01, 0x00], .badField),
        ("answered without room", header(0x8D) + id7 + [0x24, 0x00, 0x01, 0x02], .badField),
        ("answered with room but no token", header(0x8D) + id7 + [0x24, 0x00, 0x01, 0x02, 0x02, 0x00, 0x01, 0x72], .badField),
        ("ringing with a room", header(0x8D) + id7 + [0x24, 0x00, 0x01, 0x01, 0x02, 0x00, 0x01, 0x72, 0x01, 0x00, 0x01, 0x74], .badField),
        ("status field cut short", header(0x8D) + id7 + [0x24, 0x00, 0x02, 0x01], .truncated),
    ]

    @Test("malformed presence and call messages are refused with the right error", arguments: 0..<19)
    func malformedInput(index: Int) {
        let (label, bytes, error) = Self.malformed[index]
        #expect(throws: error, "\(label)") { try SignalDatagram(parsing: bytes) }
    }

    @Test("the new refusal code and call states keep their wire values")
    func codes() {
        #expect(RefusalCode.privateRoom.rawValue == 23)
        #expect(CallState.allCases.map(\.rawValue) == [1, 2, 3, 4, 5, 6, 7])
        #expect(CallState.allCases.filter { !$0.isFinal } == [.ringing, .answered])
    }
}
