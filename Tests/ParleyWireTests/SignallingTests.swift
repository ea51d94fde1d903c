import Testing
@testable import ParleyWire

@Suite("Signalling v1: header, fields, every message, malformed input")
struct SignallingTests {
    static let member = MemberEntry(memberID: 7, ssrc: 0xDEAD_BEEF, flags: [.publisher, .subscriber], identity: "alice", name: "Alice Ä")

    static let messages: [SignalMessage] = [
        .join(JoinRequest(token: "a.b.c", room: "lobby", cookie: [1, 2, 3], nonce: [UInt8](repeating: 9, count: 16), muted: true)),
        .join(JoinRequest(token: "a.b.c", room: "lobby", nonce: [UInt8](repeating: 9, count: 16), keyShare: [UInt8](repeating: 4, count: 32))),
        .join(JoinRequest(token: "a.b.c", room: "lobby", nonce: [UInt8](repeating: 9, count: 16), speakersFromMedia: true)),
        .leave, .ping(timestamp: 0x0102_0304_0506_0708), .setMuted(true), .setMuted(false),
        .sendText(to: "", fragment: TextFragment(messageID: 1, index: 0, count: 1, chunk: Array("hi".utf8))),
        .sendText(to: "bob", fragment: TextFragment(messageID: 2, index: 1, count: 2, chunk: [0xC3, 0xA9])),
        .resume(timestamp: 99, proof: [UInt8](repeating: 0xAA, count: 32)), .ack,
        .retry(cookie: [UInt8](repeating: 5, count: 20)),
        .welcome(Welcome(nonce: [UInt8](repeating: 9, count: 16), memberID: 7, ssrc: 0xDEAD_BEEF, port: 7401,
                         sessionSecret: [UInt8](repeating: 3, count: 32), room: "lobby", mode: "forward", identity: "alice",
                         memberCount: 2, keepaliveMilliseconds: 5000, timeoutMilliseconds: 15_000, flags: [.publisher])),
        .refused(code: .tokenExpired, reason: "the token has expired"), .refused(code: .roomFull, reason: ""),
        .memberPage(index: 0, count: 2, members: [member, MemberEntry(memberID: 8, ssrc: 1, flags: [.muted], identity: "b", name: "")]),
        .memberPage(index: 1, count: 2, members: []),
        .memberEvent(kind: .left, member: member, reason: "timed out"), .memberEvent(kind: .muted, member: member, reason: ""),
        .speakers([SpeakerEntry(memberID: 7, ssrc: 1, level: 30), SpeakerEntry(memberID: 8, ssrc: 2, level: 127)]), .speakers([]),
        .text(fromMemberID: 7, fromIdentity: "alice", direct: true, fragment: TextFragment(messageID: 3, index: 0, count: 1, chunk: [0x41])),
        .textStatus(messageID: 3, delivered: false, reason: "bob is not in the room"), .textStatus(messageID: 4, delivered: true, reason: ""),
        .goodbye(code: .relayShutdown, reason: "the relay is shutting down"), .pong(timestamp: 1), .resumed,
        .roomKey(keyID: 3, material: [UInt8](repeating: 0x5C, count: 44),
                 streamIndices: [Welcome.StreamIndex(ssrc: 0xDEAD_BEEF, index: 0x0001_0000_FFFF), Welcome.StreamIndex(ssrc: 1, index: 7)]),
        .roomKey(keyID: 0xFFFF_FFFF, material: [1], streamIndices: []),
    ]

