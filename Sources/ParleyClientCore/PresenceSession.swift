import ParleyAuth
import ParleyWire

/// An online identity's side of Parley presence as a pure state machine: register (with the cookie round trip),
/// reliable messages, keepalives, resume from a new address; calls to and from other online identities, and
/// direct texts. The caller's loop sends `drainOutgoing()` to `destination`, feeds signalling datagrams to
/// `handle` with their source (only the relay's are taken), and calls `tick` every few tens of milliseconds — as
/// with `ClientSession`, and it ends the same ways: on `.forgotten`, a goodbye saying the relay shuts down or timed
/// us out, or `.ended` once registered, its owner registers afresh after `RejoinBackoff`'s wait.
///
/// A call, from this side:
/// ```
/// outgoing: call() → calling ─ringing→ ringing ─answered→ answered(room, token) ─ended→ (gone)
///                       └─ declined / noAnswer / unavailable / failed → (gone)
/// incoming: incomingCall → incoming ─answer(accept: true)→ answering ─answered→ answered(room, token) ─ended→ (gone)
///                             └─ answer(accept: false) / hangUp / ended → (gone)
/// ```
/// `hangUp` ends any call at once locally; the relay tells the other party. With `answered`, join `room` with
/// `token` through a `ClientSession` for the audio.
public final class PresenceSession {
    /// Where the session stands.
    public enum State: Equatable, Sendable {
        /// Register sent, waiting for the welcome.
        case registering
        /// Online.
        case registered
        /// Nothing heard from the relay for a while: proving the session from (possibly) a new address.
        case resuming
        /// Over; the reason is shown to the person.
        case ended(String)
    }

    /// Where one call stands on this side.
    public enum CallPhase: Equatable, Sendable {
        /// Invite sent; the relay has not answered yet.
        case calling
        /// The callee's presence is being rung.
        case ringing
        /// Someone is calling us; `answer` or `hangUp`.
        case incoming
        /// We accepted; waiting for the room.
        case answering
        /// Both sides are in: join `room` with `token`.
        case answered(room: String, token: String)
    }

    /// One call in progress.
    public struct Call: Equatable, Sendable {
        /// The id this side knows the call by.
        public var id: UInt32
        /// The other party's identity.
        public var peer: String
        /// The other party's display name (incoming calls; empty otherwise).
        public var peerName: String
        /// True when we placed the call.
        public var outgoing: Bool
        /// Where it stands.
        public var phase: CallPhase
    }

    /// What the session tells its owner.
    public enum Event: Equatable, Sendable {
        /// Online; the welcome's room is "" and its mode "presence".
        case registered(Welcome)
        /// Someone calls: answer with `answer(callID, accept:)`.
        case incomingCall(callID: UInt32, from: String, name: String)
        /// A call's state changed; `room` and `token` come with `answered`.
        case callStatus(callID: UInt32, state: CallState, reason: String, room: String?, token: String?)
        /// A direct text from another online identity.
        case text(from: String, text: String)
        /// Whether a direct text was delivered ("bob is not online" when not).
        case textStatus(messageID: UInt32, delivered: Bool, reason: String)
        /// The relay refused the registration.
        case refused(RefusalCode, String)
        /// The relay no longer knows this session (it restarted, or dropped us while we were away) and said so to our
        /// resume: the session is over, and a fresh registration is the way back.
        case forgotten(String)
        /// The relay ended the session (replaced by a newer registration, timed out, shutting down).
        case goodbye(GoodbyeCode, String)
        /// A resume from a new address was accepted.
        case resumed
        /// A ping's round trip.
        case roundTrip(nanoseconds: Int64)
        /// The session gave up on its own: no answer to the registration, or contact with the relay lost.
        case ended(String)
    }

    /// Outgoing call ids have the top bit set, apart from the relay-assigned ids of incoming calls (counted from 1).
    public static let outgoingCallIDBit: UInt32 = 0x8000_0000

