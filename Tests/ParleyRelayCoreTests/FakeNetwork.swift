import ParleyAuth
import ParleyClientCore
import ParleyCrypto
import ParleyWebRTC
import ParleyWire
@testable import ParleyRelayCore

/// A deterministic world for the relay core: a manual clock, one or more cores (workers), and clients
/// (real `ClientSession`s) at addresses of our choosing. Datagrams move only when `exchange()` runs.
final class FakeNetwork {
    static let apiSecret = "test-secret-0123456789abcdef"
    static let startUnixMilliseconds: Int64 = 1_800_000_000_000

    var monotonic: Int64 = 1_000_000_000
    var now: Moment { Moment(monotonic: instant, unixMilliseconds: Self.startUnixMilliseconds + (instant - .origin).milliseconds) }
    /// The clock as the relay core reads it (`monotonic` is what the client sessions take, in nanoseconds).
    var instant: Instant { Instant(nanoseconds: monotonic) }
    let shared: RelayShared
    let cores: [RelayCore]
    let log = MemoryLogSink(threshold: .debug)
    var clients: [FakeClient] = []
    /// Every datagram a core sent, in order: (worker, bytes, to, viaPublicPort).
    var sent: [(worker: Int, bytes: [UInt8], to: PeerAddress, viaPublic: Bool)] = []
    /// Datagrams to addresses no client holds (e.g. a client's old address after a move).
    var undelivered: [(bytes: [UInt8], to: PeerAddress, from: PeerAddress)] = []
    /// Tick a core only when it has members and its `timersDue` has come (or it has none), as the worker loop
    /// does, instead of at every step.
    var tickOnlyWhenDue = false
    /// `tick` calls made by `advance`.
    var ticks = 0

    /// The relay's identity key in every fake network (encrypted sessions pin its public half).
    static let relayIdentity = X25519KeyPair(secretKey: [UInt8](repeating: 0x42, count: 32))!
    /// Whether clients speak the encrypted protocol (version 2, SRTP media) or, as the tests of signalling and
    /// forwarding logic do by default, the cleartext one the relay admits with `allowCleartext`.
    let encrypted: Bool
    /// The security new clients use.
    var security: ParleyClientCore.SignallingSession.Security { encrypted ? .encrypted(relayKey: Self.relayIdentity.publicKey) : .cleartext }

    /// `seed` fixes every random number the cores draw (worker k draws from `seed + k`): a run is repeatable.
    /// `relayKey` is the relay's public key (base64url) tokens naming another relay are refused against. `webrtc` gives
    /// the relay a DTLS certificate and context (made for the fake clock's start), so it takes WebRTC members; without
    /// it, as in production when OpenSSL failed, they are refused.
    /// The last octet of the relay's address (10.0.0.`host`) and the third of its clients' (192.168.`host`.x): a second
    /// network in a cluster test has its own.
    let host: UInt8
    /// Other nodes' networks (a cluster test): datagrams to their relay's address go to their cores.
    var others: [FakeNetwork] = []

    init(config: RelayCoreConfig = RelayCoreConfig(), workers: Int = 1, seed: UInt64 = 13, relayKey: String? = nil, encrypted: Bool = false,
         webrtc: Bool = false, host: UInt8 = 1, cluster: ClusterIdentity? = nil, keepsHistory: Bool = false) {
        self.host = host
        var ports: [UInt16] = []
        for k in 0..<workers { ports.append(7400 + UInt16(k)) }
        var config = config
        if !encrypted { config.allowCleartext = true }
        self.encrypted = encrypted
        let shared = RelayShared(config: config, verifier: TokenVerifier(keys: ["devkey": Self.apiSecret], relayKey: relayKey),
                                 cookieSecret: Array(repeating: 7, count: 32), workerPorts: ports, identity: Self.relayIdentity,
                                 dtls: webrtc ? try! DTLSContext(certificate: DTLSCertificate(now: Self.startUnixMilliseconds / 1000)) : nil,
                                 cluster: cluster, keepsHistory: keepsHistory)
        let log = self.log
        self.shared = shared
        cores = (0..<workers).map {
            RelayCore(shared: shared, workerIndex: $0, log: log, random: SeededRandomNumberGenerator(seed: seed &+ UInt64($0)))
        }
    }

    var core: RelayCore { cores[0] }
    var publicAddress: PeerAddress { PeerAddress(ipv4: 10, 0, 0, host, port: 7400) }
    /// The address a datagram from `worker` comes from: the public port, or the worker's own.
    func relayAddress(worker: Int, viaPublic: Bool) -> PeerAddress {
        PeerAddress(ipv4: 10, 0, 0, host, port: viaPublic ? 7400 : 7400 + UInt16(worker))
    }

