import BenchmarkSupport
import ParleyAuth
import ParleyCrypto
import ParleyNet
import ParleyRelayCore
import ParleyWire

/// How many rooms, members and speakers a scenario holds.
struct Shape {
    var rooms: Int
    var membersPerRoom: Int
    var speakersPerRoom: Int
}

/// Discards every line (the core builds none below its threshold).
final class SilentLog: LogSink {
    let threshold = LogLevel.error
    func write(_ level: LogLevel, _ message: String, fields: LogFields) {}
}

/// What one pass of the packet loop cost, the ticks inside it excluded.
struct PacketFigures {
    /// Datagrams handed to `RelayCore.handle`.
    var packetsIn = 0
    /// Datagrams queued for listeners (`RelayCounters.forwarded`).
    var forwarded = 0
    /// Wall time spent in `handle` and `outputSent`.
    var nanoseconds: Int64 = 0
    /// malloc-family calls in the same span.
    var allocations: UInt64 = 0

    /// Cost per received datagram.
    var nanosecondsPerPacketIn: Double { Double(nanoseconds) / Double(max(1, packetsIn)) }
    /// The same cost divided over the datagrams it queued for listeners.
    var nanosecondsPerForwarded: Double { Double(nanoseconds) / Double(max(1, forwarded)) }
    /// malloc-family calls per queued datagram (the goal is zero).
    var allocationsPerForwarded: Double { Double(allocations) / Double(max(1, forwarded)) }
}

/// Feeds `core` packet `i` of each of `streams` streams for every `i` in `range` (the streams interleaved, 20 ms apart
/// per stream, the clock advanced before each), sending the output every `Scenario.batchSize` packets as the worker loop
/// does; the cost of the whole pass. No ticks (the scenarios that use it need none).
func timedPass(_ core: RelayCore, clock: inout ManualClock, range: Range<Int>, streams: Int,
               feed: (_ stream: Int, _ packet: Int, _ now: Moment) -> Void) -> PacketFigures {
    var figures = PacketFigures()
    let step = Interval.milliseconds(20) / Int64(max(1, streams))
    let forwardedBefore = core.counters.forwarded
    var handled = 0
    let allocationsBefore = Allocations.count
    let start = monotonicNanoseconds()
    for i in range {
        for s in 0..<streams {
            clock.advance(by: step)
            feed(s, i, clock.now)
            handled += 1
            if handled % Scenario.batchSize == 0 { core.outputSent() }
        }
    }
    core.outputSent()
    figures.nanoseconds = monotonicNanoseconds() - start
    figures.allocations = Allocations.count - allocationsBefore
    figures.packetsIn = handled
    figures.forwarded = Int(core.counters.forwarded - forwardedBefore)
    return figures
}

/// What the `tick` calls inside a pass cost.
struct TickFigures {
    /// `tick` calls.
    var ticks = 0
    /// Wall time inside them.
    var nanoseconds: Int64 = 0
    /// malloc-family calls inside them.
    var allocations: UInt64 = 0

    /// Adds another pass's ticks.
    mutating func add(_ other: TickFigures) {
        ticks += other.ticks
        nanoseconds += other.nanoseconds
        allocations += other.allocations
    }
}

/// One `RelayCore` (worker 0) with its rooms full of simulated clients that joined through the real signalling,
/// driven by a manual clock the way the worker loop drives it: datagrams in batches of 64, then `outputSent`,
/// and `tick` every 20 ms of (manual) time.
final class Scenario {
    /// Datagrams the real loop receives per `recvmmsg` batch before it sends the output.
    static let batchSize = 64

    let shape: Shape
    let core: RelayCore
    var clock = ManualClock()
    var clients: [SimulatedClient] = []
    var clientByAddress: [PeerAddress: Int] = [:]
    /// Every speaker's stream, room by room, speakers in join order within a room.
    var streams: [SpeakerStream] = []
    /// Encrypted scenarios: handshake initiations the core handled while members joined, and the time it took.
    var initiations = (count: 0, nanoseconds: Int64(0))
    private var nextTick: Instant
    /// Called after each tick, untimed (what other parties send on their own schedule).
    var onTick: (() -> Void)?
    /// Each 20 ms round starts with `HotLines.prefetch` of the core's lines, as the worker's wakeup does (timed).
    nonisolated(unsafe) static var prefetch = true
    private var prefetch: Bool { Self.prefetch }

