import ParleyAuth
import ParleyWire

/// A member's side of Parley signalling as a pure state machine: join (with the cookie round trip), reliable
/// messages, keepalives, resume from a new address, leave. The caller's loop sends `drainOutgoing()` to
/// `destination`, feeds signalling datagrams to `handle` with their source (only the relay's are taken), takes media
/// only where `isFromRelay` says so, and calls `tick` every few tens of milliseconds.
///
/// When the session ends, its owner opens a new one (after `RejoinBackoff`'s wait) on `.forgotten`, on a goodbye
/// saying the relay shuts down or timed us out, and when `state` ends without any of those events once welcomed
/// (contact lost); a refusal or any other goodbye is final.
public final class ClientSession {
    /// Where the session stands.
    public enum State: Equatable, Sendable {
        /// Join sent, waiting for the welcome.
        case joining
        /// In the room.
        case joined
        /// Nothing heard from the relay for a while: proving the session from (possibly) a new address.
        case resuming
        /// Over; the reason is shown to the person.
        case ended(String)
    }

    /// What the session tells its owner.
    public enum Event: Equatable, Sendable {
        case welcomed(Welcome)
        case memberList([MemberEntry])
        case member(MemberEventKind, MemberEntry, reason: String)
        case speakers([SpeakerEntry])
        case text(from: String, direct: Bool, text: String)
        case textStatus(messageID: UInt32, delivered: Bool, reason: String)
        case refused(RefusalCode, String)
        /// The relay no longer knows this session (it restarted, or dropped us while we were away) and said so to our
        /// resume: the session is over, and a fresh join is the way back.
        case forgotten(String)
        case goodbye(GoodbyeCode, String)
        case resumed
        case roundTrip(nanoseconds: Int64)
    }

    /// The relay's public address (first contact).
    public var server: PeerAddress { link.server }
    /// Where datagrams go now: the public address until welcomed, then the worker port it named.
    public var destination: PeerAddress { link.destination }
    /// State.
    public private(set) var state: State = .joining
    /// The welcome, once received.
    public private(set) var welcome: Welcome?
    /// The room's members as last known (excluding this member), by member id.
    public private(set) var members: [UInt32: MemberEntry] = [:]
    /// Datagrams retransmitted by this side.
    public var retransmissions: Int { link.channel.retransmissions }

    private let token: String
    private let room: String
    private let nonce: [UInt8]
    private let joinMuted: Bool
    private let speakersFromMedia: Bool
    private var cookie: [UInt8] = []
    private var link: SignallingLink
    private var lastJoinSent: Int64 = .min / 2
    private var joinAttempts = 0
    private var nextMessageID: UInt32 = 1
    private var texts: [UInt32: TextReassembler] = [:]
    private var pageBuffer: [MemberEntry] = []

    /// A session that will join `room` at `server` with `token`. With `speakersFromMedia` the member tells the relay
    /// it works out who speaks from the streams it receives (`SpeakingTracker`), so a forward room sends it no
    /// `speakers` messages.
    public init(server: PeerAddress, token: String, room: String, muted: Bool = false, speakersFromMedia: Bool = false, now: Int64,
                unixMilliseconds: @escaping () -> Int64) {
        self.token = token
        self.room = room
        self.joinMuted = muted
        self.speakersFromMedia = speakersFromMedia
        self.nonce = Crypto.randomBytes(16)
        self.link = SignallingLink(server: server, now: now, unixMilliseconds: unixMilliseconds)
    }

    /// Datagrams to send to `destination`, oldest first.
    public func drainOutgoing() -> [[UInt8]] { link.drain() }

    private func sendJoin(now: Int64) {
        lastJoinSent = now
        joinAttempts += 1
        link.send(.join(JoinRequest(token: token, room: room, cookie: cookie, nonce: nonce, muted: joinMuted,
                                    speakersFromMedia: speakersFromMedia)))
    }

    /// Periodic work: join retries, keepalives, retransmissions, resume when the relay went quiet, giving up.
    public func tick(now: Int64) -> [Event] {
        switch state {
        case .ended:
            return []
        case .joining:
            if now - lastJoinSent >= 500_000_000 {
                if joinAttempts >= 10 {
                    state = .ended("no answer from the relay at \(server)")
                    return []
                }
                sendJoin(now: now)
            }
        case .joined, .resuming:
            guard let welcome else { return [] }
            switch link.keepAlive(welcome, now: now) {
            case .lost: state = .ended("lost contact with the relay")
            case .resuming: state = .resuming
            case .alive: break
            }
        }
        return []
    }