    @Test("a room key is laid out field by field: key id, key and salt, each stream's SSRC and 48-bit index")
    func roomKeyBytes() throws {
        let message = SignalMessage.roomKey(keyID: 2, material: [UInt8](0..<44), streamIndices: [Welcome.StreamIndex(ssrc: 0x0A0B_0C0D, index: 0x0102_0304_0506)])
        let bytes = try SignalDatagram(connectionID: 1, sequence: 5, ack: 0, message: message).serialized()
        let body = Array(bytes[Signalling.headerSize...])
        //                    keyID tag, length 4, value 2
        #expect(Array(body[0..<7]) == [60, 0, 4, 0, 0, 0, 2])
        //                    roomMediaKey tag, length 44, the key (32) and salt (12)
        #expect(Array(body[7..<10]) == [39, 0, 44] && Array(body[10..<54]) == [UInt8](0..<44))
        //                    streamIndex tag, length 10, SSRC, index (48 bits)
        #expect(Array(body[54...]) == [51, 0, 10, 0x0A, 0x0B, 0x0C, 0x0D, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06])
        #expect(bytes[2] == 0x93, "type 0x93 roomKey")
        // No key is refused.
        var empty = bytes
        empty.removeSubrange((Signalling.headerSize + 7)..<(Signalling.headerSize + 54))
        #expect(throws: WireError.self) { try SignalDatagram(parsing: empty) }
    }

    @Test("every message survives a round trip", arguments: messages)
    func roundTrip(message: SignalMessage) throws {
        let datagram = SignalDatagram(connectionID: 0x1234_5678, sequence: message.isReliable ? 42 : 0, ack: 17, message: message)
        let bytes = try datagram.serialized()
        #expect(bytes.count <= Signalling.maxDatagramSize)
        #expect(try SignalDatagram(parsing: bytes) == datagram)
    }

