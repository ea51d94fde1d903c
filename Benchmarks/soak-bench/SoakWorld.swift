import BenchmarkSupport
import ParleyAuth
import ParleyClientCore
import ParleyCrypto
import ParleyRelayCore
import ParleyWire

/// Discards every line (the core builds none below its threshold).
final class SilentLog: LogSink {
    let threshold = LogLevel.error
    func write(_ level: LogLevel, _ message: String, fields: LogFields) {}
}

/// One party at one address: a member session, a presence session, or a plain-RTP tool (neither).
final class SoakPeer {
    let address: PeerAddress
    let member: ClientSession?
    let presence: PresenceSession?
    /// A dead client: sends and hears nothing (the relay times it out).
    var online = true
    /// Presence events (incoming calls, call statuses) not yet looked at.
    var presenceEvents: [PresenceSession.Event] = []
    /// The SSRC it sends with (a member's from its welcome; a tool's its own).
    var ssrc: UInt32
    private var sequence = UInt16.random(in: 0...UInt16.max)
    private var timestamp = UInt32.random(in: 0...UInt32.max)
    /// A member's SRTP, made at its first packet after the welcome.
    private var crypto: MediaCrypto?

    init(address: PeerAddress, member: ClientSession? = nil, presence: PresenceSession? = nil, ssrc: UInt32 = 0) {
        self.address = address
        self.member = member
        self.presence = presence
        self.ssrc = ssrc
    }

    /// One 20 ms Opus-sized RTP packet with an RFC 6464 level (speech), or without one (a plain-RTP tool).
    func rtp(withLevel: Bool) -> [UInt8] {
        let extensions: [RTPExtensionElement] = withLevel ? [.audioLevel(id: 1, AudioLevel(voice: true, level: 25))] : []
        let header = RTPHeader(marker: false, payloadType: 111, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc,
                               extensions: extensions)
        sequence &+= 1
        timestamp &+= 960
        var out = [UInt8](repeating: 0x5A, count: header.serializedSize + 120 + MediaCrypto.rtpOverhead)
        _ = out.withUnsafeMutableBytes { try! header.serialize(into: $0) }
        if crypto == nil, let member { crypto = try? member.makeMediaCrypto() }
        guard let crypto else { return Array(out.dropLast(MediaCrypto.rtpOverhead)) }
        let n = out.withUnsafeMutableBytes { b in
            crypto.protect(UnsafeRawBufferPointer(rebasing: b[..<(header.serializedSize + 120)]), into: b)
        }
        return Array(out.prefix(n ?? 0))
    }
}

/// One `RelayCore` on a manual clock and the peers talking to it, by address. Datagrams move only in `exchange`,
/// time only in `step`: the run is the same however fast the machine is.
final class SoakWorld {
    let core: RelayCore
    var clock = ManualClock()
    private(set) var peers: [PeerAddress: SoakPeer] = [:]
    private var addressCounter: UInt32 = 0
    private let signer = TokenSigner(apiKey: DevDefaults.apiKey, apiSecret: DevDefaults.apiSecret)
    let server = PeerAddress(ipv4: 127, 0, 0, 1, port: 7400)
    /// The relay's key: sessions run the encrypted handshake, as real clients do.
    let relayIdentity = X25519KeyPair()

    init(config: RelayCoreConfig) {
        let shared = RelayShared(config: config, verifier: TokenVerifier(keys: [DevDefaults.apiKey: DevDefaults.apiSecret]),
                                 cookieSecret: Crypto.randomBytes(32), workerPorts: [server.port], identity: relayIdentity)
        core = RelayCore(shared: shared, workerIndex: 0, log: SilentLog())
    }

    /// A fresh address (10.0.0.0/8, never reused within 16 M peers).
    private func newAddress() -> PeerAddress {
        addressCounter &+= 1
        return PeerAddress(ipv4: 0x0A00_0000 | (addressCounter & 0x00FF_FFFF), port: 40_000)
    }

