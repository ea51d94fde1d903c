import ParleyWebRTC
import ParleyWire

/// What the HTTP API read from a WebRTC offer for the core: the peer's ICE username fragment and certificate
/// fingerprint, and the Opus payload type and level extension id its audio section negotiated.
public struct WebRTCOfferTerms: Sendable, Equatable {
    /// The offer's `a=ice-ufrag` (the second half of the USERNAME in its checks).
    public var remoteUfrag: String
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
    public init(remoteUfrag: String, remoteFingerprint: [UInt8], payloadType: UInt8, audioLevelExtensionID: UInt8?,
                publish: Bool, subscribe: Bool, slots: Int = 1) {
        self.slots = slots
        self.remoteUfrag = remoteUfrag
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

/// A WebRTC member's transport state, held by its `Member`: the relay's ICE credentials for it, the DTLS server
/// session, when it last proved consent (RFC 7675), and the header ids its offer negotiated. One worker owns it.
final class WebRTCTransport {
    /// The relay's ICE username fragment and password for this member (short-term credentials, RFC 8445 §5.3).
    let localUfrag: String
    let localPassword: [UInt8]
    /// The offer's username fragment: a check's USERNAME must be `localUfrag:remoteUfrag`.
    let remoteUfrag: String
    /// The DTLS server session; its handshake gives the SRTP keys.
    let dtls: DTLSSession
    /// When the member was created: ICE and DTLS must complete within `WebRTCTransport.setupTimeout` of it.
    let createdAt: Instant
    /// The last authenticated STUN check (nil: none yet). Consent expires `consentTimeout` after it.
    var lastConsent: Instant?
    /// An address a nominated check came from after the handshake: the member moves there at its first SRTP packet
    /// from it that authenticates (nil: none).
    var pendingAddress: PeerAddress?
    /// When the DTLS handshake's retransmission timer may fire (nil: none running).
    var retransmitAt: Instant?
    /// The Opus payload type the member's offer uses: what its stream carries.
    let payloadType: UInt8
    /// The RFC 6464 extension id negotiated (0: none; levels are then neither read from it nor written to it).
    let audioLevelExtensionID: UInt8

    /// Consent lapses 30 s after the last check (RFC 7675 §5.1).
    static let consentTimeout = Interval.seconds(30)
    /// ICE and the DTLS handshake must both finish within this of the offer, or the member is removed.
    static let setupTimeout = Interval.seconds(20)

    init(localUfrag: String, localPassword: String, remoteUfrag: String, dtls: DTLSSession, createdAt: Instant,
         payloadType: UInt8, audioLevelExtensionID: UInt8) {
        self.localUfrag = localUfrag
        self.localPassword = Array(localPassword.utf8)
        self.remoteUfrag = remoteUfrag
        self.dtls = dtls
        self.createdAt = createdAt
        self.payloadType = payloadType
        self.audioLevelExtensionID = audioLevelExtensionID
    }

    /// Whether the member has lost consent, or never completed ICE and DTLS in time.
    func hasExpired(now: Instant, connected: Bool) -> Bool {
        if !connected && now - createdAt >= Self.setupTimeout { return true }
        guard let last = lastConsent else { return false }
        return now - last >= Self.consentTimeout
    }

    /// When `hasExpired` can next turn true.
    func nextDeadline(connected: Bool) -> Instant {
        let consent = (lastConsent ?? createdAt) + Self.consentTimeout
        return connected ? consent : min(consent, createdAt + Self.setupTimeout)
    }

    /// ICE credentials drawn from `random`: a 8-character username fragment and a 24-character password from the
    /// ice-char alphabet (RFC 8839 §5.4: at least 4 and 22 characters).
    static func credentials(_ random: RelayRandom) -> (ufrag: String, password: String) {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        func draw(_ n: Int) -> String { String((0..<n).map { _ in alphabet[Int(random.uint32() % UInt32(alphabet.count))] }) }
        return (draw(8), draw(24))
    }
}
