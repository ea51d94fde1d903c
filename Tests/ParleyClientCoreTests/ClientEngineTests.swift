// The client engine on a manual clock against a scripted relay: NACK timing, receiver-report cadence, FEC from the
// relay's reports, rejoin with backoff, and play-out of received audio. Nothing here reads a clock or opens a socket.
import ParleyClientCore
import ParleyMedia
import ParleyWire
import Testing

@Suite("Client engine on a manual clock")
struct ClientEngineTests {
    static let ms = EngineHarness.ms

    /// A welcomed listen-only engine at t = 1 ms, its join and welcome taken from the outbox.
    static func joined(listenOnly: Bool = true, reconnect: Bool = true, jitterMinimumDelay: Interval = .zero) throws -> EngineHarness {
        let h = try EngineHarness(listenOnly: listenOnly, reconnect: reconnect, jitterMinimumDelay: jitterMinimumDelay)
        h.advance(to: 1 * ms)
        h.welcome()
        #expect(h.engine.inRoom)
        _ = h.outbox.take()
        return h
    }

    @Test("the join goes out at once, to the relay's public port")
    func joinAtOnce() throws {
        let h = try EngineHarness()
        let sent = h.outbox.take()
        #expect(sent.count == 1)
        guard case .join(let j) = sent.first?.signal else { Issue.record("no join: \(sent)"); return }
        #expect(j.room == "lobby" && j.token == "t1" && j.speakersFromMedia)
        #expect(sent[0].to == ScriptedRelay.publicAddress)
    }

    @Test("a lost packet is NACKed at the first media step after the gap shows, to the worker, and not again once it arrives")
    func nackTiming() throws {
        // A buffer holding 60 ms: packet 2 is still wanted until it arrives (a buffer that started at the clean
        // path's zero delay would rebuild it from packet 3's FEC first, and rightly stop asking).
        let h = try Self.joined(jitterMinimumDelay: .milliseconds(60))
        var tone = try ToneStream()
        let packets = (0..<6).map { _ in tone.next() }
        var nacks: [(at: Interval, lost: [UInt16])] = []
        let firstSequence = try packets[0].withUnsafeBytes { try RTPPacketView(parsing: $0).sequenceNumber }
        for step in 0..<6 {
            h.advance(to: Int64(20 + 20 * step) * Self.ms)
            if step != 2 && step != 5 { h.deliver(packets[step]) }   // packet 2 is late, not lost: it arrives at step 5
            if step == 5 { h.deliver(packets[2]) }
            h.media()
            for d in h.outbox.take() where d.nack != nil {
                #expect(d.to == ScriptedRelay.workerAddress)
                nacks.append((h.elapsed, d.nack!.lost))
            }
        }
        // The gap shows when packet 3 arrives (step 3, t = 80 ms); one round trip (20 ms before any pong) later it
        // is asked again; at step 5 it arrives and nothing more is asked.
        #expect(nacks.map(\.at) == [80 * Self.ms, 100 * Self.ms])
        #expect(nacks.allSatisfy { $0.lost == [firstSequence &+ 2] })
        let stream = try #require(h.engine.receiver.streams[ToneStream.ssrc])
        #expect(stream.nacks.requested == 2 && stream.nacks.recovered == 1)
        #expect(h.engine.nacksSent == 2)
        h.advance(to: 200 * Self.ms)
        h.media()
        #expect(h.outbox.take().allSatisfy { $0.nack == nil }, "nothing left to ask")
    }

