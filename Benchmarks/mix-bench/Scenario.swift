import BenchmarkSupport
import Glibc
import ParleyAuth
import ParleyMedia
import ParleyRelayCore
import ParleyWire

/// How many rooms, members and speakers a scenario holds.
struct Shape {
    var rooms: Int
    var membersPerRoom: Int
    var speakersPerRoom: Int
    /// Hybrid rooms: the speakers hear each other forwarded, the others one shared mix.
    var hybrid = false

    /// Distinct encodes per room per 20 ms the mix engine should do while every speaker talks: one shared mix
    /// when anyone only listens, plus (mix rooms) one minus-one per speaker when at least two speak.
    var expectedEncodesPerTick: Int {
        (membersPerRoom > speakersPerRoom ? 1 : 0) + (speakersPerRoom >= 2 && !hybrid ? speakersPerRoom : 0)
    }

    /// Whether member `index` of a room hears the mix (everyone in a mix room; the non-speakers in a hybrid one).
    func hearsMix(member index: Int) -> Bool { !hybrid || index >= speakersPerRoom }
}

/// Discards every line (the core builds none below its threshold).
final class SilentLog: LogSink {
    let threshold = LogLevel.error
    func write(_ level: LogLevel, _ message: String, fields: LogFields) {}
}

/// What the core cost and produced over the measured frames.
struct Window {
    /// `core.handle` of the speakers' RTP packets.
    var rtp = CallCost()
    /// `core.runMixes` calls.
    var mixes = CallCost()
    /// `core.tick` calls.
    var ticks = CallCost()
    /// `core.handle` of the clients' acks and pings.
    var signalling = CallCost()
    /// 20 ms steps measured.
    var frames = 0
    /// Mixed RTP packets queued to listeners.
    var mixedPackets = 0
    /// Forwarded RTP packets queued to speakers (hybrid rooms).
    var forwardedPackets = 0
    /// Distinct mixes encoded: distinct payloads per (room SSRC, timestamp) among the packets queued.
    var encodes = 0
    /// Mixed packets by CSRC count.
    var csrcCounts = [Int](repeating: 0, count: 16)

    /// All core calls together.
    var total: CallCost {
        var c = rtp
        c.add(mixes)
        c.add(ticks)
        c.add(signalling)
        return c
    }

    /// Adds another window.
    mutating func add(_ other: Window) {
        rtp.add(other.rtp); mixes.add(other.mixes); ticks.add(other.ticks); signalling.add(other.signalling)
        frames += other.frames; mixedPackets += other.mixedPackets; forwardedPackets += other.forwardedPackets; encodes += other.encodes
        for i in csrcCounts.indices { csrcCounts[i] += other.csrcCounts[i] }
    }
}