    /// A join token (a presence token when `room` is nil); another `generation` makes another token for the same claims.
    func token(_ identity: String, room: String?, mode: String? = nil, generation: Int64 = 0) -> String {
        signer.mint(TokenClaims(identity: identity, room: room, expiresAt: clock.now.unixSeconds + 86_400 * 365 + generation,
                                grants: Grants(), mode: mode))
    }

    /// A member session that starts joining `room` (call `exchange`).
    func addMember(_ identity: String, room: String, token: String? = nil, mode: String? = nil) -> SoakPeer {
        let session = ClientSession(server: server, token: token ?? self.token(identity, room: room, mode: mode), room: room,
                                    speakersFromMedia: true, security: .encrypted(relayKey: relayIdentity.publicKey), now: clock.monotonic, unixMilliseconds: { [unowned self] in clock.now.unixMilliseconds })
        let peer = SoakPeer(address: newAddress(), member: session)
        peers[peer.address] = peer
        _ = session.tick(now: clock.monotonic)
        return peer
    }

    /// A presence session that starts registering (call `exchange`).
    func addPresence(_ identity: String) -> SoakPeer {
        let session = PresenceSession(server: server, token: token(identity, room: nil),
                                      security: .encrypted(relayKey: relayIdentity.publicKey), now: clock.monotonic,
                                      unixMilliseconds: { [unowned self] in clock.now.unixMilliseconds })
        let peer = SoakPeer(address: newAddress(), presence: session)
        peers[peer.address] = peer
        peer.presenceEvents += session.tick(now: clock.monotonic)
        return peer
    }

    /// A plain-RTP tool with its own SSRC (an endpoint latches it from its first packet).
    func addTool() -> SoakPeer {
        let peer = SoakPeer(address: newAddress(), ssrc: UInt32.random(in: 1...0x7FFF_FFFF))
        peers[peer.address] = peer
        return peer
    }

    /// Forgets a peer (its session is over, or it died and the relay will time it out).
    func remove(_ peer: SoakPeer) {
        peers[peer.address] = nil
        if peers.isEmpty { peers = [:] }  // a flood's table capacity is the benchmark's, not the core's: let it go
    }

    /// Hands one datagram to the core, as from `peer`.
    func send(_ bytes: [UInt8], from peer: SoakPeer) {
        bytes.withUnsafeBytes { core.handle($0, from: peer.address, now: clock.now) }
    }

    /// Moves datagrams until nothing is in flight: the peers' signalling to the core, the core's output to the peers.
    func exchange() {
        for _ in 0..<50 {
            var moved = false
            for peer in peers.values where peer.online {
                let outgoing = peer.member?.drainOutgoing() ?? peer.presence?.drainOutgoing() ?? []
                for d in outgoing {
                    moved = true
                    send(d, from: peer)
                }
            }
            for i in 0..<core.output.count {
                let d = core.output[i]
                moved = true
                guard let peer = peers[d.to], peer.online, d.bytes.first == Signalling.magic else { continue }
                if let m = peer.member {
                    _ = m.handle(d.bytes, from: server, now: clock.monotonic)  // one worker: every answer comes from its port
                    if let w = m.welcome { peer.ssrc = w.ssrc }
                } else if let p = peer.presence {
                    peer.presenceEvents += p.handle(d.bytes, from: server, now: clock.monotonic)
                }
            }
            core.outputSent()
            if !moved { return }
        }
    }

    /// 20 ms pass: each of `speakers` sends one packet, every peer and the core tick, the mixes run.
    func step(speakers: [SoakPeer]) {
        clock.advance(by: .milliseconds(20))
        for s in speakers where s.online { send(s.rtp(withLevel: s.member != nil), from: s) }
        core.outputSent()
        for peer in peers.values where peer.online {
            _ = peer.member?.tick(now: clock.monotonic)
            if let p = peer.presence { peer.presenceEvents += p.tick(now: clock.monotonic) }
        }
        core.tick(now: clock.now)
        core.runMixes(now: clock.now)
        exchange()
    }

    /// `milliseconds` of 20 ms steps.
    func run(milliseconds: Int64, speakers: [SoakPeer] = []) {
        for _ in 0..<max(1, milliseconds / 20) { step(speakers: speakers) }
    }
}