    @Test("after the welcome it pings the relay 16 times, 20 ms apart; streams start from what the round trips showed")
    func joinProbe() throws {
        let h = try Self.joined()
        // Each pong comes back 50 ms after its ping plus this much queueing: the path varies by 45 ms (the 90 ms
        // outlier left out).
        let queueing: [Int64] = [0, 30, 5, 45, 10, 0, 20, 35, 90, 5, 15, 0, 25, 40, 10, 5]
        var pings: [Interval] = []
        var pongs: [(due: Interval, timestamp: UInt64)] = []
        for t in 2...600 {   // 1 ms steps; the client ticks every 20 ms
            h.advance(to: Int64(t) * Self.ms)
            for pong in pongs where pong.due == h.elapsed { h.deliver(ScriptedRelay.datagram(.pong(timestamp: pong.timestamp))) }
            guard t % 20 == 0 else { continue }
            _ = h.tick()
            for d in h.outbox.take() {
                guard case .ping(let timestamp) = d.signal, pings.count < queueing.count else { continue }
                pongs.append((h.elapsed + .milliseconds(50 + queueing[pings.count]), timestamp))
                pings.append(h.elapsed)
            }
        }
        #expect(pings.count == 16)
        #expect(zip(pings, pings.dropFirst()).allSatisfy { $1 - $0 == .milliseconds(20) }, "pings at \(pings)")
        #expect(h.engine.joinRoundTrips.count == 16)
        // Spread 45 ms, more than a frame: room for a repair as well (the fastest round trip, 50 ms, and a frame).
        #expect(h.engine.receiver.startupPrior == .milliseconds(45 + 50 + 20))
        var tone = try ToneStream()
        h.deliver(tone.next())
        #expect(h.engine.receiver.streams[ToneStream.ssrc]?.audio.jitter.startupPrior == .milliseconds(115))
    }

    @Test("receiver reports go out once a second while in the room, to the worker")
    func receiverReportCadence() throws {
        let h = try Self.joined()
        var tone = try ToneStream()
        var reports: [Interval] = []
        for step in 1...160 {   // 3.2 s
            h.advance(to: Int64(step) * 20 * Self.ms)
            h.deliver(tone.next())
            h.media()
            for d in h.outbox.take() where d.rtcpTypes.contains(201) {
                #expect(d.to == ScriptedRelay.workerAddress)
                // Listen-only, but the report names the SSRC the welcome assigned, never 0 (issue 16).
                #expect(Array(d.bytes[4..<8]) == [0x12, 0x34, 0x56, 0x78])
                reports.append(h.elapsed)
            }
        }
        #expect(reports == [1_000 * Self.ms, 2_000 * Self.ms, 3_000 * Self.ms])
    }

