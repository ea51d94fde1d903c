import ParleyCrypto
import ParleyWire

/// A room member's side of Parley signalling: a `SignallingSession` that joins a room, plus what the room's
/// messages mean (the member list, speakers, texts). The caller's loop sends `drainOutgoing()` to `destination`,
/// feeds signalling datagrams to `handle` with their source (only the relay's are taken), takes media only where
/// `isFromRelay` says so, and calls `tick` every few tens of milliseconds.
///
/// When the session ends, its owner opens a new one (after `RejoinBackoff`'s wait) on `.forgotten`, on a goodbye
/// saying the relay shuts down or timed us out, and when `state` ends without any of those events once welcomed
/// (contact lost); a refusal or any other goodbye is final. `ClientEngine` does this for `parley join`.
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
        /// In the room.
        case welcomed(Welcome)
        /// The room's other members (a complete list).
        case memberList([MemberEntry])
        /// A member joined, left, muted or unmuted.
        case member(MemberEventKind, MemberEntry, reason: String)
        /// How many audience members (listeners counted, not announced one by one) the room has now.
        case audience(Int)
        /// Who speaks (mix rooms, and forward rooms for members that do not work it out from media).
        case speakers([SpeakerEntry])
        /// A text to the room or to this member, with the ids of the images it carries (fetch them from the relay's
        /// HTTP API: `GET /v1/attachments/{id}`); an image-only text is "".
        case text(from: String, direct: Bool, text: String, attachments: [String] = [])
        /// The room is being recorded (`active`), or no longer; `id` names the recording.
        case recording(active: Bool, id: String)
        /// Whether a text we sent was delivered.
        case textStatus(messageID: UInt32, delivered: Bool, reason: String)
        /// The room's next downstream key, with where its forwarded streams stand: give it to the member's
        /// `MediaCrypto` (`installRoomKey`), which then opens forwarded packets under either key.
        case roomKey(MediaKey, streamIndices: [Welcome.StreamIndex])
        /// The relay refused the join (or a resume).
        case refused(RefusalCode, String)
        /// The relay did not prove it holds the key the member expects (`SignallingSession.Security`): final.
        case relayUnproven(String)
        /// The relay no longer knows this session (it restarted, or dropped us while we were away) and said so to our
        /// resume: the session is over, and a fresh join is the way back.
        case forgotten(String)
        /// The relay ended the session.
        case goodbye(GoodbyeCode, String)
        /// A resume from a new address was accepted.
        case resumed
        /// A ping's round trip.
        case roundTrip(Interval)
    }

    /// The handshake, keepalives and resume.
    public let signalling: SignallingSession
    /// Whether the room is being recorded, as the relay last said.
    public private(set) var recording = false
    /// The relay's public address (first contact).
    public var server: PeerAddress { signalling.server }
    /// Where datagrams go now: the public address until welcomed, then the worker port it named.
    public var destination: PeerAddress { signalling.destination }
    /// State.
    public var state: State {
        switch signalling.phase {
        case .handshaking: .joining
        case .established: .joined
        case .resuming: .resuming
        case .ended(let reason): .ended(reason)
        }
    }
    /// The welcome, once received.
    public var welcome: Welcome? { signalling.welcome }
    /// The room's members as last known (excluding this member), by member id.
    public private(set) var members: [UInt32: MemberEntry] = [:]
    /// Datagrams retransmitted by this side.
    public var retransmissions: Int { signalling.retransmissions }

    private var nextMessageID: UInt32 = 1
    private var texts: [UInt32: TextReassembler] = [:]
    private var pageBuffer: [MemberEntry] = []
    /// The room's audience as last told (`Event.audience`).
    public private(set) var audience = 0

    /// A session that will join `room` at `server` with `token`, its nonce drawn from `random`. With
    /// `speakersFromMedia` the member tells the relay it works out who speaks from the streams it receives
    /// (`SpeakingTracker`), so a forward room sends it no `speakers` messages.
    public init(server: PeerAddress, token: String, room: String, muted: Bool = false, speakersFromMedia: Bool = false,
                redundancy: Bool = false, security: SignallingSession.Security = .encrypted(relayKey: nil),
                now: Instant,
                unixMilliseconds: @escaping () -> Int64, random: inout some RandomNumberGenerator) {
        signalling = SignallingSession(server: server, token: token,
                                       request: .join(room: room, muted: muted, speakersFromMedia: speakersFromMedia,
                                                      redundancy: redundancy),
                                       security: security, now: now, unixMilliseconds: unixMilliseconds, random: &random)
    }

    /// A session as above with its nonce from the system's generator.
    public convenience init(server: PeerAddress, token: String, room: String, muted: Bool = false, speakersFromMedia: Bool = false,
                            redundancy: Bool = false, security: SignallingSession.Security = .encrypted(relayKey: nil),
                            now: Instant, unixMilliseconds: @escaping () -> Int64) {
        var random = SystemRandomNumberGenerator()
        self.init(server: server, token: token, room: room, muted: muted, speakersFromMedia: speakersFromMedia,
                  redundancy: redundancy, security: security, now: now, unixMilliseconds: unixMilliseconds,
                  random: &random)
    }

    /// The member's SRTP once welcomed through the encrypted protocol (nil: cleartext, or not welcomed yet).
    public func makeMediaCrypto() throws(SRTPError) -> MediaCrypto? {
        guard let keys = signalling.keys, let welcome else { return nil }
        let roomKey = welcome.roomMediaKey.count == MediaKey.keyLength + MediaKey.saltLength ? MediaKey(material: welcome.roomMediaKey) : nil
        return try MediaCrypto(keys: keys, roomKey: roomKey, streamIndices: welcome.streamIndices)
    }

    /// Datagrams to send to `destination`, oldest first.
    public func drainOutgoing() -> [[UInt8]] { signalling.drainOutgoing() }

    /// Periodic work: join retries, keepalives, retransmissions, resume when the relay went quiet, giving up (the
    /// session then simply ends: `state`).
    public func tick(now: Instant) -> [Event] {
        signalling.tick(now: now).flatMap(events)
    }

    /// Whether a datagram from `address` can be the relay's: its public address, or the port the welcome named.
    /// Media from anywhere else is not the room's.
    public func isFromRelay(_ address: PeerAddress) -> Bool { signalling.isFromRelay(address) }

    /// Counts media from the relay as a sign of life (it only reaches us when the relay has our current address).
    public func noteTraffic(now: Instant) { signalling.noteTraffic(now: now) }

    /// Takes a signalling datagram that came from `from`; anything not from the relay (`isFromRelay`), or naming
    /// another session, is ignored.
    public func handle(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Instant) -> [Event] {
        signalling.handle(bytes, from: from, now: now).flatMap(events)
    }

    /// What one session event means to a member.
    private func events(_ event: SignallingSession.Event) -> [Event] {
        switch event {
        case .welcomed(let w): return w.memberCount == 0 ? [.welcomed(w), .memberList([])] : [.welcomed(w)]
        case .refused(let code, let reason): return [.refused(code, reason)]
        case .relayUnproven(let reason): return [.relayUnproven(reason)]
        case .forgotten(let reason): return [.forgotten(reason)]
        case .goodbye(let code, let reason): return [.goodbye(code, reason)]
        case .resumed: return [.resumed]
        case .roundTrip(let rtt): return [.roundTrip(rtt)]
        case .gaveUp: return []
        case .message(let message): return roomMessage(message)
        }
    }

    private func roomMessage(_ message: SignalMessage) -> [Event] {
        switch message {
        case .memberPage(let index, let count, let entries):
            if index == 0 { pageBuffer = [] }
            pageBuffer += entries
            guard index + 1 == count else { return [] }
            for e in pageBuffer { members[e.memberID] = e }
            defer { pageBuffer = [] }
            return [.memberList(pageBuffer)]
        case .memberDelta(let delta):
            // A batch may repeat what the member list at the welcome already said, or name someone who left before
            // this member learnt of them: only real changes become events.
            var out: [Event] = []
            for e in delta.joined where e.memberID != welcome?.memberID && members[e.memberID] == nil {
                members[e.memberID] = e
                out.append(.member(.joined, e, reason: ""))
            }
            for d in delta.left {
                guard let e = members.removeValue(forKey: d.memberID) else { continue }
                out.append(.member(.left, e, reason: d.reason))
            }
            if Int(delta.audience) != audience {
                audience = Int(delta.audience)
                out.append(.audience(audience))
            }
            return out
        case .memberEvent(let kind, let entry, let reason):
            if kind == .left { members[entry.memberID] = nil } else if entry.memberID != welcome?.memberID { members[entry.memberID] = entry }
            return [.member(kind, entry, reason: reason)]
        case .speakers(let list):
            return [.speakers(list)]
        case .text(let fromID, let identity, let direct, let fragment, _, _):
            return texts[fromID, default: TextReassembler()].take(fragment).compactMap {
                guard case .text(_, let text, let images) = $0 else { return nil }
                return .text(from: identity, direct: direct, text: text, attachments: images)
            }
        case .textStatus(let id, let delivered, let reason):
            return [.textStatus(messageID: id, delivered: delivered, reason: reason)]
        case .recording(let active, let id):
            recording = active
            return [.recording(active: active, id: id)]
        case .roomKey(_, let material, let indices):
            guard material.count == MediaKey.keyLength + MediaKey.saltLength, signalling.keys != nil else { return [] }
            return [.roomKey(MediaKey(material: material), streamIndices: indices)]
        default:
            return []
        }
    }

    /// Mutes or unmutes this member.
    public func setMuted(_ muted: Bool, now: Instant) {
        signalling.sendReliable(.setMuted(muted), now: now)
    }

    /// Sends a text to the room (`to` empty) or to one identity, with the ids of images uploaded to the relay
    /// (`POST /v1/attachments`, at most 4); returns its message id, nil if empty without an image, over 4 KB, with a
    /// malformed id, or when the relay has left too many messages unacknowledged to queue it
    /// (`ReliableChannel.Limits.maxPending`).
    public func sendText(_ text: String, attachments: [String] = [], to: String = "", now: Instant) -> UInt32? {
        let id = nextMessageID
        guard signalling.sendText(text, attachments: attachments, to: to, messageID: id, now: now) else { return nil }
        nextMessageID &+= 1
        return id
    }

    /// Leaves now: the relay removes the member on receipt.
    public func leave(now: Instant) { signalling.leave(now: now) }
}
