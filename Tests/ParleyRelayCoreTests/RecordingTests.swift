import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// Room recordings in the core: started and stopped by the backend, every member told (and joiners after their
/// welcome), members' packets and the shared mix handed to the tap as records, end-to-end members left out, a
/// closing room's recording ended.
@Suite("Recordings: what the core hands the recorder, and who is told")
struct RecordingTests {
    func records(_ core: RelayCore) -> [RecordingTap.Record] {
        var bytes: [UInt8] = []
        core.recordings.take(into: &bytes)
        let decoded = RecordingTap.decode(bytes)
        #expect(!decoded.contains(nil), "a record did not decode")
        return decoded.compactMap { $0 }
    }

    func recordingEvents(_ client: FakeClient) -> [ClientSession.Event] {
        client.events.filter { if case .recording = $0 { true } else { false } }
    }

    @Test("a forward room: each speaker's packets as they came, after a track record; members told on start and stop")
    func forwardRoomTracks() throws {
        let net = FakeNetwork()
        let c = [net.addClient("alice", room: "r"), net.addClient("bob", room: "r")]
        net.joinAll()
        #expect(net.core.startRecording(room: "r", id: 0xABCD, now: net.now) == .ok)
        #expect(net.core.startRecording(room: "r", id: 0xABCE, now: net.now) == .conflict("room r is already being recorded (recording 000000000000abcd)"))
        let alice = try ToneMember(c[0], frequency: 440), bob = try ToneMember(c[1], frequency: 660)
        net.advance(milliseconds: 200, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        #expect(net.core.stopRecording(room: "r", now: net.now) == .ok)
        net.advance(milliseconds: 100)
        net.advance(milliseconds: 100, stepMilliseconds: 20) { try? alice.send() }  // after the stop: not recorded

        let r = records(net.core)
        guard case .started(let id, let room, let mode, _, _, _)? = r.first else { Issue.record("no start: \(r)"); return }
        #expect(id == 0xABCD && room == "r" && mode == "forward")
        for member in [alice, bob] {
            let ssrc = member.client.ssrc
            let packets = r.compactMap { if case .packet(_, ssrc, let ts, _, let payload) = $0 { (ts, payload) } else { nil } }
            #expect(packets.count == 10, "\(member.client.identity): \(packets.count) packets")
            #expect(packets.map(\.0) == (0..<10).map { UInt32(4_294_967_000) &+ UInt32($0 * 960) })
            #expect(packets.allSatisfy { $0.1.first.map { $0 >> 3 } != nil && !$0.1.isEmpty })
            let trackAt = r.firstIndex { if case .track(_, ssrc, member.client.identity, _) = $0 { true } else { false } }
            let firstPacket = r.firstIndex { if case .packet(_, ssrc, _, _, _) = $0 { true } else { false } }
            #expect(trackAt != nil && trackAt! < firstPacket!)
        }
        guard case .stopped(0xABCD, _, "stopped by the backend")? = r.last else { Issue.record("no stop last: \(String(describing: r.last))"); return }
        for client in c {
            #expect(recordingEvents(client) == [.recording(active: true, id: "000000000000abcd"), .recording(active: false, id: "000000000000abcd")])
        }
        let kinds = net.core.drainEvents().map(\.kind)
        #expect(kinds.contains(.recordingStarted) && kinds.contains(.recordingStopped))
        #expect(net.core.stopRecording(room: "r", now: net.now) == .notFound("room r is not being recorded"))
        #expect(net.core.startRecording(room: "nowhere", id: 1, now: net.now) == .notFound("room nowhere does not exist"))
    }

    @Test("a member joining a recorded room is told after its welcome; one whose token asks for end-to-end encryption is not recorded")
    func joinerToldAndEndToEndLeftOut() throws {
        let net = FakeNetwork()
        let alice = net.addClient("alice", room: "r")
        net.joinAll()
        #expect(net.core.startRecording(room: "r", id: 7, now: net.now) == .ok)
        let carolToken = TokenSigner(apiKey: "devkey", apiSecret: FakeNetwork.apiSecret).mint(
            TokenClaims(identity: "carol", room: "r", expiresAt: net.now.unixSeconds + 3600, grants: Grants(), endToEnd: true))
        let carol = net.addClient("carol", room: "r", token: carolToken)
        net.joinAll()
        #expect(recordingEvents(carol) == [.recording(active: true, id: "0000000000000007")])
        let welcomeAt = carol.events.firstIndex { if case .welcomed = $0 { true } else { false } }
        let toldAt = carol.events.firstIndex { if case .recording = $0 { true } else { false } }
        #expect(welcomeAt! < toldAt!)
        let a = try ToneMember(alice, frequency: 440), e = try ToneMember(carol, frequency: 660)
        net.advance(milliseconds: 100, stepMilliseconds: 20) { try? a.send(); try? e.send() }
        let r = records(net.core)
        #expect(r.contains { if case .packet(_, alice.ssrc, _, _, _) = $0 { true } else { false } })
        #expect(!r.contains { if case .packet(_, carol.ssrc, _, _, _) = $0 { true } else { false } })
        #expect(!r.contains { if case .track(_, carol.ssrc, _, _) = $0 { true } else { false } })
    }

    @Test("a mix room: the shared mix is encoded and recorded while two speak (when every member is a speaker and nobody needs it)")
    func mixRoomRecordsTheSharedMix() throws {
        let net = FakeNetwork()
        let c = ["alice", "bob"].map { net.addClient($0, room: "m", token: net.token($0, room: "m", mode: "mix")) }
        net.joinAll()
        let alice = try ToneMember(c[0], frequency: 440), bob = try ToneMember(c[1], frequency: 660)
        net.advance(milliseconds: 400, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        let before = try #require(net.core.rooms["m"]?.mix).encodes
        _ = records(net.core)
        #expect(net.core.startRecording(room: "m", id: 9, now: net.now) == .ok)
        net.advance(milliseconds: 1_000, stepMilliseconds: 20) { try? alice.send(); try? bob.send() }
        let r = records(net.core)
        let mixes = r.compactMap { if case .mix(9, let ts, _, let payload) = $0 { (ts, payload) } else { nil } }
        #expect(mixes.count >= 45, "\(mixes.count) mix frames in 1 s")
        // Consecutive frames, 20 ms apart on the mix's clock, each an Opus packet.
        #expect(zip(mixes, mixes.dropFirst()).allSatisfy { $1.0 &- $0.0 == 960 })
        #expect(mixes.allSatisfy { !$0.1.isEmpty })
        // Two minus-one encodes per frame before; now the shared mix too.
        #expect(try #require(net.core.rooms["m"]?.mix).encodes - before >= 3 * 45)
    }

    @Test("a room that closes ends its recording: the recorder and the event stream are told why")
    func closingRoomEndsItsRecording() throws {
        let net = FakeNetwork()
        net.addClient("alice", room: "r")
        net.joinAll()
        #expect(net.core.startRecording(room: "r", id: 3, now: net.now) == .ok)
        #expect(net.core.closeRoom(name: "r", reason: "closed by the backend", now: net.now) == .ok)
        let r = records(net.core)
        #expect(r.last == .stopped(id: 3, unixMilliseconds: net.now.unixMilliseconds, reason: "the room closed"))
        #expect(net.core.drainEvents().contains { $0.kind == .recordingStopped && $0.detail == "0000000000000003: the room closed" })
    }

    @Test("a call room cannot be recorded")
    func callRoomsArePrivate() {
        let net = FakeNetwork()
        #expect(net.core.createRoom(name: "call-abc", mode: .forward, maxMembers: nil, emptyTimeout: nil, now: net.now) == .ok)
        #expect(net.core.startRecording(room: "call-abc", id: 1, now: net.now) == .forbidden("call rooms are private: they cannot be recorded"))
    }

    @Test("the tap's records round-trip, and a full tap drops packets (counted) rather than grow")
    func tapRecordsRoundTripAndAreBounded() {
        let tap = RecordingTap(capacity: 200)
        let now = Moment(monotonic: Instant(nanoseconds: 5_000_000), unixMilliseconds: 1_700_000_000_000)
        tap.recordStarted(id: 1, room: "r", mode: .mix, now: now, mixdown: true)
        tap.recordTrack(id: 1, ssrc: 42, identity: "alice", name: "Alice")
        let payload: [UInt8] = [0x48, 1, 2, 3]
        payload.withUnsafeBytes { p in
            tap.recordPacket(id: 1, ssrc: 42, timestamp: 960, arrival: Instant(nanoseconds: 6_000_000), payload: p)
            tap.recordMix(id: 1, timestamp: 1_920, at: Instant(nanoseconds: 7_000_000), payload: p)
            for _ in 0..<10 { tap.recordPacket(id: 1, ssrc: 42, timestamp: 0, arrival: .origin, payload: p) }
        }
        tap.recordStopped(id: 1, now: now, reason: "done")
        var bytes: [UInt8] = []
        tap.take(into: &bytes)
        let r = RecordingTap.decode(bytes)
        #expect(Array(r.prefix(4)) == [
            .started(id: 1, room: "r", mode: "mix", unixMilliseconds: 1_700_000_000_000, at: Instant(nanoseconds: 5_000_000), mixdown: true),
            .track(id: 1, ssrc: 42, identity: "alice", name: "Alice"),
            .packet(id: 1, ssrc: 42, timestamp: 960, arrival: Instant(nanoseconds: 6_000_000), payload: payload),
            .mix(id: 1, timestamp: 1_920, at: Instant(nanoseconds: 7_000_000), payload: payload)])
        #expect(r.last == .stopped(id: 1, unixMilliseconds: 1_700_000_000_000, reason: "done"))
        #expect(tap.dropped > 0 && bytes.count <= 200 + 40)
        #expect(tap.isEmpty)
        // Cut short: the decoder stops with nil, never reads past the end.
        #expect(RecordingTap.decode(Array(bytes.prefix(bytes.count - 1))).last! == nil)
        #expect(RecordingTap.decode([9, 0, 0, 0, 0]) == [nil])
    }
}
