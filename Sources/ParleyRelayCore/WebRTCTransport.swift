import ParleyWebRTC
import ParleyWire

/// What the HTTP API read from a WebRTC offer for the core: the peer's ICE username fragment and certificate
/// fingerprint, and the Opus payload type and level extension id its audio section negotiated.
public struct WebRTCOfferTerms: Sendable, Equatable {
    /// The offer's `a=ice-ufrag` (the second half of the USERNAME in its checks, the first in the relay's).
    public var remoteUfrag: String
    /// The offer's `a=ice-pwd`: the key of the relay's own checks and of the answers that prove an address.
    public var remotePassword: String
    /// SHA-256 of the certificate the peer will present in DTLS (`a=fingerprint:sha-256`).
    public var remoteFingerprint: [UInt8]
    /// The offer's Opus payload type (Chrome 111, Firefox 109).
    public var payloadType: UInt8
    /// The id of `urn:ietf:params:rtp-hdrext:ssrc-audio-level` in the offer (nil: not offered).
    public var audioLevelExtensionID: UInt8?
    /// Whether the member sends audio (offer `sendrecv`/`sendonly`) and receives the room (`sendrecv`/`recvonly`).
    public var publish: Bool, subscribe: Bool
    /// Audio sections the member receives on: in a forward room, one stream (track) per forwarding slot, up to the
    /// room's `maxForwardedSpeakers`.
    public var slots: Int

    /// Terms.
    public init(remoteUfrag: String, remotePassword: String, remoteFingerprint: [UInt8], payloadType: UInt8, audioLevelExtensionID: UInt8?,
                publish: Bool, subscribe: Bool, slots: Int = 1) {
        self.slots = slots
        self.remoteUfrag = remoteUfrag
        self.remotePassword = remotePassword
        self.remoteFingerprint = remoteFingerprint
        self.payloadType = payloadType
        self.audioLevelExtensionID = audioLevelExtensionID
        self.publish = publish
        self.subscribe = subscribe
    }
}

/// What the API needs from the core to answer a WebRTC offer.
public struct WebRTCMemberInfo: Sendable, Equatable {
    /// The member's identity in the room.
    public var identity: String
    /// Member id.
    public var memberID: UInt32
    /// The UDP port of the worker owning the room: the answer's one host candidate.
    public var port: UInt16
    /// The relay's ICE credentials for this member (`a=ice-ufrag`, `a=ice-pwd`).
    public var iceUfrag: String, icePassword: String
    /// The SSRCs of the streams the relay sends the member, one per receiving section (its forward slots, or the
    /// room's mix alone); empty when it only sends.
    public var sendSSRCs: [UInt32]
    /// The first (what a one-section offer gets).
    public var sendSSRC: UInt32? { sendSSRCs.first }
    /// The CNAME of that stream.
    public var cname: String
}

/// The relay's own connectivity check of one address (RFC 8445 §7.2.5, sent from the lite side; RFC 7675's consent
/// request has the same form): USERNAME `remoteUfrag:localUfrag`, MESSAGE-INTEGRITY under the offer's ice-pwd. Only an
/// answer from that address, to that transaction, under that password proves the browser receives there: a member
/// that spoofs its checks from someone else's address knows the password but never sees the transaction ID.
///
/// Until the answer, the address is on trial and gets at most `amplificationFactor` times the authenticated bytes
/// (checks whose MESSAGE-INTEGRITY verified) it sent (QUIC's anti-amplification rule, RFC 9000 §8.1).
struct AddressCheck {
    /// Where the check goes.
    let address: PeerAddress
    /// The transaction of the latest request sent (an answer to an earlier one is not taken).
    var transactionID: [UInt8] = []
    /// Requests sent so far, and when the next one is due (nil: waiting for budget, or given up).
    var attempts = 0
    var nextSend: Instant?
    /// Whether the trial gave up: every request went unanswered. A new check from the address starts it again.
    var givenUp = false
    /// Authenticated bytes received from `address`, and bytes sent to it, while it is on trial.
    var bytesIn = 0, bytesOut = 0

    /// Bytes an unproven address may be sent per authenticated byte it sent.
    static let amplificationFactor = 3
    /// Requests before a trial gives up (RFC 8489 §6.2.1's Rc).
    static let maxAttempts = 7
    /// The first retransmission; each next one waits twice as long (100, 200, … 3,200 ms, then 6.4 s for the answer
    /// to the last).
    static let firstRetransmit = Interval.milliseconds(100)

    init(address: PeerAddress, now: Instant) {
        self.address = address
        nextSend = now
    }

    /// Whether `count` more bytes to the address stay within the budget.
    func allows(_ count: Int) -> Bool { bytesOut + count <= Self.amplificationFactor * bytesIn }

    /// A request of `count` bytes went out with `transactionID` at `now`; the next is due after the backoff (after
    /// the last, that is when the trial gives up).
    mutating func sent(_ count: Int, transactionID: [UInt8], now: Instant) {
        self.transactionID = transactionID
        bytesOut += count
        attempts += 1
        nextSend = now + Self.firstRetransmit * Int64(1 << (attempts - 1))
    }

    /// Every request went unanswered, or the budget ran out: the trial stops.
    mutating func giveUp() {
        givenUp = true
        nextSend = nil
    }

    /// An authenticated check of `count` bytes came from the address: more budget, and a trial that waited for
    /// budget, or gave up, goes on.
    mutating func heard(_ count: Int, now: Instant) {
        bytesIn += count
        if givenUp {
            givenUp = false
            attempts = 0
        }
        if nextSend == nil { nextSend = now }
    }
}