    @Test("the header is laid out as documented")
    func headerBytes() throws {
        let bytes = try SignalDatagram(connectionID: 0x0102_0304, sequence: 5, ack: 6, message: .setMuted(true)).serialized()
        #expect(bytes == [
            0x50, 0x01, 0x04, 0x00,   // magic 'P', version 1, type 0x04 setMuted, flags
            0x01, 0x02, 0x03, 0x04,   // connection id
            0x00, 0x00, 0x00, 0x05,   // sequence
            0x00, 0x00, 0x00, 0x06,   // ack
            0x20, 0x00, 0x01, 0x01,   // field 32 (muted), length 1, value 1
        ])
    }

    @Test("a member entry muted by the room carries flag bit 3 beside muted")
    func mutedByRoomFlagBytes() throws {
        let entry = MemberEntry(memberID: 7, ssrc: 9, flags: [.muted, .mutedByRoom, .publisher, .subscriber], identity: "al", name: "")
        let bytes = try SignalDatagram(connectionID: 1, sequence: 3, ack: 0, message: .memberEvent(kind: .muted, member: entry, reason: "")).serialized()
        #expect(bytes == [
            0x50, 0x01, 0x85, 0x00,   // magic 'P', version 1, type 0x85 member event, flags
            0x00, 0x00, 0x00, 0x01,   // connection id
            0x00, 0x00, 0x00, 0x03,   // sequence
            0x00, 0x00, 0x00, 0x00,   // ack
            0x17, 0x00, 0x01, 0x03,   // field 23 (event kind), length 1, 3 = muted
            0x16, 0x00, 0x0D,         // field 22 (member), length 13
            0x00, 0x00, 0x00, 0x07,   //   member id
            0x00, 0x00, 0x00, 0x09,   //   ssrc
            0x0F,                     //   flags: muted (bit 0) | publisher | subscriber | muted by the room (bit 3)
            0x02, 0x61, 0x6C,         //   identity "al"
            0x00,                     //   name ""
        ])
        #expect(try SignalDatagram(parsing: bytes).message == .memberEvent(kind: .muted, member: entry, reason: ""))
    }

    @Test("a join carries a room name longer than a relay admits (up to what a datagram holds), so the relay can refuse it with a reason")
    func longRoomNameCarried() throws {
        let room = String(repeating: "r", count: 600)
        let join = SignalMessage.join(JoinRequest(token: "a.b.c", room: room, nonce: [UInt8](repeating: 9, count: 16)))
        let bytes = try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: join).serialized()
        #expect(try SignalDatagram(parsing: bytes).message == join)
        // So do the identities a member names (a direct text, a call): the relay answers "not online".
        for named in [SignalMessage.sendText(to: String(repeating: "i", count: 600), fragment: TextFragment(messageID: 1, index: 0, count: 1, chunk: [0x41])),
                      .callInvite(callID: 1, to: String(repeating: "i", count: 600))] {
            let d = SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: named)
            #expect(try SignalDatagram(parsing: try d.serialized()) == d)
        }
        let tooLong = SignalMessage.join(JoinRequest(token: "a.b.c", room: String(repeating: "r", count: 1200), nonce: []))
        #expect(throws: WireError.bufferTooSmall) { try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: tooLong).serialized() }
    }

    @Test("unknown fields are skipped, so later versions can add them")
    func unknownFieldsSkipped() throws {
        var bytes = try SignalDatagram(connectionID: 1, sequence: 0, ack: 0, message: .ping(timestamp: 7)).serialized()
        bytes += [0xF0, 0x00, 0x03, 1, 2, 3]
        #expect(try SignalDatagram(parsing: bytes).message == .ping(timestamp: 7))
    }

    static let malformed: [(String, [UInt8], WireError)] = [
        ("empty", [], .truncated),
        ("short header", [0x50, 0x01, 0x03, 0x00, 0, 0, 0, 0], .truncated),
        ("bad magic", [0x51, 0x01, 0x07, 0] + [UInt8](repeating: 0, count: 12), .badVersion),
        ("version 2", [0x50, 0x02, 0x07, 0] + [UInt8](repeating: 0, count: 12), .badVersion),
        ("unknown type", [0x50, 0x01, 0x40, 0] + [UInt8](repeating: 0, count: 12), .unknownType),
        ("field header cut", [0x50, 0x01, 0x07, 0] + [UInt8](repeating: 0, count: 12) + [0x10, 0x00], .truncated),
        ("field value past end", [0x50, 0x01, 0x03, 0] + [UInt8](repeating: 0, count: 12) + [0x10, 0x00, 0x08, 1, 2], .truncated),
        ("ping without timestamp", [0x50, 0x01, 0x03, 0] + [UInt8](repeating: 0, count: 12), .badField),
        ("timestamp of 4 bytes", [0x50, 0x01, 0x03, 0] + [UInt8](repeating: 0, count: 12) + [0x10, 0x00, 0x04, 1, 2, 3, 4], .badLength),
        ("reliable message without sequence", [0x50, 0x01, 0x02, 0] + [UInt8](repeating: 0, count: 12), .badField),
        ("unreliable message with sequence", [0x50, 0x01, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], .badField),
        ("invalid UTF-8 room", [0x50, 0x01, 0x01, 0] + [UInt8](repeating: 0, count: 12)
            + [0x01, 0x00, 0x01, 0x41, 0x02, 0x00, 0x02, 0xC3, 0x28, 0x04, 0x00, 0x01, 0x00], .badField),
        ("unknown refusal code", [0x50, 0x01, 0x83, 0] + [UInt8](repeating: 0, count: 12) + [0x12, 0x00, 0x02, 0xFF, 0xFF], .badField),
        ("fragment index past count", [0x50, 0x01, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
            + [0x1A, 0, 4, 0, 0, 0, 1, 0x1B, 0, 1, 2, 0x1C, 0, 1, 2, 0x1D, 0, 1, 0x41], .badField),
        ("oversize", [0x50, 0x01, 0x07, 0] + [UInt8](repeating: 0, count: 1200), .badLength),
    ]

    @Test("malformed datagrams are refused with the right error", arguments: 0..<15)
    func malformedInput(index: Int) {
        let (label, bytes, error) = Self.malformed[index]
        #expect(throws: error, "\(label)") { try SignalDatagram(parsing: bytes) }
    }

    @Test("a datagram that would exceed 1,200 bytes is not serialized")
    func tooLarge() {
        let entries = (0..<20).map { MemberEntry(memberID: UInt32($0), ssrc: 1, flags: [], identity: String(repeating: "x", count: 60), name: "") }
        #expect(throws: WireError.bufferTooSmall) {
            try SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .memberPage(index: 0, count: 1, members: entries)).serialized()
        }
    }

    @Test("texts split on character boundaries and reassemble; empty and over-4 KB texts are refused")
    func textFragments() throws {
        let text = String(repeating: "ab€", count: 800)  // 4000 bytes, 3-byte characters
        let parts = try #require(TextFragment.split(text, messageID: 9))
        #expect(parts.count == 5)
        #expect(parts.allSatisfy { String(validating: $0.chunk, as: UTF8.self) != nil })
        var r = TextReassembler()
        var out: String?
        for p in parts { out = r.add(p) ?? out }
        #expect(out == text)
        #expect(TextFragment.split("", messageID: 1) == nil)
        #expect(TextFragment.split(String(repeating: "x", count: 4097), messageID: 1) == nil)
        // A stray middle fragment is discarded.
        var r2 = TextReassembler()
        #expect(r2.add(parts[2]) == nil)
        #expect(r2.add(parts[4]) == nil)
    }

    /// (fragments as (message id, index, count, chunk bytes), what the reassembler finishes after each).
    static let reassembly: [(String, [(UInt32, UInt8, UInt8, Int)], [[TextAssembly]])] = [
        ("one whole fragment", [(1, 0, 1, 3)], [[.text(messageID: 1, "aaa")]]),
        ("two in order", [(1, 0, 2, 2), (1, 1, 2, 1)], [[], [.text(messageID: 1, "aaa")]]),
        ("over 4,096 bytes: refused at the fragment that crosses, the rest swallowed",
         [(1, 0, 5, 900), (1, 1, 5, 900), (1, 2, 5, 900), (1, 3, 5, 900), (1, 4, 5, 900)],
         [[], [], [], [], [.refused(messageID: 1, .tooLong)]]),
        ("empty", [(1, 0, 1, 0)], [[.refused(messageID: 1, .empty)]]),
        ("a middle fragment alone, then the rest of it", [(1, 1, 3, 1), (1, 2, 3, 1)], [[.refused(messageID: 1, .outOfOrder)], []]),
        ("a fragment skipped", [(1, 0, 3, 1), (1, 2, 3, 1)], [[], [.refused(messageID: 1, .outOfOrder)]]),
        ("cut short by the next text", [(1, 0, 2, 1), (2, 0, 1, 1)],
         [[], [.refused(messageID: 1, .outOfOrder), .text(messageID: 2, "a")]]),
        ("another text's middle fragment", [(1, 0, 2, 1), (2, 1, 2, 1)],
         [[], [.refused(messageID: 1, .outOfOrder), .refused(messageID: 2, .outOfOrder)]]),
        ("a new count mid-text", [(1, 0, 2, 1), (1, 1, 3, 1)], [[], [.refused(messageID: 1, .outOfOrder)]]),
    ]

    @Test("reassembly finishes every text exactly once: whole, or refused with the reason", arguments: 0..<9)
    func reassemblyOutcomes(index: Int) {
        let (label, fragments, expected) = Self.reassembly[index]
        var r = TextReassembler()
        for (f, want) in zip(fragments, expected) {
            let got = r.take(TextFragment(messageID: f.0, index: f.1, count: f.2, chunk: [UInt8](repeating: 0x61, count: f.3)))
            #expect(got == want, "\(label)")
        }
    }

    @Test("bytes that are not UTF-8 are refused", arguments: [[0xFF], [0x68, 0xC3], [0xED, 0xA0, 0x80], [0xC0, 0xAF]] as [[UInt8]])
    func reassemblyRefusesInvalidUTF8(bytes: [UInt8]) {
        var r = TextReassembler()
        #expect(r.take(TextFragment(messageID: 4, index: 0, count: 1, chunk: bytes)) == [.refused(messageID: 4, .notUTF8)])
    }

    @Test("first-byte demultiplexing tells signalling from RTP/RTCP, STUN and DTLS")
    func demux() {
        #expect(Signalling.isSignalling(0x50))
        for first: UInt8 in [0x00, 0x01, 0x14, 0x17, 0x80, 0x90, 0xBF] { #expect(!Signalling.isSignalling(first)) }
    }
}

