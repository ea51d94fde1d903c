import ParleyAuth
import ParleyCrypto
import ParleyWire

/// Moving a session to a new address (NAT rebinding, a new network) only after the new address proved it can receive
/// and holds the session secret: a resume, or any traffic that names a session from an unknown address, gets a
/// `pathChallenge` there; a `pathResponse` from that address with a proof made with the session secret lets the
/// session move (`PathChallenge` explains the challenge; the core's `move` moves it). Nothing else is sent to the
/// new address before that. One path for members and presence sessions alike. Owned by one `RelayCore`.
final class PathValidator {
    private let sessions: SessionTable
    private let outbox: Outbox
    private let challenges: PathChallenge

    init(sessions: SessionTable, outbox: Outbox, challenges: PathChallenge) {
        self.sessions = sessions
        self.outbox = outbox
        self.challenges = challenges
    }

    /// At most one challenge per session per this interval (a speaker's packets from a new address arrive
    /// every 20 ms; one challenge per round trip is enough).
    static let challengeInterval = Interval.milliseconds(100)
    /// Bytes of a `pathChallenge` datagram: a smaller datagram (an ack, a ping) is not answered with one.
    static let challengeDatagramSize = (try? SignalDatagram(connectionID: 1, sequence: 0, ack: 0,
        message: .pathChallenge(challenge: [UInt8](repeating: 0, count: PathChallenge.size))).serialized().count) ?? Signalling.maxDatagramSize

    /// Sends `address` a challenge for session `connectionID`, in no more bytes than `received`, at most once per
    /// `pathChallengeInterval` per session and within the worker's budget for answers to unverified addresses.
    private func challengePath(connectionID: UInt32, lastChallengeSent: inout Instant, to address: PeerAddress, received: Int,
                       now: Moment, viaPublicPort: Bool, sealedWith channel: SealedChannel?) {
        let size = Self.challengeDatagramSize + (channel == nil ? 0 : SignallingEnvelope.sealedOverhead)
        guard received >= size, now.monotonic - lastChallengeSent >= Self.challengeInterval,
              outbox.takeUnverifiedAnswer(now: now.monotonic) else { return }
        lastChallengeSent = now.monotonic
        let challenge = challenges.mint(connectionID: connectionID, address: address, unixMilliseconds: now.unixMilliseconds)
        outbox.sendSignal(.pathChallenge(challenge: challenge), to: address, connectionID: connectionID, viaPublicPort: viaPublicPort,
                          limit: received, sealedWith: channel)
        outbox.counters.pathChallengesSent &+= 1
    }

    /// Traffic from an unknown address naming session `connectionID` (a resume with a valid proof, or any other
    /// signalling): challenge the address. Returns false when no session of that id can be challenged.
    func challengeUnknownAddress(connectionID: UInt32, from: PeerAddress, received: Int, now: Moment, viaPublicPort: Bool) -> Bool {
        guard let session = sessions.byConnection[connectionID]?.session, session.signals else { return false }
        challengePath(connectionID: connectionID, lastChallengeSent: &session.lastChallengeSent, to: from, received: received,
                      now: now, viaPublicPort: viaPublicPort, sealedWith: session.sealed)
        return true
    }

    /// RTP from an unknown address with a member's SSRC (a speaker behind a NAT that rebound): challenge the address,
    /// so the member moves within a round trip instead of after its own resume seconds later.
    func challengeRTPSender(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard bytes.count >= 12 else { return }
        let ssrc = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        guard let member = sessions.bySSRC[ssrc], !member.isRTPEndpoint else { return }
        challengePath(connectionID: member.connectionID, lastChallengeSent: &member.session.lastChallengeSent, to: from,
                      received: bytes.count, now: now, viaPublicPort: false, sealedWith: member.session.sealed)
    }

    /// A resume from an address that is not the session's: challenge it when the proof holds, else tell the sender to
    /// join afresh (in no more bytes than it sent).
    func resume(connectionID: UInt32, timestamp: UInt64, proof: [UInt8], received: Int, from: PeerAddress,
                      now: Moment, viaPublicPort: Bool) {
        guard let session = sessions.byConnection[connectionID]?.session,
              session.resumeIsProven(timestamp: timestamp, proof: proof, now: now) else {
            outbox.drop(.resumeRejected, from: from, now: now)
            outbox.sendRefusal(.unknownSession, "unknown session", to: from, connectionID: connectionID, viaPublicPort: viaPublicPort,
                        limit: received)
            return
        }
        _ = challengeUnknownAddress(connectionID: connectionID, from: from, received: received, now: now, viaPublicPort: viaPublicPort)
    }

    /// A path response from `from`: when its challenge was minted for this session at this address, is fresh and
    /// newer than the last one the session answered, and its proof holds, the session that may move to `from` (the
    /// challenge is used up); else nil, and the response is dropped.
    func validatedPath(connectionID: UInt32, challenge: [UInt8], proof: [UInt8], from: PeerAddress, now: Moment) -> SessionTable.Entry? {
        guard let issuedAt = challenges.verify(challenge, connectionID: connectionID, address: from,
                                               unixMilliseconds: now.unixMilliseconds),
              let entry = sessions.byConnection[connectionID],
              entry.session.acceptPathResponse(issuedAt: issuedAt, challenge: challenge, proof: proof) else {
            outbox.drop(.pathRejected, from: from, now: now)
            return nil
        }
        return entry
    }
}
