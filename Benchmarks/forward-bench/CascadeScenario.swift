import BenchmarkSupport
import ParleyAuth
import ParleyCrypto
import ParleyRelayCore
import ParleyWire

/// The relay-to-relay links of a cluster (`RelayCore+Cascade.swift`), both ends, in the encrypted scenario's rooms.
/// The core is node "a"; node "b" is simulated: it has one member in every room (its roster, sealed with b's key, is
/// fed to the core), so
/// - **sending**: every forwarded speaker's packet of `a` is also sealed once for b (`sending` runs `Scenario.run`);
/// - **receiving**: b's own speaker in each room sends its packets over the link (sealed in advance with b's key), and
///   the core opens each, runs speaker selection and fans it out to its members of the room (`receive`).
final class CascadeScenario {
    static let secret = Array("forward-bench cluster secret".utf8)
    static let nodeB = ClusterNode(id: "b", udp: "10.9.0.2:7400", ports: [7400], boot: 2, roomMembers: [:], relayKey: String(repeating: "A", count: 43))
    let scenario: Scenario
    private let sealer = CascadeSealer(root: CascadeCipher.root(secret: secret), node: ClusterIdentity.key(of: "b"), boot: 2, worker: 0)
    private let bAddress = PeerAddress(ipv4: 10, 9, 0, 2, port: 7400)
    /// Each room's media datagrams from b, made before the clock starts.
    private var trains: [[[UInt8]]] = []

    /// The encrypted scenario's shape as node a; b's speaker in each room sends `packetsPerRoom` packets.
    init(shape: Shape, packetsPerRoom: Int) {
        let a = ClusterIdentity(nodeID: "a", secret: Self.secret, boot: 1)
        scenario = Scenario(shape: shape, encrypted: true, cluster: a)
        var nodes = [ClusterNode(id: "a", udp: "10.9.0.1:7400", ports: [7400], boot: 1, relayKey: String(repeating: "A", count: 43)), Self.nodeB]
        for r in 0..<shape.rooms { nodes[1].roomMembers["room-\(r)"] = 1 }
        scenario.core.shared.placement.update(rooms: [:], nodes: nodes, selfID: "a")
        // b tells a its member of each room: one speaker (origin id 1, SSRC 0x6000_0000 + room); again each second of
        // the manual clock, as b would, while a's own speakers are timed (`Scenario.run` ticks).
        rosters()
        var lastRoster = scenario.clock.monotonic
        scenario.onTick = { [unowned self] in
            guard scenario.clock.monotonic - lastRoster >= .seconds(1) else { return }
            lastRoster = scenario.clock.monotonic
            rosters()
        }
        // Sealed in the order they are fed (room by room within each 20 ms), as b's worker would send them: the
        // receiver's replay window takes counters in any order within 2,048.
        trains = Array(repeating: [], count: shape.rooms)
        for i in 0..<packetsPerRoom {
            for r in 0..<shape.rooms {
                let header = RTPHeader(payloadType: 111, sequenceNumber: UInt16(truncatingIfNeeded: i), timestamp: UInt32(i) &* 960,
                                       ssrc: 0x6000_0000 + UInt32(r), extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: 10))])
                var rtp = [UInt8](repeating: 0, count: header.serializedSize + 90)
                _ = rtp.withUnsafeMutableBytes { try! header.serialize(into: $0) }
                trains[r].append(seal(CascadeMessage.media(room: "room-\(r)", origin: 1, level: 10, rtp: rtp).bytes))
            }
        }
        scenario.core.outputSent()
    }

    private var epoch: UInt32 = 0

    /// b's roster of every room, fed to the core.
    private func rosters() {
        epoch += 1
        for r in 0..<scenario.shape.rooms {
            let roster = CascadeRoster(epoch: epoch, part: 0, parts: 1, audience: 0, peers: [],
                                       members: [MemberEntry(memberID: 1, ssrc: 0x6000_0000 + UInt32(r), flags: [.publisher, .subscriber],
                                                             identity: "far-\(r)", name: "")])
            feed(CascadeMessage.roster(room: "room-\(r)", roster).bytes)
        }
    }

    private func seal(_ body: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: body.count + CascadeCipher.overhead)
        let n = body.withUnsafeBytes { b in out.withUnsafeMutableBytes { sealer.seal(b, receiverWorker: 0, into: $0) } }
        return Array(out.prefix(n))
    }

    private func feed(_ body: [UInt8]) {
        seal(body).withUnsafeBytes { scenario.core.handle($0, from: bAddress, now: scenario.clock.now) }
    }

    /// b's speakers' packets `range` (room by room, 20 ms apart per room), as the worker loop would take them.
    func receive(_ range: Range<Int>) -> PacketFigures {
        let core = scenario.core, trains = trains, from = bAddress
        return timedPass(core, clock: &scenario.clock, range: range, streams: trains.count) { r, i, now in
            trains[r][i].withUnsafeBytes { core.handle($0, from: from, now: now) }
        }
    }
}