@Suite("Reliable channel: order, acks, retransmission with backoff")
struct ReliableChannelTests {
    @Test("messages are delivered once and in order, across reordering and duplicates")
    func ordering() {
        var rx = ReliableChannel()
        #expect(rx.receive(sequence: 2, ack: 0, message: .leave, now: .origin).isEmpty)
        #expect(rx.receive(sequence: 1, ack: 0, message: .setMuted(true), now: .origin) == [.setMuted(true), .leave])
        #expect(rx.receive(sequence: 1, ack: 0, message: .setMuted(true), now: .origin).isEmpty)
        #expect(rx.ackNumber == 2)
        #expect(rx.ackOwed)
        #expect(rx.receive(sequence: 0, ack: 0, message: .ack, now: .origin) == [.ack])
        // Far beyond the window: ignored.
        #expect(rx.receive(sequence: 1000, ack: 0, message: .leave, now: .origin).isEmpty)
        #expect(rx.receive(sequence: 3, ack: 0, message: .resumed, now: .origin) == [.resumed])
    }

    @Test("unacknowledged messages are resent with a doubling timeout until the peer acknowledges them")
    func retransmission() {
        var tx = ReliableChannel()
        tx.enqueue(.setMuted(true))
        #expect(tx.transmissions(now: .origin).map(\.sequence) == [1])
        #expect(tx.transmissions(now: .origin + .milliseconds(200)).isEmpty)
        let first = tx.transmissions(now: .origin + .milliseconds(250))
        #expect(first.map(\.isRetransmission) == [true])
        #expect(tx.transmissions(now: .origin + .milliseconds(700)).isEmpty)       // next after 2 × 250 ms
        #expect(tx.transmissions(now: .origin + .milliseconds(750)).count == 1)
        _ = tx.receive(sequence: 0, ack: 1, message: .ack, now: .origin + .milliseconds(800))
        #expect(tx.pendingCount == 0)
        #expect(tx.retransmissions == 2)
        #expect(tx.nextDeadline == nil)
    }