    /// Whether a datagram from `address` can be the relay's: its public address, or the port the welcome named.
    /// Media from anywhere else is not the room's.
    public func isFromRelay(_ address: PeerAddress) -> Bool { link.isRelay(address) }

    /// Counts media from the relay as a sign of life (it only reaches us when the relay has our current address).
    public func noteTraffic(now: Int64) {
        if state == .joined { link.heard(now: now) }
    }

    /// Takes a signalling datagram that came from `from`; anything not from the relay (`isFromRelay`), or naming
    /// another session, is ignored.
    public func handle(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Int64) -> [Event] {
        guard let datagram = try? SignalDatagram(parsing: bytes) else { return [] }
        if case .ended = state { return [] }
        var events: [Event] = []
        for message in link.receive(datagram, from: from, now: now) {
            switch message {
            case .retry(let c):
                guard state == .joining else { continue }
                cookie = c
                sendJoin(now: now)
            case .welcome(let w):
                guard w.nonce == nonce, welcome == nil else { continue }
                welcome = w
                link.welcomed(connection: datagram.connectionID, port: w.port, now: now)
                state = .joined
                events.append(.welcomed(w))
                if w.memberCount == 0 { events.append(.memberList([])) }
            case .refused(.unknownSession, let reason) where state == .resuming:
                state = .ended(reason)
                events.append(.forgotten(reason))
            case .refused(let code, let reason):
                if state == .joining || state == .resuming {
                    state = .ended(reason)
                    events.append(.refused(code, reason))
                }
            case .memberPage(let index, let count, let entries):
                if index == 0 { pageBuffer = [] }
                pageBuffer += entries
                if index + 1 == count {
                    for e in pageBuffer { members[e.memberID] = e }
                    events.append(.memberList(pageBuffer))
                    pageBuffer = []
                }
            case .memberEvent(let kind, let entry, let reason):
                if kind == .left { members[entry.memberID] = nil } else if entry.memberID != welcome?.memberID { members[entry.memberID] = entry }
                events.append(.member(kind, entry, reason: reason))
            case .speakers(let list):
                events.append(.speakers(list))
            case .text(let fromID, let identity, let direct, let fragment):
                if let text = texts[fromID, default: TextReassembler()].add(fragment) {
                    events.append(.text(from: identity, direct: direct, text: text))
                }
            case .textStatus(let id, let delivered, let reason):
                events.append(.textStatus(messageID: id, delivered: delivered, reason: reason))
            case .goodbye(let code, let reason):
                state = .ended(reason)
                events.append(.goodbye(code, reason))
            case .pong(let timestamp):
                events.append(.roundTrip(nanoseconds: now - Int64(bitPattern: timestamp)))
            case .resumed:
                if state == .resuming { state = .joined }
                events.append(.resumed)
            case .pathChallenge(let challenge):
                if let w = welcome { link.answer(challenge, secret: w.sessionSecret) }
            default:
                break
            }
        }
        if state != .joining, case .ended = state {} else { link.pump(now: now) }
        return events
    }

    /// Mutes or unmutes this member.
    public func setMuted(_ muted: Bool, now: Int64) {
        link.sendReliable(.setMuted(muted), now: now)
    }

    /// Sends a text to the room (`to` empty) or to one identity; returns its message id, nil if empty, over 4 KB, or
    /// when the relay has left too many messages unacknowledged to queue it (`ReliableChannel.Limits.maxPending`).
    public func sendText(_ text: String, to: String = "", now: Int64) -> UInt32? {
        let id = nextMessageID
        guard let fragments = TextFragment.split(text, messageID: id),
              link.channel.hasRoom(for: fragments.count, within: .max) else { return nil }
        nextMessageID &+= 1
        for f in fragments { link.enqueue(.sendText(to: to, fragment: f)) }
        link.pump(now: now)
        return id
    }

    /// Leaves now: the relay removes the member on receipt.
    public func leave(now: Int64) {
        guard state == .joined || state == .resuming else {
            state = .ended("left")
            return
        }
        link.sendReliable(.leave, now: now)
        state = .ended("left")
    }
}
