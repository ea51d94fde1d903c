import ParleyWire
import Testing

/// `NodePointer`: where a cluster sends a client, "HOST:PORT KEY", and the welcome's alternates fitted to one datagram.
@Suite("Node pointers: a node's address and relay key as a refusal, goodbye or welcome carries them")
struct NodePointerTests {
    static let key = "hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo"

    @Test("an address and a key, written as they are read", arguments: [
        ("127.0.0.1:7410 \(key)", "127.0.0.1:7410"),
        ("[2001:db8::1]:7400 \(key)", "[2001:db8::1]:7400"),
        ("localhost:7400 \(key)", "127.0.0.1:7400"),
        ("[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535 \(key)", "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"),  // the longest
    ])
    func parses(text: String, address: String) throws {
        let p = try NodePointer(parsing: text)
        #expect(p.address.description == address && p.relayKey == Self.key)
        #expect(try NodePointer(parsing: p.description) == p)
        #expect(p.description.utf8.count <= NodePointer.maxLength)
    }

    @Test("anything else is refused: no key, a short or long key, one with bits left over, a character outside base64url, two spaces, no port",
          arguments: [
            "127.0.0.1:7410",                                                   // the address alone (what relays before issue 33 sent)
            "127.0.0.1:7410 ",                                                  // an empty key
            "127.0.0.1:7410 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sH",         // 42 characters
            "127.0.0.1:7410 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHoA",       // 44
            "127.0.0.1:7410 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHp",        // 'p' = 41: its low 2 bits are not 0
            "127.0.0.1:7410 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sH=",        // padding
            "127.0.0.1:7410 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8s+o",        // base64, not base64url
            "127.0.0.1:7410  hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo",       // two spaces
            "127.0.0.1 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo",             // no port
            "evil.example:7410 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo",     // a name (nodes advertise addresses)
            "",
          ])
    func refuses(text: String) {
        #expect(throws: WireError.self) { try NodePointer(parsing: text) }
    }

    @Test("a pointer longer than any a node writes is refused before it is split")
    func tooLong() {
        #expect(throws: WireError.badLength) { try NodePointer(parsing: String(repeating: "1", count: NodePointer.maxLength + 1)) }
        #expect(NodePointer(address: PeerAddress(ipv4: 10, 0, 0, 1, port: 1), relayKey: "short") == nil)
    }

    @Test("a welcome's alternates take what is left of one sealed datagram: all of them in a small welcome, fewer beside the most stream indices and the longest names, never one cut")
    func alternatesFit() throws {
        let pointers = (0..<Welcome.maxAlternates).map { "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff\($0)0]:65535 \(Self.key)" }
        var small = Welcome(nonce: Array(repeating: 1, count: 16), memberID: 1, ssrc: 2, port: 7400, sessionSecret: Array(repeating: 3, count: 32),
                            room: "lobby", mode: "forward", identity: "ann", memberCount: 0, keepaliveMilliseconds: 5000,
                            timeoutMilliseconds: 15000, flags: MemberFlags(rawValue: 0))
        small.fitAlternates(pointers)
        #expect(small.alternates == pointers)
        var big = small
        big.room = String(repeating: "r", count: Signalling.maxNameBytes)
        big.identity = String(repeating: "i", count: Signalling.maxNameBytes)
        big.roomMediaKey = Array(repeating: 4, count: 46)
        big.streamIndices = (0..<Welcome.maxStreamIndices).map { Welcome.StreamIndex(ssrc: UInt32($0), index: UInt64($0)) }
        big.fitAlternates(pointers)
        #expect(!big.alternates.isEmpty && big.alternates.count < pointers.count)
        #expect(big.alternates == Array(pointers.prefix(big.alternates.count)))
        let bytes = try SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .welcome(big)).serialized()
        #expect(bytes.count <= SignallingEnvelope.maxSealedPlaintext)
        // As many as fit: one more would not.
        var more = big
        more.alternates = Array(pointers.prefix(big.alternates.count + 1))
        let over = (try? SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .welcome(more)).serialized().count) ?? .max
        #expect(over > SignallingEnvelope.maxSealedPlaintext)
        guard case .welcome(let parsed) = try SignalDatagram(parsing: bytes).message else { Issue.record("not a welcome"); return }
        #expect(try parsed.alternates.map { try NodePointer(parsing: $0) }.count == big.alternates.count)
    }

    @Test("alternates travel in field 59; an address alone in field 52 (as relays before issue 33 sent it) is skipped, never followed")
    func alternateFields() throws {
        var w = Welcome(nonce: Array(repeating: 1, count: 16), memberID: 1, ssrc: 2, port: 7400, sessionSecret: Array(repeating: 3, count: 32),
                        room: "lobby", mode: "forward", identity: "ann", memberCount: 0, keepaliveMilliseconds: 5000,
                        timeoutMilliseconds: 15000, flags: MemberFlags(rawValue: 0))
        let plain = try SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .welcome(w)).serialized()
        w.alternates = ["127.0.0.1:7410 \(Self.key)"]
        let withPointer = try SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .welcome(w)).serialized()
        #expect(Array(withPointer[plain.count...]) == [59, 0, 58] + Array("127.0.0.1:7410 \(Self.key)".utf8))
        let old = plain + [52, 0, 14] + Array("127.0.0.1:7410".utf8)
        guard case .welcome(let parsed) = try SignalDatagram(parsing: old).message else { Issue.record("not a welcome"); return }
        #expect(parsed.alternates.isEmpty)
    }
}