    @Test("the timeout follows measured round trips (Karn: only first transmissions are sampled)")
    func rto() {
        var tx = ReliableChannel()
        for i in 0..<10 {
            let t = Instant.origin + .seconds(Int64(i))
            tx.enqueue(.leave)
            _ = tx.transmissions(now: t)
            _ = tx.receive(sequence: 0, ack: UInt32(i + 1), message: .ack, now: t + .milliseconds(40))
        }
        #expect(tx.roundTripTime == .milliseconds(40))
        #expect(tx.currentRTO == .milliseconds(100))  // clamped to the minimum
    }

    @Test("a message never acknowledged fails the channel after the last attempt")
    func failure() {
        var tx = ReliableChannel()
        tx.enqueue(.leave)
        var t = Instant.origin
        while !tx.failed && t < .origin + .seconds(120) {
            _ = tx.transmissions(now: t)
            t += .milliseconds(50)
        }
        #expect(tx.failed)
    }

    @Test("serviceDue: now while an ack is owed or a message waits with room in the window, else the next retransmission")
    func serviceDue() {
        var tx = ReliableChannel()
        #expect(tx.serviceDue == .distantFuture)
        tx.enqueue(.leave)
        #expect(tx.serviceDue == .distantPast)
        _ = tx.transmissions(now: .origin + .microseconds(1))
        #expect(tx.serviceDue == .origin + .microseconds(1) + .milliseconds(250))
        #expect(tx.transmissions(now: .origin + .microseconds(1) + .nanoseconds(249_999_999)).isEmpty)   // nothing before it
        _ = tx.receive(sequence: 1, ack: 0, message: .setMuted(true), now: .origin + .microseconds(2))
        #expect(tx.serviceDue == .distantPast)                                  // an ack is owed
        tx.ackSent()
        #expect(tx.serviceDue == .origin + .microseconds(1) + .milliseconds(250))
        _ = tx.transmissions(now: .origin + .microseconds(250_001))                          // retransmitted: next after 2 × 250 ms
        #expect(tx.serviceDue == .origin + .microseconds(250_001) + .milliseconds(500))
        _ = tx.receive(sequence: 0, ack: 1, message: .ack, now: .origin + .milliseconds(300))
        #expect(tx.serviceDue == .distantFuture)

        // A full window: waiting messages are not due until the first in flight times out.
        var full = ReliableChannel()
        for _ in 0..<33 { full.enqueue(.leave) }
        #expect(full.transmissions(now: .origin).count == 32)
        #expect(full.serviceDue == .origin + .milliseconds(250))
        _ = full.receive(sequence: 0, ack: 1, message: .ack, now: .origin + .nanoseconds(10))
        #expect(full.serviceDue == .distantPast)                                // room again: the 33rd can go
    }

