import ParleyAuth
import ParleyCrypto
import ParleyWire

/// One signalling session on the relay, whatever it is for: a room member's or an online identity's (`Member` and
/// `Presence` each hold one). It owns what the handshake settled (connection id, identity, secret, nonce, token),
/// where the peer is (address, whether replies leave from the public port), when it was last heard (keepalive and
/// timeout), the state of path validation, the reliable channel and the text reassembler.
///
/// A plain-RTP endpoint's member holds one too, with `signals` false: it has an address and a timeout but no
/// signalling (no secret, nothing is queued to it, it cannot resume or be challenged).
final class RelaySession {
    /// The id the peer names the session by in every datagram (never 0).
    let connectionID: UInt32
    /// Token `sub`.
    let identity: String
    /// Display name from the token ("" when none).
    let name: String
    /// The secret resume and path-response proofs are made with (empty for a plain-RTP endpoint).
    let sessionSecret: [UInt8]
    /// The nonce of the join or register that opened the session (a repeat of it is not a new session).
    let nonce: [UInt8]
    /// The token it was admitted with (the same token from another address while the session lives is a replay).
    let token: String
    /// False for a plain-RTP endpoint: no signalling at all.
    let signals: Bool
    /// Where the peer is. A member's address is what its room's fan-out table copies: change it through `Member`.
    var address: PeerAddress
    /// Signalling goes out of the public port until the peer's first datagram reaches its worker's port.
    var viaPublicPort: Bool
    /// When anything was last heard from the peer a session silent for `memberTimeout` is removed.
    var lastHeard: Instant
    /// Path validation (`PathChallenge`): the issue time of the last challenge this session answered (each is
    /// single-use), and when it was last sent one (at most one per `PathValidator.challengeInterval`).
    var pathValidatedAt: Int64 = .min
    var lastChallengeSent = Instant.distantPast
    /// Reliable, ordered messages both ways.
    var channel: ReliableChannel
    /// Seals and opens every datagram of a session admitted through the encrypted protocol (nil: cleartext,
    /// debugging only, or a plain-RTP endpoint).
    var sealed: SealedChannel?
    /// Texts arriving in fragments.
    var texts = TextReassembler()

    init(connectionID: UInt32, identity: String, name: String, sessionSecret: [UInt8], nonce: [UInt8], token: String,
         signals: Bool = true, address: PeerAddress, viaPublicPort: Bool, channel: ReliableChannel = ReliableChannel(),
         now: Instant) {
        self.connectionID = connectionID
        self.identity = identity
        self.name = name
        self.sessionSecret = sessionSecret
        self.nonce = nonce
        self.token = token
        self.signals = signals
        self.address = address
        self.viaPublicPort = viaPublicPort
        self.channel = channel
        self.lastHeard = now
    }

    /// Media (RTP or RTCP) arrived from the peer at its worker's own port: it is alive, and signalling may leave
    /// from that port too.
    @inline(__always)
    func heardMedia(at now: Instant) {
        lastHeard = now
        viaPublicPort = false
    }

    /// When `tick` next has work for this session: its channel's next transmission or, when it `timesOut`, the
    /// moment it has been silent for longer than `timeout`.
    @inline(__always)
    func nextDue(timeout: Interval, timesOut: Bool = true) -> Instant {
        timesOut ? min(channel.serviceDue, lastHeard + timeout + .nanoseconds(1)) : channel.serviceDue
    }

    /// How a session stands at a timer scan.
    enum Health {
        /// Nothing to do.
        case alive
        /// Its reliable queue overflowed: the peer is not keeping up.
        case slow
        /// Silent for longer than the timeout, or its channel gave up retransmitting.
        case expired
    }

    /// How this session stands at `now` (after its channel was pumped).
    @inline(__always)
    func health(now: Instant, timeout: Interval) -> Health {
        if channel.overflowed { return .slow }
        if channel.failed || isSilent(now: now, timeout: timeout) { return .expired }
        return .alive
    }

    /// Whether nothing was heard from the peer for longer than `timeout`.
    func isSilent(now: Instant, timeout: Interval) -> Bool { now - lastHeard > timeout }

    /// Whether a resume's proof holds for this session and its time is within a minute of ours.
    func resumeIsProven(timestamp: UInt64, proof: [UInt8], now: Moment) -> Bool {
        // The timestamp is the sender's: one past Int64.max would overflow the subtraction (and `abs`), so it is
        // refused first.
        guard timestamp <= UInt64(Int64.max), now.unixMilliseconds >= 0 else { return false }
        let skew = Int64(timestamp) - now.unixMilliseconds
        return signals && !sessionSecret.isEmpty && abs(skew) <= Self.resumeSkew.milliseconds
            && ResumeProof.verify(proof, secret: sessionSecret, connectionID: connectionID, timestamp: timestamp)
    }

    /// How far a resume's timestamp may be from our wall clock.
    static let resumeSkew = Interval.seconds(60)

    /// Takes a path response to a challenge issued at `issuedAt` (already checked to be this relay's, for this
    /// session at the responding address): true, and the challenge used up, when it is newer than the last one
    /// answered and its proof holds.
    func acceptPathResponse(issuedAt: Int64, challenge: [UInt8], proof: [UInt8]) -> Bool {
        guard signals, issuedAt > pathValidatedAt,
              ResumeProof.verifyPathResponse(proof, secret: sessionSecret, connectionID: connectionID, challenge: challenge)
        else { return false }
        pathValidatedAt = issuedAt
        return true
    }
}