    /// Builds the relay and joins `shape.rooms × shape.membersPerRoom` clients; the first `speakersPerRoom`
    /// members of each room speak.
    /// With `encrypted`, members join through the encrypted protocol (real `ClientSession`s) and speak SRTP, so
    /// the relay unprotects each packet and protects it once with the room's key; otherwise they speak the cleartext
    /// protocol (`allowCleartext`), built by hand in `SimulatedClient`.
    init(shape: Shape, config: RelayCoreConfig = RelayCoreConfig(), encrypted: Bool = false, cluster: ClusterIdentity? = nil) {
        self.shape = shape
        var config = config
        config.allowCleartext = !encrypted
        let shared = RelayShared(config: config, verifier: TokenVerifier(keys: [DevDefaults.apiKey: DevDefaults.apiSecret]),
                                 cookieSecret: Crypto.randomBytes(32), workerPorts: [7400], identity: encrypted ? X25519KeyPair() : nil,
                                 cluster: cluster)
        core = RelayCore(shared: shared, workerIndex: 0, log: SilentLog())
        nextTick = clock.monotonic
        let signer = TokenSigner(apiKey: DevDefaults.apiKey, apiSecret: DevDefaults.apiSecret)
        for room in 0..<shape.rooms {
            for member in 0..<shape.membersPerRoom {
                let index = clients.count
                let client = SimulatedClient(identity: "member-\(room)-\(member)", roomName: "room-\(room)", roomIndex: room,
                                             address: PeerAddress(ipv4: 0x0A00_0000 | UInt32(index + 1), port: 40_000))
                clients.append(client)
                clientByAddress[client.address] = index
                join(index, signer: signer)
                // Joins are rate-limited (500/s): keep the manual clock inside the limit.
                clock.advance(by: .milliseconds(2))
                if member < shape.speakersPerRoom {
                    var stream = SpeakerStream(address: client.address, ssrc: clients[index].ssrc, roomIndex: room)
                    stream.crypto = clients[index].session.flatMap { try? $0.makeMediaCrypto() }
                    streams.append(stream)
                }
            }
        }
        precondition(core.memberCount == clients.count, "every client should have joined")
    }

    /// Feeds the core every packet of `train` as the worker loop would, and returns the cost of the packet path
    /// and, separately, of the ticks that fell due in between. When `watchedSpeaker` is set, also returns the
    /// allocations made while handling that speaker's packets (counted one by one).
    func run(_ train: PacketTrain, watchedSpeaker: Int? = nil) -> (packets: PacketFigures, ticks: TickFigures, watchedAllocations: UInt64) {
        var packets = PacketFigures()
        var ticks = TickFigures()
        var watchedAllocations: UInt64 = 0
        // 20 ms between two packets of one speaker, the speakers evenly interleaved.
        let step = Interval.milliseconds(20) / Int64(streams.count)
        let forwardedBefore = core.counters.forwarded
        var i = 0
        var speaker = 0
        while i < train.count {
            let allocationsBefore = Allocations.count
            let start = monotonicNanoseconds()
            if prefetch { core.hotLines.prefetch() }
            while i < train.count, clock.monotonic < nextTick {
                clock.advance(by: step)
                if speaker == watchedSpeaker {
                    let before = Allocations.count
                    core.handle(train.packet(i), from: train.sender(i), now: clock.now)
                    watchedAllocations += Allocations.count - before
                } else {
                    core.handle(train.packet(i), from: train.sender(i), now: clock.now)
                }
                speaker = speaker + 1 == streams.count ? 0 : speaker + 1
                i += 1
                if i % Self.batchSize == 0 { core.outputSent() }
            }
            packets.nanoseconds += monotonicNanoseconds() - start
            packets.allocations += Allocations.count - allocationsBefore
            while clock.monotonic >= nextTick {
                ticks.add(tick())
                nextTick += core.tickInterval
            }
        }
        core.outputSent()
        packets.packetsIn = train.count
        packets.forwarded = Int(core.counters.forwarded - forwardedBefore)
        return (packets, ticks, watchedAllocations)
    }

    /// One tick of the worker loop: `core.tick`, timed, then the clients' part, untimed: they acknowledge what
    /// the relay sent them reliably and send their keepalive pings.
    private func tick() -> TickFigures {
        let queuedBefore = core.output.count
        let allocationsBefore = Allocations.count
        let start = monotonicNanoseconds()
        core.tick(now: clock.now)
        let figures = TickFigures(ticks: 1, nanoseconds: monotonicNanoseconds() - start,
                                  allocations: Allocations.count - allocationsBefore)
        answerSignalling(queuedFrom: queuedBefore)
        sendDuePings()
        onTick?()
        ColdCaches.evict()
        return figures
    }

    /// Members the relay currently forwards, by address (read from its public snapshot).
    var forwardedSpeakers: Set<PeerAddress> {
        Set(core.snapshot().flatMap { room in room.members.filter(\.forwarded).map(\.address) })
    }
}