    @Test("the send window holds back messages beyond 32 in flight")
    func window() {
        var tx = ReliableChannel()
        for _ in 0..<40 { tx.enqueue(.leave) }
        #expect(tx.transmissions(now: .origin).count == 32)
        _ = tx.receive(sequence: 0, ack: 10, message: .ack, now: .origin + .nanoseconds(1))
        #expect(tx.transmissions(now: .origin + .nanoseconds(2)).count == 8)
    }

    @Test("the queue holds at most maxPending: the next message is dropped, counted, and the channel overflows")
    func boundedQueue() {
        var limits = ReliableChannel.Limits()
        limits.maxPending = 40
        var tx = ReliableChannel(limits: limits)
        for _ in 0..<40 {
            let queued = tx.enqueue(.leave)
            #expect(queued)
        }
        _ = tx.transmissions(now: .origin)                      // 32 in flight, 8 waiting: still 40 pending
        #expect(tx.hasRoom(for: 0, within: .max) && !tx.hasRoom(for: 1, within: .max))
        #expect(!tx.overflowed && tx.serviceDue == .origin + .milliseconds(250))
        let queued = tx.enqueue(.setMuted(true))
        #expect(!queued)
        #expect(tx.overflowed && tx.refused == 1 && tx.pendingCount == 40)
        #expect(tx.serviceDue == .distantPast)                    // the owner looks at once
        _ = tx.receive(sequence: 0, ack: 32, message: .ack, now: .origin + .nanoseconds(1))
        #expect(tx.pendingCount == 8 && tx.overflowed)   // a lost message stays lost: overflow is for good
    }

    @Test("a sender keeps room for what it must send: hasRoom within a lower limit")
    func roomWithinALimit() {
        var tx = ReliableChannel()
        for _ in 0..<60 { tx.enqueue(.leave) }
        #expect(tx.hasRoom(for: 4, within: 64) && !tx.hasRoom(for: 5, within: 64))
    }

    @Test("waiting messages can be dropped by predicate; those in flight stay")
    func dropWaiting() {
        var tx = ReliableChannel()
        for i in 0..<34 { tx.enqueue(i % 2 == 0 ? .setMuted(true) : .leave) }
        _ = tx.transmissions(now: .origin)                      // 0…31 in flight, 32 (muted) and 33 (leave) waiting
        let dropped = tx.dropWaiting { $0 == .setMuted(true) }
        #expect(dropped == 1)
        #expect(tx.pendingCount == 33)
        _ = tx.receive(sequence: 0, ack: 32, message: .ack, now: .origin + .nanoseconds(1))
        #expect(tx.transmissions(now: .origin + .nanoseconds(2)).map(\.message) == [.leave])
    }
}
