import ParleyAuth
import ParleyWire

/// Moving a session to a new address (NAT rebinding, a new network) only after the new address proved it can receive
/// and holds the session secret: a resume, or any traffic that names a session from an unknown address, gets a
/// `pathChallenge` there; a `pathResponse` from that address with a proof made with the session secret moves the
/// session (`PathChallenge` explains the challenge). Nothing else is sent to the new address before that.
extension RelayCore {
    /// At most one challenge per session per this many nanoseconds (a speaker's packets from a new address arrive
    /// every 20 ms; one challenge per round trip is enough).
    static let pathChallengeInterval: Int64 = 100_000_000
    /// Bytes of a `pathChallenge` datagram: a smaller datagram (an ack, a ping) is not answered with one.
    static let pathChallengeDatagramSize = (try? SignalDatagram(connectionID: 1, sequence: 0, ack: 0,
        message: .pathChallenge(challenge: [UInt8](repeating: 0, count: PathChallenge.size))).serialized().count) ?? Signalling.maxDatagramSize

    /// Sends `address` a challenge for session `connectionID`, in no more bytes than `received`, at most once per
    /// `pathChallengeInterval` per session and within the worker's budget for answers to unverified addresses.
    func challengePath(connectionID: UInt32, lastChallengeSent: inout Int64, to address: PeerAddress, received: Int,
                       now: Moment, viaPublicPort: Bool) {
        guard received >= Self.pathChallengeDatagramSize, now.monotonic - lastChallengeSent >= Self.pathChallengeInterval,
              retryBucket.take(now: now.monotonic) else { return }
        lastChallengeSent = now.monotonic
        let challenge = shared.pathChallenges.mint(connectionID: connectionID, address: address, unixMilliseconds: now.unixMilliseconds)
        outbox.sendSignal(.pathChallenge(challenge: challenge), to: address, connectionID: connectionID, viaPublicPort: viaPublicPort, limit: received)
        outbox.counters.pathChallengesSent &+= 1
    }

    /// Traffic from an unknown address naming session `connectionID` (a resume with a valid proof, or any other
    /// signalling): challenge the address. Returns false when no session of that id can be challenged.
    func challengeUnknownAddress(connectionID: UInt32, from: PeerAddress, received: Int, now: Moment, viaPublicPort: Bool) -> Bool {
        guard let session = sessions.byConnection[connectionID]?.session, session.signals else { return false }
        challengePath(connectionID: connectionID, lastChallengeSent: &session.lastChallengeSent, to: from, received: received,
                      now: now, viaPublicPort: viaPublicPort)
        return true
    }

    /// RTP from an unknown address with a member's SSRC (a speaker behind a NAT that rebound): challenge the address,
    /// so the member moves within a round trip instead of after its own resume seconds later.
    func challengeRTPSender(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard bytes.count >= 12 else { return }
        let ssrc = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        guard let member = sessions.bySSRC[ssrc], !member.isRTPEndpoint else { return }
        challengePath(connectionID: member.connectionID, lastChallengeSent: &member.session.lastChallengeSent, to: from,
                      received: bytes.count, now: now, viaPublicPort: false)
    }

    /// A resume from an address that is not the session's: challenge it when the proof holds, else tell the sender to
    /// join afresh (in no more bytes than it sent).
    func handleResume(connectionID: UInt32, timestamp: UInt64, proof: [UInt8], received: Int, from: PeerAddress,
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
    /// newer than the last one the session answered, and its proof holds, the session moves to `from`.
    func handlePathResponse(connectionID: UInt32, challenge: [UInt8], proof: [UInt8], from: PeerAddress, now: Moment,
                            viaPublicPort: Bool) {
        guard let issuedAt = shared.pathChallenges.verify(challenge, connectionID: connectionID, address: from,
                                                           unixMilliseconds: now.unixMilliseconds) else {
            return outbox.drop(.pathRejected, from: from, now: now)
        }
        guard let entry = sessions.byConnection[connectionID],
              entry.session.acceptPathResponse(issuedAt: issuedAt, challenge: challenge, proof: proof) else {
            return outbox.drop(.pathRejected, from: from, now: now)
        }
        move(entry, to: from, now: now, viaPublicPort: viaPublicPort)
    }

    /// Moves a session whose new address answered its challenge (a session already at that address is removed).
    func move(_ entry: SessionTable.Entry, to from: PeerAddress, now: Moment, viaPublicPort: Bool) {
        let session = entry.session
        sessions.unlink(session.address, from: entry)
        if let other = sessions.byAddress[from] { removeSession(other, reason: "address taken over", goodbye: nil, now: now) }
        let old = session.address
        switch entry {
        case .member(let m): m.address = from  // through the member: its room's fan-out table follows
        case .presence: session.address = from
        }
        session.viaPublicPort = viaPublicPort
        session.lastHeard = now.monotonic
        sessions.link(from, to: entry)
        outbox.counters.resumes &+= 1
        outbox.send(.resumed, to: session, now: now)
        noteTimerWork(at: now.monotonic)
        if log.threshold <= .info { log.write(.info, "\(entry.label) moved: \(old) → \(from)") }
    }
}