    /// The relay's public address (presence lives on the public port).
    public var server: PeerAddress { link.server }
    /// Where datagrams go: the public address, then the port the welcome names (the same public port).
    public var destination: PeerAddress { link.destination }
    /// State.
    public private(set) var state: State = .registering
    /// The welcome, once received.
    public private(set) var welcome: Welcome?
    /// Calls in progress by id (finished calls are removed).
    public private(set) var calls: [UInt32: Call] = [:]
    /// Datagrams retransmitted by this side.
    public var retransmissions: Int { link.channel.retransmissions }

    private let token: String
    private let nonce: [UInt8]
    private var cookie: [UInt8] = []
    private var link: SignallingLink
    private var lastRegisterSent: Int64 = .min / 2
    private var registerAttempts = 0
    private var nextMessageID: UInt32 = 1
    private var nextCallID: UInt32 = 1
    private var texts: [UInt32: TextReassembler] = [:]

    /// A session that will put the token's identity online at `server`.
    public init(server: PeerAddress, token: String, now: Int64, unixMilliseconds: @escaping () -> Int64) {
        self.token = token
        self.nonce = Crypto.randomBytes(16)
        self.link = SignallingLink(server: server, now: now, unixMilliseconds: unixMilliseconds)
    }

    /// Datagrams to send to `destination`, oldest first.
    public func drainOutgoing() -> [[UInt8]] { link.drain() }

    private var isOnline: Bool { state == .registered || state == .resuming }

    private func sendRegister(now: Int64) {
        lastRegisterSent = now
        registerAttempts += 1
        link.send(.register(RegisterRequest(token: token, cookie: cookie, nonce: nonce)))
    }

    /// Ends the session; active calls end with "connection lost".
    private func end(_ reason: String, _ terminal: Event?) -> [Event] {
        state = .ended(reason)
        var events: [Event] = terminal.map { [$0] } ?? []
        for id in calls.keys.sorted() {
            events.append(.callStatus(callID: id, state: .ended, reason: "connection lost", room: nil, token: nil))
        }
        calls.removeAll()
        return events
    }

    /// Periodic work: register retries, keepalives, retransmissions, resume when the relay went quiet, giving up.
    public func tick(now: Int64) -> [Event] {
        switch state {
        case .ended:
            return []
        case .registering:
            if now - lastRegisterSent >= 500_000_000 {
                if registerAttempts >= 10 {
                    let reason = "no answer from the relay at \(server)"
                    return end(reason, .ended(reason))
                }
                sendRegister(now: now)
            }
        case .registered, .resuming:
            guard let welcome else { return [] }
            switch link.channel.failed ? .lost : link.keepAlive(welcome, now: now) {
            case .lost:
                let reason = "lost contact with the relay"
                return end(reason, .ended(reason))
            case .resuming: state = .resuming
            case .alive: break
            }
        }
        return []
    }

    /// Whether a datagram from `address` can be the relay's: its public address, or the port the welcome named.
    public func isFromRelay(_ address: PeerAddress) -> Bool { link.isRelay(address) }

    /// Takes a signalling datagram that came from `from`; anything not from the relay (`isFromRelay`), or naming
    /// another session, is ignored.
    public func handle(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Int64) -> [Event] {
        guard let datagram = try? SignalDatagram(parsing: bytes) else { return [] }
        if case .ended = state { return [] }
        var events: [Event] = []
        for message in link.receive(datagram, from: from, now: now) {
            if case .ended = state { break }
            switch message {
            case .retry(let c):
                guard state == .registering else { continue }
                cookie = c
                sendRegister(now: now)
            case .welcome(let w):
                guard w.nonce == nonce, welcome == nil else { continue }
                welcome = w
                link.welcomed(connection: datagram.connectionID, port: w.port, now: now)
                state = .registered
                events.append(.registered(w))
            case .refused(.unknownSession, let reason) where state == .resuming:
                events += end(reason, .forgotten(reason))
            case .refused(let code, let reason):
                if state == .registering || state == .resuming { events += end(reason, .refused(code, reason)) }
            case .goodbye(let code, let reason):
                events += end(reason, .goodbye(code, reason))
            case .pong(let timestamp):
                events.append(.roundTrip(nanoseconds: now - Int64(bitPattern: timestamp)))
            case .resumed:
                if state == .resuming { state = .registered }
                events.append(.resumed)
            case .pathChallenge(let challenge):
                if let w = welcome { link.answer(challenge, secret: w.sessionSecret) }
            case .incomingCall(let id, let from, let name):
                calls[id] = Call(id: id, peer: from, peerName: name, outgoing: false, phase: .incoming)
                events.append(.incomingCall(callID: id, from: from, name: name))
            case .callStatus(let s):
                events += callStatus(s)
            case .text(let fromID, let identity, _, let fragment):
                if let text = texts[fromID, default: TextReassembler()].add(fragment) { events.append(.text(from: identity, text: text)) }
            case .textStatus(let id, let delivered, let reason):
                events.append(.textStatus(messageID: id, delivered: delivered, reason: reason))
            default:
                break
            }
        }
        if isOnline { link.pump(now: now) }
        return events
    }