    @Test("no media step sends anything before the welcome")
    func nothingBeforeTheWelcome() throws {
        let h = try EngineHarness()
        _ = h.outbox.take()
        var tone = try ToneStream()
        for step in 1...60 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            h.deliver(tone.next(), from: ScriptedRelay.publicAddress)
            #expect(h.media() != nil)
        }
        #expect(h.outbox.take().allSatisfy { $0.signal != nil }, "only join retries before the welcome")
    }

    @Test("the relay's reported loss on our stream raises the encoder's FEC; reports about other streams do not")
    func reportedLossRaisesFEC() throws {
        let h = try Self.joined(listenOnly: false)
        let sender = try #require(h.engine.sender)
        #expect(sender.ssrc == 0x1234_5678)   // the welcome's
        func report(about ssrc: UInt32, percent: Double) throws -> [UInt8] {
            let block = ReportBlock(ssrc: ssrc, fractionLost: UInt8(percent * 256 / 100), cumulativeLost: 0, highestSequence: 0,
                                    jitter: 0, lastSR: 0, delaySinceLastSR: 0)
            var bytes = [UInt8](repeating: 0, count: 64)
            let n = try bytes.withUnsafeMutableBytes { try ReceiverReport(ssrc: 1, reports: [block]).serialize(into: $0) }
            return Array(bytes[0..<n])
        }
        h.deliver(try report(about: 0xDEAD, percent: 10))
        #expect(sender.expectedLossPercent == 0)
        h.deliver(try report(about: 0x1234_5678, percent: 10), from: PeerAddress(ipv4: 10, 0, 0, 9, port: 7401))
        #expect(sender.expectedLossPercent == 0, "a report from outside the relay is not the relay's")
        h.deliver(try report(about: 0x1234_5678, percent: 10))
        #expect(sender.expectedLossPercent == 6)
    }

    @Test("captured audio goes out as RTP with the welcome's SSRC once in the room, not while muted")
    func sendsCapturedAudio() throws {
        let h = try Self.joined(listenOnly: false)
        let frame = ToneStream.tone(440)
        h.advance(to: 20 * Self.ms)
        h.media(captured: frame, level: 20)
        let sent = h.outbox.take()
        let rtp = try #require(sent.first { !$0.isRTCP && $0.signal == nil })
        #expect(rtp.to == ScriptedRelay.workerAddress)
        let ssrc = try rtp.bytes.withUnsafeBytes { try RTPPacketView(parsing: $0).ssrc }
        #expect(ssrc == 0x1234_5678)
        h.engine.setMuted(true, now: h.now)
        guard case .setMuted(true) = h.outbox.take().first?.signal else { Issue.record("no setMuted"); return }
        h.advance(to: 40 * Self.ms)
        h.media(captured: frame, level: 20)
        #expect(h.outbox.take().isEmpty)
        #expect(h.engine.packetsSent == 1)
    }

    @Test("muted by the room: the engine mutes, refuses its own unmute (nothing sent), and follows the room when it lifts the mute")
    func mutedByTheRoom() throws {
        let h = try Self.joined(listenOnly: false)
        let me = MemberEntry(memberID: 7, ssrc: 0x1234_5678, flags: [.publisher, .subscriber], identity: "alice", name: "")
        var byRoom = me
        byRoom.flags.formUnion([.muted, .mutedByRoom])
        h.deliver(ScriptedRelay.datagram(.memberEvent(kind: .muted, member: byRoom, reason: ""), sequence: 2))
        #expect(h.engine.muted && h.engine.mutedByRoom)
        _ = h.outbox.take()
        // Her own unmute is refused here: nothing goes to the relay, and no audio goes out.
        #expect(h.engine.setMuted(false, now: h.now) == false)
        #expect(h.engine.muted && h.engine.mutedByRoom)
        h.advance(to: 20 * Self.ms)
        h.media(captured: ToneStream.tone(440), level: 20)
        #expect(!h.outbox.take().contains { if case .setMuted = $0.signal { true } else { $0.signal == nil && !$0.isRTCP } })
        #expect(h.engine.packetsSent == 0)
        // A mute of her own is allowed (it changes nothing while the room's holds).
        #expect(h.engine.setMuted(true, now: h.now))
        // The room lifts it: unmuted, as the relay says; her own mute works again.
        h.deliver(ScriptedRelay.datagram(.memberEvent(kind: .unmuted, member: me, reason: ""), sequence: 3))
        #expect(!h.engine.muted && !h.engine.mutedByRoom)
        #expect(h.engine.setMuted(true, now: h.now) && h.engine.muted)
        // Another member's room mute is not ours.
        var other = byRoom
        other.memberID = 8
        h.deliver(ScriptedRelay.datagram(.memberEvent(kind: .muted, member: other, reason: ""), sequence: 4))
        #expect(!h.engine.mutedByRoom)
    }

    @Test("received audio is played out at once on a path without jitter, and the stream's counters show it")
    func playsReceivedAudio() throws {
        let h = try Self.joined()
        var tone = try ToneStream()
        var energy: [Double] = []
        for step in 1...50 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            h.deliver(tone.next())
            let frame = try #require(h.media())
            energy.append(frame.reduce(0.0) { $0 + Double($1) * Double($1) } / 960)
        }
        #expect(energy[0] > 0, "a path without jitter: the first packet plays at once (no start-up delay)")
        #expect(energy.suffix(20).allSatisfy { $0 > 1_000_000 }, "the tone (rms ~5600) plays")
        #expect(h.engine.receivedBySSRC == [ToneStream.ssrc: 50])
        let stats = try #require(h.engine.receiver.streams[ToneStream.ssrc]).audio.jitter.stats
        #expect(stats.played > 30 && stats.concealedFrames == 0)
    }

    @Test("`unknown session` to a resume: the engine joins afresh after 1 s, with a new token and nonce; backoff doubles while unanswered")
    func rejoinWithBackoff() throws {
        let h = try Self.joined()
        // The relay goes quiet: the session resumes, and the relay says it does not know us.
        var resumedAt: Instant?
        for step in 1...100 where resumedAt == nil {
            h.advance(to: Int64(step) * 100 * Self.ms)
            h.tick()
            if h.outbox.take().contains(where: { if case .resume = $0.signal { true } else { false } }) { resumedAt = h.now }
        }
        let t = try #require(resumedAt)
        let events = h.deliver(ScriptedRelay.datagram(.refused(code: .unknownSession, reason: "unknown session")))
        #expect(events == [.session(.forgotten("unknown session")), .connectionLost("unknown session"),
                           .rejoining(after: 1_000 * Self.ms)])
        #expect(h.engine.phase == .waitingToRejoin(until: t + 1_000 * Self.ms))
        #expect(!h.engine.inRoom)
        // Nothing plays, nothing goes out, nothing is taken while waiting.
        h.advance(to: t + 999 * Self.ms)
        #expect(h.tick().isEmpty && h.media() == nil)
        #expect(h.deliver(ScriptedRelay.datagram(.pong(timestamp: 0))).isEmpty)
        #expect(h.outbox.take().isEmpty && h.sessionsOpened == 1)
        // At 1 s a new session joins with a fresh token and nonce.
        h.advance(to: t + 1_000 * Self.ms)
        h.tick()
        #expect(h.sessionsOpened == 2)
        let rejoin = h.outbox.take()
        guard case .join(let j) = rejoin.first?.signal else { Issue.record("no join: \(rejoin)"); return }
        #expect(j.token == "t2" && rejoin[0].to == ScriptedRelay.publicAddress)
        // Unanswered, the new session gives up after its 10 tries; the next wait is 2 s (not unreachable: we were in).
        var gaveUp: [ClientEngine.Event] = []
        for step in 1...120 where gaveUp.isEmpty {
            h.advance(to: t + 1_000 * Self.ms + Int64(step) * 100 * Self.ms)
            gaveUp = h.tick()
        }
        let lost = "no answer from the relay at \(ScriptedRelay.publicAddress)"
        #expect(gaveUp == [.connectionLost(lost), .rejoining(after: 2_000 * Self.ms)])
        // A welcome to the third session resets the backoff to 1 s.
        h.advance(to: h.now + 2_000 * Self.ms)
        h.tick()
        h.welcome()
        #expect(h.engine.inRoom && h.sessionsOpened == 3)
        let goodbye = h.deliver(ScriptedRelay.datagram(.goodbye(code: .relayShutdown, reason: "shutting down")))
        #expect(goodbye == [.session(.goodbye(.relayShutdown, "shutting down")), .connectionLost("shutting down"),
                            .rejoining(after: 1_000 * Self.ms)])
    }

    @Test("a relay that never answers is unreachable: the engine is over after 10 joins 500 ms apart")
    func unreachable() throws {
        let h = try EngineHarness()
        var joins = 0
        var events: [ClientEngine.Event] = []
        for step in 0...60 where events.isEmpty {
            h.advance(to: Int64(step) * 100 * Self.ms)
            events = h.tick()
            joins += h.outbox.take().filter { if case .join = $0.signal { true } else { false } }.count
        }
        #expect(joins == SignallingSession.handshakeAttempts)   // the first went out at init
        #expect(events == [.over(.unreachable("no answer from the relay at \(ScriptedRelay.publicAddress)"))])
        #expect(h.elapsed == 5_000 * Self.ms)
    }

    @Test("a refusal, a kick and a goodbye without reconnect are final", arguments: [
        (SignalMessage.refused(code: .tokenExpired, reason: "token expired"), true, ClientEngine.Ending.refused(.tokenExpired, "token expired")),
        (.goodbye(code: .kicked, reason: "bye"), true, .removed(.kicked, "bye")),
        (.goodbye(code: .relayShutdown, reason: "down"), false, .removed(.relayShutdown, "down")),
        (.goodbye(code: .left, reason: "left"), true, .left),
    ])
    func finalEndings(message: SignalMessage, reconnect: Bool, ending: ClientEngine.Ending) throws {
        let h: EngineHarness
        if case .refused = message {
            h = try EngineHarness(reconnect: reconnect)
            _ = h.outbox.take()
        } else {
            h = try Self.joined(reconnect: reconnect)
        }
        let connection: UInt32 = h.engine.session.welcome == nil ? 0 : ScriptedRelay.connection
        let from = h.engine.session.welcome == nil ? ScriptedRelay.publicAddress : ScriptedRelay.workerAddress
        let events = h.deliver(ScriptedRelay.datagram(message, connection: connection), from: from)
        #expect(events.last == .over(ending))
        #expect(h.engine.phase == .over(ending))
        h.advance(to: 60_000 * Self.ms)
        #expect(h.tick().isEmpty && h.media() == nil && h.outbox.take().isEmpty)
        #expect(h.sessionsOpened == 1)
    }

    @Test("leaving sends an RTCP BYE for our SSRC, then the leave, to the worker and ends the engine; nothing is pending afterwards")
    func leave() throws {
        let h = try Self.joined()
        h.advance(to: 10 * Self.ms)
        h.engine.leave(now: h.now)
        let sent = h.outbox.take()
        #expect(sent.count == 2 && sent.allSatisfy { $0.to == ScriptedRelay.workerAddress })
        #expect(sent.first?.rtcpTypes == [201, 202, 203])
        let goodbye = try #require(sent.first).bytes.withUnsafeBytes { raw -> Goodbye? in
            var it = rtcpPackets(in: raw)
            while let p = try? it.next() { if p.packetType == 203 { return try? Goodbye(parsing: p) } }
            return nil
        }
        #expect(goodbye == Goodbye(ssrcs: [0x1234_5678]))   // the welcome's SSRC, listen-only or not
        guard case .leave = sent.last?.signal else { Issue.record("no leave: \(sent)"); return }
        #expect(h.engine.phase == .over(.left))
        h.advance(to: 10_000 * Self.ms)
        #expect(h.tick().isEmpty && h.outbox.take().isEmpty)
    }

    @Test("the same seed gives the same join nonce and RTP stream start; another seed does not")
    func seededRandomness() throws {
        func firstJoinAndPacket(seed: UInt64) throws -> ([UInt8], [UInt8]) {
            let h = try EngineHarness(listenOnly: false, seed: seed)
            guard case .join(let j) = h.outbox.take().first?.signal else { return ([], []) }
            h.advance(to: 1 * Self.ms)
            h.welcome()
            _ = h.outbox.take()
            h.advance(to: 20 * Self.ms)
            h.media(captured: (0..<960).map { Int16(($0 % 40) * 300) }, level: 20)
            let rtp = h.outbox.take().first { $0.signal == nil && !$0.isRTCP }?.bytes ?? []
            return (j.nonce, Array(rtp.prefix(8)))
        }
        let a = try firstJoinAndPacket(seed: 42), b = try firstJoinAndPacket(seed: 42), c = try firstJoinAndPacket(seed: 43)
        #expect(a.0 == b.0 && a.1 == b.1)
        #expect(a.0.count == 16 && a.1.count == 8)
        #expect(a.0 != c.0 && a.1 != c.1)
    }

    @Test("media from anywhere but the relay's ports is not the room's: not counted, not played, no sign of life")
    func foreignMediaIsDropped() throws {
        let h = try Self.joined()
        var tone = try ToneStream()
        for step in 1...20 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            h.deliver(tone.next(), from: PeerAddress(ipv4: 10, 0, 0, 1, port: 9999))
            h.media()
        }
        #expect(h.engine.packetsReceived == 0 && h.engine.receiver.streams.isEmpty)
    }

    @Test("in a forward room the engine reports who speaks from the received levels, and when they stop (600 ms hold)")
    func speakersFromLevels() throws {
        let h = try Self.joined()
        var tone = try ToneStream()
        var heard: [(Interval, [SpeakingTracker.Speaker])] = []
        for step in 1...60 {
            h.advance(to: Int64(step) * 20 * Self.ms)
            if step <= 10 { h.deliver(tone.next()) }
            h.media()
            for case .speakersHeard(let list) in h.tick() { heard.append((h.elapsed, list)) }
        }
        // The last packet arrives at 200 ms; still speaking at 800 ms (within the hold), not at the next tick.
        #expect(heard.map(\.0) == [20 * Self.ms, 820 * Self.ms])
        #expect(heard.first?.1 == [SpeakingTracker.Speaker(ssrc: ToneStream.ssrc, level: 20)])
        #expect(heard.last?.1 == [])
    }
}