    func token(_ identity: String, room: String = "lobby", grants: Grants = Grants(), expiresIn: Int64 = 3600,
               notBefore: Int64? = nil, mode: String? = nil, secret: String = FakeNetwork.apiSecret, relayKey: String? = nil,
               audience: Bool? = nil) -> String {
        TokenSigner(apiKey: "devkey", apiSecret: secret).mint(
            TokenClaims(identity: identity, name: identity.capitalized, room: room, expiresAt: now.unixSeconds + expiresIn,
                        notBefore: notBefore, grants: grants, mode: mode, relayKey: relayKey, audience: audience))
    }

    @discardableResult
    func addClient(_ identity: String, room: String = "lobby", port: UInt16? = nil, token: String? = nil, muted: Bool = false,
                   speakersFromMedia: Bool = false, redundancy: Bool = false) -> FakeClient {
        let address = PeerAddress(ipv4: 192, 168, host, UInt8(clients.count + 2), port: port ?? UInt16(5000 + clients.count))
        let session = ClientSession(server: publicAddress, token: token ?? self.token(identity, room: room), room: room,
                                    muted: muted, speakersFromMedia: speakersFromMedia, redundancy: redundancy,
                                    security: security, now: instant,
                                    unixMilliseconds: { [unowned self] in self.now.unixMilliseconds })
        let client = FakeClient(identity: identity, address: address, session: session)
        clients.append(client)
        return client
    }

    /// Datagrams passed to other workers' shares of a room (`RelayCore.spread`) so far.
    var spreadDatagrams = 0

    /// Datagrams the cores queued, copied out right after each call (forwarded entries point into the
    /// received buffer, which is valid only until the next receive — as in the real loop).
    var inFlight: [(worker: Int, bytes: [UInt8], to: PeerAddress, viaPublic: Bool)] = []

    /// Feeds one datagram to the core that owns `port` (the public port is worker 0's).
    func deliverToRelay(_ bytes: [UInt8], from: PeerAddress, port: UInt16) {
        let worker = Int(port - 7400)
        bytes.withUnsafeBytes { cores[worker].handle($0, from: from, now: now) }
        collect(worker)
    }

    func collect(_ worker: Int) {
        let core = cores[worker]
        for i in 0..<core.output.count {
            let d = core.output[i]
            inFlight.append((worker, Array(d.bytes), d.to, d.viaPublicPort))
        }
        // Other workers' shares go out on this worker's socket, as the real helpers send them.
        for job in core.spread {
            spreadDatagrams += job.addresses.count
            for a in job.addresses { inFlight.append((worker, Array(job.bytes), a, false)) }
        }
        for h in core.handoffs {
            cores[h.worker].handleHandoff(h.handoff, from: h.from, now: now)
            collect(h.worker)
        }
        core.outputSent()
    }

    /// Moves datagrams until nothing is left in flight (clients' queued output, cores' output, handoffs).
    func exchange(maxRounds: Int = 50) {
        for _ in 0..<maxRounds {
            var moved = false
            for c in clients where c.online {
                for d in c.session.drainOutgoing() {
                    moved = true
                    c.sentToRelay.append(d)
                    if c.dropOutgoing { continue }
                    deliverToRelay(d, from: c.address, port: c.session.destination.port)
                }
                for d in c.pendingMedia {
                    moved = true
                    c.sentMedia.append(d)
                    deliverToRelay(d, from: c.address, port: c.session.destination.port)
                }
                c.pendingMedia.removeAll()
            }
            for k in cores.indices { collect(k) }
            let batch = inFlight
            inFlight.removeAll()
            for d in batch {
                moved = true
                sent.append(d)
                let from = relayAddress(worker: d.worker, viaPublic: d.viaPublic)
                if let c = clients.first(where: { $0.address == d.to && $0.online }) {
                    c.receive(d.bytes, from: from, now: monotonic)
                } else if let other = others.first(where: { var a = $0.publicAddress; a.port = d.to.port; return a == d.to }) {
                    other.deliverToRelay(d.bytes, from: from, port: d.to.port)
                } else {
                    undelivered.append((d.bytes, d.to, from))
                }
            }
            if !moved { return }
        }
    }

    /// Advances the clock in `stepMilliseconds` steps, ticking clients and cores, exchanging after each.
    func advance(milliseconds: Int64, stepMilliseconds: Int64 = 20, each: (() -> Void)? = nil) {
        var left = milliseconds
        while left > 0 {
            let step = min(stepMilliseconds, left)
            monotonic += Interval.milliseconds(step).nanoseconds
            left -= step
            each?()
            runTimers()
        }
    }

    /// Ticks clients and cores at the current time, and exchanges what they send (one step of `advance`).
    func runTimers() {
        for c in clients where c.online { c.events += c.session.tick(now: instant) }
        for (k, core) in cores.enumerated() {
            if !tickOnlyWhenDue || !core.hasMembers || instant >= core.timersDue {
                core.tick(now: now)
                ticks += 1
            }
            core.runMixes(now: now)
            collect(k)
        }
        exchange()
    }

