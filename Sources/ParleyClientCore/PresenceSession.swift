import ParleyWire

/// An online identity's side of Parley presence: a `SignallingSession` that registers (with the cookie round trip,
/// reliable messages, keepalives, resume from a new address), plus calls to and from other online identities and
/// direct texts. The caller's loop sends `drainOutgoing()` to `destination`, feeds signalling datagrams to `handle`
/// with their source (only the relay's are taken), and calls `tick` every few tens of milliseconds, as with
/// `ClientSession`; it ends the same ways: on `.forgotten`, a goodbye saying the relay shuts down or timed us out,
/// or `.ended` once registered, its owner registers afresh after `RejoinBackoff`'s wait (`PresenceEngine`).
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
        /// The other party's end-to-end key share (32 bytes): from the ring (incoming) or the answer (outgoing);
        /// empty until then, or for good when the other client sent none (then the call is not end-to-end encrypted).
        public var peerKeyShare: [UInt8] = []
    }

    /// What the session tells its owner.
    public enum Event: Equatable, Sendable {
        /// Online; the welcome's room is "" and its mode "presence".
        case registered(Welcome)
        /// Someone calls: answer with `answer(callID, accept:)`.
        case incomingCall(callID: UInt32, from: String, name: String)
        /// A call's state changed; `room` and `token` come with `answered`.
        case callStatus(callID: UInt32, state: CallState, reason: String, room: String?, token: String?)
        /// A direct text from another online identity, with the ids of the images it carries (an image-only text is "").
        case text(from: String, text: String, attachments: [String] = [])
        /// A direct text kept for us while we were away (`sentAt`, Unix ms; 0: just now), or one that opens a chat we
        /// have not accepted (`request`: answer with `answerChat`); with its images' ids.
        case keptText(from: String, text: String, sentAt: UInt64, request: Bool, attachments: [String] = [])
        /// A direct text we sent is kept for its recipient (away, or not yet accepting); a `textStatus` follows.
        case textStored(messageID: UInt32)
        /// Where a chat stands now (its other party answered our request, or we answered theirs on another device).
        case chat(ChatStatus)
        /// Whether a direct text was delivered ("bob is not online" when not).
        case textStatus(messageID: UInt32, delivered: Bool, reason: String)
        /// The relay refused the registration.
        case refused(RefusalCode, String)
        /// The relay did not prove it holds the key the member expects (`SignallingSession.Security`).
        case relayUnproven(String)
        /// The relay no longer knows this session (it restarted, or dropped us while we were away) and said so to our
        /// resume: the session is over, and a fresh registration is the way back.
        case forgotten(String)
        /// The relay ended the session (replaced by a newer registration, timed out, shutting down).
        case goodbye(GoodbyeCode, String)
        /// A resume from a new address was accepted.
        case resumed
        /// A ping's round trip.
        case roundTrip(Interval)
        /// The session gave up on its own: no answer to the registration, or contact with the relay lost.
        case ended(String)
    }

    /// Outgoing call ids have the top bit set, apart from the relay-assigned ids of incoming calls (counted from 1).
    public static let outgoingCallIDBit: UInt32 = 0x8000_0000

    /// The handshake, keepalives and resume.
    public let signalling: SignallingSession
    /// The relay's public address (presence lives on the public port).
    public var server: PeerAddress { signalling.server }
    /// Where datagrams go: the public address, then the port the welcome names (the same public port).
    public var destination: PeerAddress { signalling.destination }
    /// State.
    public var state: State {
        switch signalling.phase {
        case .handshaking: .registering
        case .established: .registered
        case .resuming: .resuming
        case .ended(let reason): .ended(reason)
        }
    }
    /// The welcome, once received.
    public var welcome: Welcome? { signalling.welcome }
    /// Calls in progress by id (finished calls are removed).
    public private(set) var calls: [UInt32: Call] = [:]
    /// Datagrams retransmitted by this side.
    public var retransmissions: Int { signalling.retransmissions }

    private var nextMessageID: UInt32 = 1
    private var nextCallID: UInt32 = 1
    private var texts: [UInt32: TextReassembler] = [:]
    /// A kept text's `sentAt` and `request` from its first fragment, by sender, until its last fragment arrives.
    private var keptMarks: [UInt32: (UInt64, Bool)] = [:]

    /// A session that will put the token's identity online at `server`, its nonce drawn from `random`.
    public init(server: PeerAddress, token: String, security: SignallingSession.Security = .encrypted(relayKey: nil), now: Instant,
                unixMilliseconds: @escaping () -> Int64, random: inout some RandomNumberGenerator) {
        signalling = SignallingSession(server: server, token: token, request: .register, security: security, now: now,
                                       unixMilliseconds: unixMilliseconds, random: &random)
    }

    /// A session as above with its nonce from the system's generator.
    public convenience init(server: PeerAddress, token: String, security: SignallingSession.Security = .encrypted(relayKey: nil),
                            now: Instant, unixMilliseconds: @escaping () -> Int64) {
        var random = SystemRandomNumberGenerator()
        self.init(server: server, token: token, security: security, now: now, unixMilliseconds: unixMilliseconds, random: &random)
    }

    /// Datagrams to send to `destination`, oldest first.
    public func drainOutgoing() -> [[UInt8]] { signalling.drainOutgoing() }

    private var isOnline: Bool { signalling.isEstablished }

    /// The session ended: active calls end with "connection lost".
    private func ended(_ terminal: Event) -> [Event] {
        var events = [terminal]
        for id in calls.keys.sorted() {
            events.append(.callStatus(callID: id, state: .ended, reason: "connection lost", room: nil, token: nil))
        }
        calls.removeAll()
        return events
    }

    /// Periodic work: register retries, keepalives, retransmissions, resume when the relay went quiet, giving up.
    public func tick(now: Instant) -> [Event] {
        signalling.tick(now: now).flatMap(events)
    }

    /// Whether a datagram from `address` can be the relay's: its public address, or the port the welcome named.
    public func isFromRelay(_ address: PeerAddress) -> Bool { signalling.isFromRelay(address) }

    /// Takes a signalling datagram that came from `from`; anything not from the relay (`isFromRelay`), or naming
    /// another session, is ignored.
    public func handle(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Instant) -> [Event] {
        signalling.handle(bytes, from: from, now: now).flatMap(events)
    }

    /// What one session event means to an online identity.
    private func events(_ event: SignallingSession.Event) -> [Event] {
        switch event {
        case .welcomed(let w): return [.registered(w)]
        case .refused(let code, let reason): return ended(.refused(code, reason))
        case .relayUnproven(let reason): return ended(.relayUnproven(reason))
        case .forgotten(let reason): return ended(.forgotten(reason))
        case .goodbye(let code, let reason): return ended(.goodbye(code, reason))
        case .gaveUp(let reason): return ended(.ended(reason))
        case .resumed: return [.resumed]
        case .roundTrip(let rtt): return [.roundTrip(rtt)]
        case .message(let message): return presenceMessage(message)
        }
    }

    private func presenceMessage(_ message: SignalMessage) -> [Event] {
        switch message {
        case .incomingCall(let id, let from, let name, let share, let request):
            calls[id] = Call(id: id, peer: from, peerName: name, outgoing: false, phase: .incoming, peerKeyShare: share)
            if request { callRequests.insert(id) }
            return [.incomingCall(callID: id, from: from, name: name)]
        case .callStatus(let s):
            return callStatus(s)
        case .text(let fromID, let identity, _, let fragment, let sentAt, let request):
            // `sentAt` and `request` ride on a text's first fragment: kept until its last one finishes it.
            if fragment.index == 0 { keptMarks[fromID] = sentAt != 0 || request ? (sentAt, request) : nil }
            return texts[fromID, default: TextReassembler()].take(fragment).compactMap {
                guard case .text(_, let text, let images) = $0 else { return nil }
                guard let (sentAt, request) = keptMarks.removeValue(forKey: fromID) else {
                    return .text(from: identity, text: text, attachments: images)
                }
                return .keptText(from: identity, text: text, sentAt: sentAt, request: request, attachments: images)
            }
        case .textStored(let id):
            return [.textStored(messageID: id)]
        case .chatStatus(let status):
            return [.chat(status)]
        case .textStatus(let id, let delivered, let reason):
            return [.textStatus(messageID: id, delivered: delivered, reason: reason)]
        default:
            return []
        }
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
            if call.outgoing { call.peerKeyShare = s.keyShare }
            calls[s.callID] = call
        case .declined, .noAnswer, .unavailable, .ended, .failed:
            calls[s.callID] = nil
        }
        let answered = s.state == .answered
        return [.callStatus(callID: s.callID, state: s.state, reason: s.reason, room: answered ? s.room : nil, token: answered ? s.token : nil)]
    }

    /// Calls an online identity; returns the call id its statuses will carry, nil when not online. `keyShare` is
    /// this side's end-to-end share for the call (empty: the call will not be end-to-end encrypted).
    public func call(_ identity: String, keyShare: [UInt8] = [], now: Instant) -> UInt32? {
        guard isOnline, !identity.isEmpty else { return nil }
        let id = nextCallID | Self.outgoingCallIDBit
        nextCallID = (nextCallID &+ 1) & ~Self.outgoingCallIDBit
        if nextCallID == 0 { nextCallID = 1 }
        calls[id] = Call(id: id, peer: identity, peerName: "", outgoing: true, phase: .calling)
        signalling.sendReliable(.callInvite(callID: id, to: identity, keyShare: keyShare), now: now)
        return id
    }

    /// Accepts or declines an incoming call. Declining forgets it at once. `keyShare`: this side's end-to-end share
    /// when accepting (sent only with an accept).
    public func answer(_ callID: UInt32, accept: Bool, keyShare: [UInt8] = [], now: Instant) {
        guard isOnline, let call = calls[callID], call.phase == .incoming else { return }
        if accept { calls[callID]?.phase = .answering } else { calls[callID] = nil }
        signalling.sendReliable(.callAnswer(callID: callID, accept: accept, keyShare: accept ? keyShare : []), now: now)
    }

    /// Hangs up (cancels, declines or ends) a call and forgets it; the relay tells the other party.
    public func hangUp(_ callID: UInt32, now: Instant) {
        guard calls.removeValue(forKey: callID) != nil, isOnline else { return }
        signalling.sendReliable(.callHangup(callID: callID), now: now)
    }

    /// Sends a direct text to an online identity, with the ids of images uploaded to the relay (at most 4); returns
    /// its message id, nil if empty without an image, over 4 KB, with a malformed id, not online, or when the relay has
    /// left too many messages unacknowledged to queue it (`ReliableChannel.Limits.maxPending`).
    public func sendText(to identity: String, _ text: String, attachments: [String] = [], now: Instant) -> UInt32? {
        guard isOnline, !identity.isEmpty else { return nil }
        let id = nextMessageID
        guard signalling.sendText(text, attachments: attachments, to: identity, messageID: id, now: now) else { return nil }
        nextMessageID &+= 1
        return id
    }

    /// Accepts or declines the chat `identity` asked for (its first text came as a request): accepted, its texts
    /// waiting for it follow; declined, they fail and later ones too.
    public func answerChat(_ identity: String, accept: Bool, now: Instant) {
        guard isOnline, !identity.isEmpty else { return }
        signalling.sendReliable(.chatAnswer(to: identity, accept: accept), now: now)
    }

    /// Whether the incoming call `callID` comes from someone we have no accepted chat with (a call request).
    public func isCallRequest(_ callID: UInt32) -> Bool { callRequests.contains(callID) }
    private var callRequests: Set<UInt32> = []

    /// Goes offline now: the relay forgets the session on receipt (and ends its call for the other party).
    public func leave(now: Instant) {
        signalling.leave(now: now)
        calls.removeAll()
    }
}
