import ParleyAuth
import ParleyClientCore
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// One simulated online identity: a real `PresenceSession` at an address of our choosing.
final class FakePresenceClient {
    let identity: String
    var address: PeerAddress
    let session: PresenceSession
    /// Offline: sends nothing and hears nothing.
    var online = true
    /// Deaf: still sends, hears nothing.
    var deaf = false
    var events: [PresenceSession.Event] = []
    var sentToRelay: [[UInt8]] = []

    init(identity: String, address: PeerAddress, session: PresenceSession) {
        self.identity = identity
        self.address = address
        self.session = session
    }

    func receive(_ bytes: [UInt8], from: PeerAddress, now: Int64) {
        bytes.withUnsafeBytes { events += session.handle($0, from: from, now: Instant(nanoseconds: now)) }
    }

    /// Every call status received: (call id, state, reason).
    var statuses: [(UInt32, CallState, String)] {
        events.compactMap { if case .callStatus(let id, let s, let r, _, _) = $0 { (id, s, r) } else { nil } }
    }
    /// The last status of one call.
    func lastStatus(_ id: UInt32) -> (CallState, String)? {
        statuses.last { $0.0 == id }.map { ($0.1, $0.2) }
    }
    /// Incoming calls received: (call id, from).
    var incoming: [(UInt32, String)] {
        events.compactMap { if case .incomingCall(let id, let from, _) = $0 { (id, from) } else { nil } }
    }
    /// The room and token of an answered call.
    func answered(_ id: UInt32) -> (room: String, token: String)? {
        for e in events { if case .callStatus(id, .answered, _, let room?, let token?) = e { return (room, token) } }
        return nil
    }
}

/// A `FakeNetwork` plus presence clients. The network's own exchange leaves datagrams for addresses it does not
/// know in `undelivered`; this world hands those to its presence clients, and drives both until nothing moves.
final class CallWorld {
    let net: FakeNetwork
    var presences: [FakePresenceClient] = []

    init(config: RelayCoreConfig = RelayCoreConfig(), workers: Int = 1, relayKey: String? = nil, encrypted: Bool = false, webrtc: Bool = false,
         keepsHistory: Bool = false) {
        net = FakeNetwork(config: config, workers: workers, relayKey: relayKey, encrypted: encrypted, webrtc: webrtc, keepsHistory: keepsHistory)
    }

    var core: RelayCore { net.core }

    /// A token with no room claim (a presence token); `room` may be set to show it is ignored.
    func token(_ identity: String, room: String? = nil, grants: Grants = Grants(), expiresIn: Int64 = 3600) -> String {
        TokenSigner(apiKey: "devkey", apiSecret: FakeNetwork.apiSecret).mint(
            TokenClaims(identity: identity, name: identity.capitalized, room: room, expiresAt: net.now.unixSeconds + expiresIn, grants: grants))
    }

    @discardableResult
    func addPresence(_ identity: String, token: String? = nil) -> FakePresenceClient {
        let address = PeerAddress(ipv4: 172, 16, 0, UInt8(presences.count + 2), port: UInt16(6000 + presences.count))
        let session = PresenceSession(server: net.publicAddress, token: token ?? self.token(identity), security: net.security, now: net.instant,
                                      unixMilliseconds: { [unowned net] in net.now.unixMilliseconds })
        let client = FakePresenceClient(identity: identity, address: address, session: session)
        presences.append(client)
        return client
    }

    /// Registers every presence client not yet registered.
    func registerAll() {
        for p in presences where p.online { p.events += p.session.tick(now: net.instant) }
        exchange()
    }

    /// Moves datagrams among presence clients, room clients and cores until nothing is left in flight.
    func exchange(maxRounds: Int = 50) {
        for _ in 0..<maxRounds {
            var moved = false
            for p in presences where p.online {
                for d in p.session.drainOutgoing() {
                    moved = true
                    p.sentToRelay.append(d)
                    net.deliverToRelay(d, from: p.address, port: p.session.destination.port)
                }
            }
            net.exchange()
            var kept: [(bytes: [UInt8], to: PeerAddress, from: PeerAddress)] = []
            for d in net.undelivered {
                if let p = presences.first(where: { $0.address == d.to }) {
                    moved = true
                    if p.online && !p.deaf { p.receive(d.bytes, from: d.from, now: net.monotonic) }
                } else {
                    kept.append(d)
                }
            }
            net.undelivered = kept
            if !moved { return }
        }
    }

    /// Advances the clock in steps, ticking everyone and exchanging after each.
    func advance(milliseconds: Int64, stepMilliseconds: Int64 = 100) {
        var left = milliseconds
        while left > 0 {
            let step = min(stepMilliseconds, left)
            left -= step
            net.advance(milliseconds: step, stepMilliseconds: step)
            for p in presences where p.online { p.events += p.session.tick(now: net.instant) }
            exchange()
        }
    }

    /// alice calls bob and bob's presence rings; returns (alice's call id, bob's call id).
    /// The usual start of a call test: alice and bob online, alice ringing bob (their call ids).
    func aliceRingsBob() throws -> (alice: FakePresenceClient, bob: FakePresenceClient, aliceID: UInt32, bobID: UInt32) {
        let alice = addPresence("alice"), bob = addPresence("bob")
        registerAll()
        let (aliceID, bobID) = try #require(ring(alice, bob))
        return (alice, bob, aliceID, bobID)
    }

    /// The callee answers (or declines) call `id`, and the world settles.
    func answer(_ callee: FakePresenceClient, _ id: UInt32, accept: Bool = true) {
        callee.session.answer(id, accept: accept, now: net.instant)
        exchange()
    }

    func ring(_ caller: FakePresenceClient, _ callee: FakePresenceClient) -> (UInt32, UInt32)? {
        guard let id = caller.session.call(callee.identity, now: net.instant) else { return nil }
        exchange()
        guard let incoming = callee.incoming.last else { return nil }
        return (id, incoming.0)
    }

    /// Call events as (kind, reason label, detail) for compact comparisons.
    var eventSummary: [String] {
        core.recentCallEvents.map { e in
            e.kind.rawValue + (e.endReason.map { ":" + $0.rawValue } ?? "") + " \(e.caller)→\(e.callee)"
        }
    }

    /// Nothing pending: no calls on the relay or at any client still online, no reliable message unacknowledged.
    var settled: Bool {
        core.callSnapshot().isEmpty && presences.allSatisfy { !$0.online || $0.session.calls.isEmpty }
    }
}