/// A WebRTC member's transport state, held by its `Member`: the relay's ICE credentials for it and the offer's, the
/// DTLS server session, which address proved it receives (and the one on trial), consent (RFC 7675: answers to the
/// relay's own checks), and the header ids its offer negotiated. One worker owns it.
final class WebRTCTransport {
    /// The relay's ICE username fragment and password for this member (short-term credentials, RFC 8445 §5.3); new
    /// ones at an ICE restart (`WebRTCMembers.restartICE`).
    private(set) var localUfrag: String
    private(set) var localPassword: [UInt8]
    /// The offer's username fragment: a check's USERNAME must be `localUfrag:remoteUfrag`.
    private(set) var remoteUfrag: String
    /// The offer's ice-pwd: the relay's checks carry MESSAGE-INTEGRITY under it, and so must their answers.
    private(set) var remotePassword: [UInt8]
    /// The relay's ICE-CONTROLLED tie-breaker (RFC 8445 §7.1.3).
    let tieBreaker: UInt64
    /// The DTLS server session; its handshake gives the SRTP keys.
    let dtls: DTLSSession
    /// When the member was created: ICE and DTLS must complete within `WebRTCTransport.setupTimeout` of it.
    let createdAt: Instant
    /// The last answer to the relay's own check from the member's proven address (nil: none yet). Consent expires
    /// `consentTimeout` after it (RFC 7675 §5.1: only answers to one's own checks count, not the peer's checks).
    var lastConsent: Instant?
    /// The address that answered the relay's check: DTLS flights, media and reports go there and nowhere else.
    var proven: PeerAddress?
    /// An address on trial: the latched address before it answered, or, once connected, the one a nominated check
    /// came from (the member moves there when it answers). Linked to the member while on trial.
    var trial: AddressCheck?
    /// The consent check in flight to `proven` (its transaction), and when the next is due.
    var consentTransaction: [UInt8]?
    var nextConsentCheck: Instant?
    /// The last DTLS flight OpenSSL wrote while the latched address was on trial: sent when it answers.
    var heldFlight: [[UInt8]] = []
    /// When the DTLS handshake's retransmission timer may fire (nil: none running).
    var retransmitAt: Instant?
    /// The Opus payload type the member's offer uses: what its stream carries.
    let payloadType: UInt8
    /// The RFC 6464 extension id negotiated (0: none; levels are then neither read from it nor written to it).
    let audioLevelExtensionID: UInt8

    /// Consent lapses 30 s after the last answer (RFC 7675 §5.1).
    static let consentTimeout = Interval.seconds(30)
    /// Consent checks go out every 4–6 s (RFC 7675 §5.1: 5 s, randomised by ±20 %).
    static let consentInterval = Interval.milliseconds(4_000) ... Interval.milliseconds(6_000)
    /// ICE and the DTLS handshake must both finish within this of the offer, or the member is removed.
    static let setupTimeout = Interval.seconds(20)

    init(localUfrag: String, localPassword: String, remoteUfrag: String, remotePassword: String, tieBreaker: UInt64,
         dtls: DTLSSession, createdAt: Instant, payloadType: UInt8, audioLevelExtensionID: UInt8) {
        self.localUfrag = localUfrag
        self.localPassword = Array(localPassword.utf8)
        self.remoteUfrag = remoteUfrag
        self.remotePassword = Array(remotePassword.utf8)
        self.tieBreaker = tieBreaker
        self.dtls = dtls
        self.createdAt = createdAt
        self.payloadType = payloadType
        self.audioLevelExtensionID = audioLevelExtensionID
    }

    /// An ICE restart (RFC 8445 §9): both sides' credentials are new, so a check or answer made with the old ones no
    /// longer counts. The proven address, consent so far and DTLS stay: the member keeps its session and its place;
    /// the check in flight is forgotten and a new one is due at once, an address on trial is dropped.
    func restart(localUfrag: String, localPassword: String, remoteUfrag: String, remotePassword: String, now: Instant) {
        self.localUfrag = localUfrag
        self.localPassword = Array(localPassword.utf8)
        self.remoteUfrag = remoteUfrag
        self.remotePassword = Array(remotePassword.utf8)
        consentTransaction = nil
        if proven != nil { nextConsentCheck = now }
    }

    /// The USERNAME of the relay's checks: the receiver's fragment first (RFC 8445 §7.2.2).
    var checkUsername: String { remoteUfrag + ":" + localUfrag }

    /// Whether the member has lost consent, or never completed ICE and DTLS in time.
    func hasExpired(now: Instant, connected: Bool) -> Bool {
        if !connected && now - createdAt >= Self.setupTimeout { return true }
        guard let last = lastConsent else { return false }
        return now - last >= Self.consentTimeout
    }

    /// When `hasExpired` can next turn true, or a check is due.
    func nextDeadline(connected: Bool) -> Instant {
        let consent = (lastConsent ?? createdAt) + Self.consentTimeout
        var due = connected ? consent : min(consent, createdAt + Self.setupTimeout)
        if let at = trial?.nextSend { due = min(due, at) }
        if let at = nextConsentCheck { due = min(due, at) }
        return due
    }

    /// ICE credentials drawn from `random`: a 8-character username fragment and a 24-character password from the
    /// ice-char alphabet (RFC 8839 §5.4: at least 4 and 22 characters).
    static func credentials(_ random: RelayRandom) -> (ufrag: String, password: String) {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        func draw(_ n: Int) -> String { String((0..<n).map { _ in alphabet[Int(random.uint32() % UInt32(alphabet.count))] }) }
        return (draw(8), draw(24))
    }
}