    /// Applies a relay status to a call we know; statuses for calls already over here are dropped.
    private func callStatus(_ s: CallStatus) -> [Event] {
        guard var call = calls[s.callID] else { return [] }
        switch s.state {
        case .ringing:
            guard call.phase == .calling else { return [] }
            call.phase = .ringing
            calls[s.callID] = call
        case .answered:
            call.phase = .answered(room: s.room, token: s.token)
            calls[s.callID] = call
        case .declined, .noAnswer, .unavailable, .ended, .failed:
            calls[s.callID] = nil
        }
        let answered = s.state == .answered
        return [.callStatus(callID: s.callID, state: s.state, reason: s.reason, room: answered ? s.room : nil, token: answered ? s.token : nil)]
    }

    /// Calls an online identity; returns the call id its statuses will carry, nil when not online.
    public func call(_ identity: String, now: Int64) -> UInt32? {
        guard isOnline, !identity.isEmpty else { return nil }
        let id = nextCallID | Self.outgoingCallIDBit
        nextCallID = (nextCallID &+ 1) & ~Self.outgoingCallIDBit
        if nextCallID == 0 { nextCallID = 1 }
        calls[id] = Call(id: id, peer: identity, peerName: "", outgoing: true, phase: .calling)
        link.sendReliable(.callInvite(callID: id, to: identity), now: now)
        return id
    }

    /// Accepts or declines an incoming call. Declining forgets it at once.
    public func answer(_ callID: UInt32, accept: Bool, now: Int64) {
        guard isOnline, let call = calls[callID], call.phase == .incoming else { return }
        if accept { calls[callID]?.phase = .answering } else { calls[callID] = nil }
        link.sendReliable(.callAnswer(callID: callID, accept: accept), now: now)
    }

    /// Hangs up (cancels, declines or ends) a call and forgets it; the relay tells the other party.
    public func hangUp(_ callID: UInt32, now: Int64) {
        guard calls.removeValue(forKey: callID) != nil, isOnline else { return }
        link.sendReliable(.callHangup(callID: callID), now: now)
    }

    /// Sends a direct text to an online identity; returns its message id, nil if empty, over 4 KB, not online, or when
    /// the relay has left too many messages unacknowledged to queue it (`ReliableChannel.Limits.maxPending`).
    public func sendText(to identity: String, _ text: String, now: Int64) -> UInt32? {
        guard isOnline, !identity.isEmpty else { return nil }
        let id = nextMessageID
        guard let fragments = TextFragment.split(text, messageID: id),
              link.channel.hasRoom(for: fragments.count, within: .max) else { return nil }
        nextMessageID &+= 1
        for f in fragments { link.enqueue(.sendText(to: identity, fragment: f)) }
        link.pump(now: now)
        return id
    }

    /// Goes offline now: the relay forgets the session on receipt (and ends its call for the other party).
    public func leave(now: Int64) {
        guard isOnline else {
            state = .ended("left")
            return
        }
        link.sendReliable(.leave, now: now)
        state = .ended("left")
        calls.removeAll()
    }
}
