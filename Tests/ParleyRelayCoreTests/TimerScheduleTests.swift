import ParleyWire
import Testing
@testable import ParleyRelayCore

@Suite("Timer schedule: ticking only once timersDue has come does what ticking every step does")
struct TimerScheduleTests {
    /// What went out, step by step: (step, worker, destination, kind), with kinds free of random values,
    /// sorted within each step.
    typealias Trace = [(step: Int, worker: Int, to: PeerAddress, kind: String)]

    /// Joins, speech with speakers changing, receiver reports, a mute retransmitted to a member who hears
    /// nothing and then times out, everyone leaving, the empty room closing — all on a 20 ms step.
    static func run(tickOnlyWhenDue: Bool) -> (trace: Trace, net: FakeNetwork) {
        var config = RelayCoreConfig()
        config.emptyRoomTimeout = .seconds(3)
        let net = FakeNetwork(config: config)
        net.tickOnlyWhenDue = tickOnlyWhenDue
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        var trace: Trace = []
        var step = 0
        func record() {
            for d in net.sent[trace.count...] {
                let kind: String = d.bytes.withUnsafeBytes { b in
                    if let s = try? SignalDatagram(parsing: b) { return "signal \(s.message.typeCode) seq \(s.sequence) ack \(s.ack)" }
                    if isRTCP(b) { return "rtcp \(b[1])" }
                    if let p = try? RTPPacketView(parsing: b) { return "rtp \(p.sequenceNumber)" }
                    return "other"
                }
                trace.append((step, d.worker, d.to, kind))
            }
            step += 1
        }
        record()
        net.advance(milliseconds: 3_000) {
            record()
            alice.speak(level: 30)
            if step > 40 { bob.speak(level: step % 50 < 25 ? 20 : 127) }   // bob talks in bursts: the speaker list moves
        }
        carol.online = false
        bob.session.setMuted(true, now: net.instant)
        net.exchange()
        net.advance(milliseconds: 17_000) {
            record()
            if step % 100 < 60 { alice.speak(level: 40) }
        }
        alice.session.leave(now: net.instant)
        bob.session.leave(now: net.instant)
        net.exchange()
        net.advance(milliseconds: 4_000) { record() }
        record()
        // Within a step the order follows dictionary iteration, which differs between instances.
        trace.sort { ($0.step, "\($0.to)", $0.kind) < ($1.step, "\($1.to)", $1.kind) }
        return (trace, net)
    }

    @Test("same datagrams at the same steps; far fewer ticks")
    func sameOutput() {
        let everyStep = Self.run(tickOnlyWhenDue: false)
        let whenDue = Self.run(tickOnlyWhenDue: true)
        // The scenario exercises every timer: receiver reports, retransmissions, a timeout, speaker pushes, room close.
        #expect(everyStep.trace.contains { $0.kind == "rtcp 201" })
        #expect(everyStep.net.core.counters.signallingRetransmissions > 0)
        #expect(everyStep.net.core.counters.timeouts == 1)
        #expect(everyStep.trace.contains { $0.kind.hasPrefix("signal \(SignalMessage.speakers([]).typeCode) ") })
        #expect(everyStep.net.core.roomCount == 0)

        #expect(whenDue.trace.count == everyStep.trace.count)
        for (a, b) in zip(everyStep.trace, whenDue.trace) where a != b {
            Issue.record("first difference: every step \(a), when due \(b)")
            break
        }
        #expect(whenDue.net.core.counters == everyStep.net.core.counters)
        #expect(whenDue.net.ticks * 2 < everyStep.net.ticks)
    }