    /// Joins every client not yet joined.
    func joinAll() {
        for c in clients { c.events += c.session.tick(now: instant) }
        exchange()
    }
}

/// One simulated member.
final class FakeClient {
    let identity: String
    var address: PeerAddress
    let session: ClientSession
    var online = true
    var dropOutgoing = false
    var events: [ClientSession.Event] = []
    /// When its first welcome arrived.
    var joinedAt: Instant?
    var sentToRelay: [[UInt8]] = []
    var pendingMedia: [[UInt8]] = []
    /// Media sent to the relay, as it went on the wire.
    var sentMedia: [[UInt8]] = []
    /// RTP received: ssrc → sequence numbers.
    var media: [UInt32: [UInt16]] = [:]
    /// RTP received, whole datagrams in arrival order.
    var received: [[UInt8]] = []
    var rtcp: [[UInt8]] = []
    /// SRTP once welcomed through the encrypted protocol: `rtp` protects, `receive` unprotects (and keeps plaintext).
    var crypto: MediaCrypto?
    /// Media from the relay that did not authenticate.
    var rejectedMedia = 0
    private var sequence: UInt16 = 65_500
    private var timestamp: UInt32 = 4_294_960_000

    init(identity: String, address: PeerAddress, session: ClientSession) {
        self.identity = identity
        self.address = address
        self.session = session
    }

    var ssrc: UInt32 { session.welcome?.ssrc ?? 0 }
    var memberID: UInt32 { session.welcome?.memberID ?? 0 }

    func receive(_ datagram: [UInt8], from: PeerAddress, now: Int64) {
        var bytes = datagram
        if datagram.first != Signalling.magic, let crypto {
            var plain = [UInt8](repeating: 0, count: datagram.count)
            let n = datagram.withUnsafeBytes { r in plain.withUnsafeMutableBytes { crypto.unprotect(r, into: $0) } }
            guard let n else { rejectedMedia += 1; return }
            bytes = Array(plain.prefix(n))
        }
        bytes.withUnsafeBytes { b in
            if b[0] == Signalling.magic {
                let new = session.handle(b, from: from, now: Instant(nanoseconds: now))
                events += new
                if crypto == nil { crypto = try? session.makeMediaCrypto() }
                for case .roomKey(let key, let indices) in new { try? crypto?.installRoomKey(key, streamIndices: indices) }
                if joinedAt == nil, session.welcome != nil { joinedAt = Instant(nanoseconds: now) }
            } else if isRTCP(b) {
                rtcp.append(bytes)
            } else if let p = try? RTPPacketView(parsing: b) {
                media[p.ssrc, default: []].append(p.sequenceNumber)
                received.append(bytes)
            }
        }
    }

    /// Builds one RTP packet with an RFC 6464 level (0 loud … 127 silent).
    func rtp(level: UInt8, ssrc: UInt32? = nil, payload: Int = 60) -> [UInt8] {
        let header = RTPHeader(marker: false, payloadType: 111, sequenceNumber: sequence, timestamp: timestamp,
                               ssrc: ssrc ?? self.ssrc, extensions: [.audioLevel(id: 1, AudioLevel(voice: level < 127, level: level))])
        sequence &+= 1
        timestamp &+= 960
        var out = [UInt8](repeating: 0, count: header.serializedSize + payload)
        _ = out.withUnsafeMutableBytes { try! header.serialize(into: $0) }
        for i in header.serializedSize..<out.count { out[i] = UInt8(truncatingIfNeeded: i) }
        return protect(out)
    }

    /// `packet` (RTP or RTCP) as this client sends it: SRTP-protected once it has keys, else as it is.
    func protect(_ packet: [UInt8]) -> [UInt8] {
        guard let crypto else { return packet }
        var out = [UInt8](repeating: 0, count: packet.count + MediaCrypto.rtcpOverhead)
        let n = packet.withUnsafeBytes { p in out.withUnsafeMutableBytes { crypto.protect(p, into: $0) } }
        return Array(out.prefix(n ?? 0))
    }

    /// Queues one RTP packet for the next exchange.
    func speak(level: UInt8) { pendingMedia.append(rtp(level: level)) }

    var memberEvents: [(MemberEventKind, String, String)] {
        events.compactMap { if case .member(let k, let m, let r) = $0 { return (k, m.identity, r) } else { return nil } }
    }
    var lastSpeakers: [SpeakerEntry]? {
        for e in events.reversed() { if case .speakers(let s) = e { return s } }
        return nil
    }
    var speakerUpdates: Int { events.filter { if case .speakers = $0 { true } else { false } }.count }
}

extension RelayCore {
    /// The member of this core with `identity` (the first found, in any room).
    func member(identity: String) -> Member? {
        for case .member(let m) in sessions.byConnection.values where m.identity == identity { return m }
        return nil
    }
}