/// One `RelayCore` (worker 0 = one core) with its mix-mode rooms full of simulated clients that joined through
/// the real signalling, driven by a manual clock the way the worker loop drives it: each datagram handled when
/// it arrives, `runMixes` whenever `nextMixDeadline` has passed, `tick` every `tickInterval`, and the output
/// read (by the simulated clients, untimed) and cleared after each call.
final class Scenario {
    let shape: Shape
    let core: RelayCore
    var clock = ManualClock()
    var clients: [SimulatedClient] = []
    var clientByAddress: [PeerAddress: Int] = [:]
    /// Every speaker's stream, room by room.
    var streams: [SpeakerStream] = []
    /// Whether core calls are timed now.
    var measuring = false
    /// What the measured calls cost since `takeWindow()`.
    var window = Window()
    /// Decode check: one listener per room decodes everything it receives.
    private var checkers: [Int: (decoder: OpusDecoder, errors: Int, frames: Int, energy: Double)] = [:]
    private var nextTick = Instant.origin
    private let sendBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
    private let decoded = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 5760)
    private var encodeKeys: [UInt64] = []
    private var owing: [Int] = []

    /// Builds the relay and joins `shape.rooms × shape.membersPerRoom` clients; the first `speakersPerRoom` members
    /// of each room speak `rings[k]`, room r starting `r × 37` frames in (the rooms do not speak in unison).
    /// The rooms' mix clocks are staggered evenly across the 20 ms frame, as rooms opened at random times are.
    init(shape: Shape, config: RelayCoreConfig, rings: [SpeakerRing]) {
        self.shape = shape
        var config = config
        config.allowCleartext = true  // members join with version 1 datagrams built by hand (see SimulatedClient)
        let shared = RelayShared(config: config, verifier: TokenVerifier(keys: [DevDefaults.apiKey: DevDefaults.apiSecret]),
                                 cookieSecret: Crypto.randomBytes(32), workerPorts: [7400])
        core = RelayCore(shared: shared, workerIndex: 0, log: SilentLog())
        encodeKeys.reserveCapacity(1024)
        owing.reserveCapacity(1024)
        let origin = clock.monotonic
        let frame = Interval.milliseconds(20)
        let signer = TokenSigner(apiKey: DevDefaults.apiKey, apiSecret: DevDefaults.apiSecret)
        for room in 0..<shape.rooms {
            // The room's mixer starts at its first join: put that join at phase room/rooms of a frame.
            let phase = frame * Int64(room) / Int64(shape.rooms)
            let elapsed = clock.monotonic - origin
            clock.advance(to: origin + (elapsed / frame + 1) * frame + phase)
            for member in 0..<shape.membersPerRoom {
                let index = clients.count
                let client = SimulatedClient(identity: "member-\(room)-\(member)", roomName: "mixroom-\(room)", roomIndex: room,
                                             address: PeerAddress(ipv4: 0x0A00_0000 | UInt32(index + 1), port: 40_000))
                clients.append(client)
                clientByAddress[client.address] = index
                join(index, signer: signer, publish: member < shape.speakersPerRoom || !shape.hybrid)
                clock.advance(by: .milliseconds(2))  // joins are rate-limited (500/s): keep the manual clock inside the limit
                if member < shape.speakersPerRoom {
                    streams.append(SpeakerStream(address: client.address, ssrc: clients[index].ssrc, roomIndex: room,
                                                 ring: rings[member], frame: room * 37))
                }
                if member == shape.membersPerRoom - 1 {
                    checkers[index] = (try! OpusDecoder(sampleRate: 48_000, channels: 1), 0, 0, 0)
                }
            }
        }
        precondition(core.memberCount == clients.count, "every client should have joined")
        nextTick = clock.monotonic
    }

    deinit {
        sendBuffer.deallocate()
        decoded.deallocate()
    }

    /// Plays `count` frames of 20 ms: each speaker's next packet arrives at its own point of the frame (evenly
    /// spread); mixes and ticks run as they fall due.
    func run(frames count: Int) {
        let step = Interval.milliseconds(20) / Int64(streams.count)
        for _ in 0..<count {
            let frameStart = clock.monotonic
            for s in streams.indices {
                clock.advance(to: frameStart + Int64(s) * step)
                runDueWork()
                let n = streams[s].writeNextPacket(into: sendBuffer)
                let packet = UnsafeRawBufferPointer(rebasing: sendBuffer[0..<n])
                let from = streams[s].address
                measure(&window.rtp, if: measuring) { core.handle(packet, from: from, now: clock.now) }
                drain()
            }
            clock.advance(to: frameStart + .milliseconds(20))
            runDueWork()
            if measuring { window.frames += 1 }
        }
    }

    /// Runs the mixes whose deadline has passed and the tick if due, as the worker loop does after receiving.
    private func runDueWork() {
        if let due = core.nextMixDeadline, due <= clock.monotonic {
            measure(&window.mixes, if: measuring) { core.runMixes(now: clock.now) }
            drain()
        }
        if clock.monotonic >= nextTick {
            measure(&window.ticks, if: measuring) { core.tick(now: clock.now) }
            drain()
            sendDuePings()
            drain()
            nextTick += core.tickInterval
        }
    }

    /// Returns the measured window and starts a new one.
    func takeWindow() -> Window {
        defer { window = Window() }
        return window
    }

    /// The clients read what the core queued (untimed): signalling is answered (acks are core work, timed),
    /// mixed packets are counted, and their distinct payloads give the encodes. Then the output is cleared.
    func drain() {
        var start = 0
        while start < core.output.count {
            let end = core.output.count
            for i in start..<end {
                let datagram = core.output[i]
                guard let first = datagram.bytes.first, let index = clientByAddress[datagram.to] else { continue }
                if first == Signalling.magic {
                    let wasOwed = clients[index].ackOwed
                    receive(try! SignalDatagram(parsing: datagram.bytes), at: index)
                    if clients[index].ackOwed && !wasOwed { owing.append(index) }
                } else if first & 0xC0 == 0x80, datagram.bytes.count > 1, datagram.bytes[1] & 0x7F == SpeakerStream.payloadType {
                    receiveMix(datagram.bytes, at: index)
                }
            }
            for index in owing where clients[index].ackOwed { send(.ack, from: index) }
            owing.removeAll(keepingCapacity: true)
            start = end
        }
        if !encodeKeys.isEmpty {
            encodeKeys.sort()
            var distinct = 1
            for i in 1..<encodeKeys.count where encodeKeys[i] != encodeKeys[i - 1] { distinct += 1 }
            window.encodes += distinct
            encodeKeys.removeAll(keepingCapacity: true)
        }
        core.outputSent()
    }

    private func receiveMix(_ bytes: UnsafeRawBufferPointer, at index: Int) {
        guard measuring else { return }
        guard let packet = try? RTPPacketView(parsing: bytes) else { fail("a mixed packet to \(clients[index].identity) does not parse") }
        guard packet.csrcCount > 0 else {
            // A speaker's own stream, forwarded (hybrid rooms): the mixer's packets always name their contributors.
            clients[index].forwardedReceived += 1
            window.forwardedPackets += 1
            return
        }
        clients[index].mixedReceived += 1
        window.mixedPackets += 1
        window.csrcCounts[packet.csrcCount] += 1
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in packet.payload { hash = (hash ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        encodeKeys.append(hash ^ (UInt64(packet.ssrc) << 32 | UInt64(packet.timestamp)) &* 0x9E37_79B9_7F4A_7C15)
        if var checker = checkers[index] {
            if let n = try? checker.decoder.decode(packet.payload, into: decoded), n > 0 {
                checker.frames += 1
                for s in decoded[0..<n] { checker.energy += Double(s) * Double(s) / Double(n) }
            } else {
                checker.errors += 1
            }
            checkers[index] = checker
        }
    }

    /// The decode check: frames decoded, decode errors, and the mean level (−dBov) of what the checking listeners heard.
    var decodeCheck: (frames: Int, errors: Int, level: Double) {
        var frames = 0, errors = 0, energy = 0.0
        for c in checkers.values { frames += c.frames; errors += c.errors; energy += c.energy }
        let rms = (energy / Double(max(frames, 1))).squareRoot()
        return (frames, errors, rms > 0 ? -20 * log10(rms / 32_768) : 127)
    }
}