    @Test("after a tick timersDue is the next work; signalling, a first RTP packet or a speaker change bring it forward")
    func dueMoves() {
        let net = FakeNetwork()
        net.tickOnlyWhenDue = true
        let alice = net.addClient("alice"), bob = net.addClient("bob")
        net.joinAll()
        net.advance(milliseconds: 1_000)
        // Idle members: nothing before the keepalive timeout but pings, which arrive as signalling.
        #expect(net.core.timersDue > net.instant)
        let ticks = net.ticks
        net.advance(milliseconds: 200)
        #expect(net.ticks == ticks)   // nothing was due
        alice.speak(level: 30)
        net.exchange()
        #expect(net.core.timersDue == net.instant)   // receiver reports for alice start now
        net.advance(milliseconds: 20)
        #expect(net.sent.contains { $0.to == alice.address && $0.bytes.withUnsafeBytes { isRTCP($0) } })
        // bob's stream starts silent (its first packet starts his receiver reports); then he talks: the forwarded
        // set changes between ticks, and the deferred speaker push must not wait for the due time computed before.
        bob.speak(level: 127)
        net.exchange()
        #expect(net.core.timersDue == net.instant)
        net.advance(milliseconds: 20)
        #expect(net.core.timersDue > net.instant)
        bob.speak(level: 20)
        net.exchange()
        #expect(net.core.timersDue == net.instant)
        net.advance(milliseconds: 20)
        let before = net.core.timersDue
        bob.session.setMuted(true, now: net.instant)
        net.exchange()
        #expect(net.core.timersDue <= net.instant && net.core.timersDue < before)
    }

    @Test("steady speech ticks on the 100 ms housekeeping grid: receiver reports wait for it; acks and pings wake nothing")
    func housekeepingGrid() throws {
        let net = FakeNetwork()
        net.tickOnlyWhenDue = true
        let alice = net.addClient("alice"), bob = net.addClient("bob"), carol = net.addClient("carol")
        net.joinAll()
        net.advance(milliseconds: 1_000)
        var reports: [PeerAddress: [Instant]] = [:]
        var seen = net.sent.count
        let ticks = net.ticks
        var step = 0
        net.advance(milliseconds: 5_000) {
            for d in net.sent[seen...] where d.bytes.withUnsafeBytes({ isRTCP($0) }) { reports[d.to, default: []].append(net.instant) }
            seen = net.sent.count
            step += 1
            alice.speak(level: 30)
            bob.speak(level: step % 40 < 20 ? 20 : 127)   // bob's bursts move the speaker list: pushes, then acks
        }
        // ~50 housekeeping passes plus the rate-limited speaker pushes; ticking at every ack would be ~250.
        #expect(net.ticks - ticks <= 90)
        #expect(carol.speakerUpdates >= 5)
        for who in [alice, bob] {
            let times = reports[who.address] ?? []
            #expect(times.count >= 4)
            for (a, b) in zip(times, times.dropFirst()) {
                // RFC 3550 §6.3.1: the 1 s floor × uniform(0.5, 1.5) / (e − 3/2), then the next housekeeping pass.
                let shortest = Interval(seconds: 0.5 / RTCPInterval.compensation), longest = Interval(seconds: 1.5 / RTCPInterval.compensation)
                #expect(b - a >= shortest && b - a <= longest + RelayCore.housekeepingInterval + .milliseconds(20))
            }
        }
        // A bare ack or a ping from a member leaves the due time where the last tick put it; a mute brings it forward.
        net.core.tick(now: net.now)
        net.collect(0)
        let due = net.core.timersDue
        #expect(due > net.instant)
        let member = try #require(net.core.sessions.member(at: bob.address))
        for message in [SignalMessage.ack, .ping(timestamp: 1)] {
            var bytes = [UInt8](repeating: 0, count: Signalling.maxDatagramSize)
            let n = try bytes.withUnsafeMutableBytes {
                try SignalDatagram(connectionID: member.connectionID, sequence: 0, ack: 0, message: message).serialize(into: $0)
            }
            net.deliverToRelay(Array(bytes[..<n]), from: bob.address, port: 7400)
            #expect(net.core.timersDue == due)
        }
        bob.session.setMuted(true, now: net.instant)
        net.exchange()
        #expect(net.core.timersDue <= net.instant)
    }
}
