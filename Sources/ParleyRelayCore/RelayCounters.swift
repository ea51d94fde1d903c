/// Why a datagram was dropped. Each reason is counted and logged at a limited rate.
public enum DropReason: Int, CaseIterable, Sendable {
    case oversize, unknownProtocol, malformedRTP, malformedRTCP, malformedSignalling, unknownSender
    case ssrcMismatch, notPublisher, muted, connectionMismatch, unexpectedMessage, joinFlood, badCookie
    case resumeRejected, tokenReplay, pathRejected
    /// Encryption (issue 15): version 1 signalling to a relay that requires version 2; a handshake initiation that
    /// does not open with the relay's key; a sealed datagram that does not open (forged, tampered, another session's);
    /// a sealed datagram whose counter was seen (replayed); SRTP/SRTCP that fails its tag, or repeats an index.
    case cleartext, handshakeFailed, sealedRejected, sealedReplayed, srtpRejected, srtpReplayed
    /// WebRTC (issue 17): STUN that is malformed, names no member's ICE username, or fails MESSAGE-INTEGRITY; DTLS from
    /// an address that passed no ICE check; DTLS records a failed or finished handshake does not take; SRTP/SRTCP
    /// from a WebRTC member before its DTLS handshake gave keys.
    case stunRejected, dtlsUncheckedAddress, dtlsRejected, srtpNotReady
    /// Cluster (issue 18): a relay-to-relay datagram that does not open (forged, replayed, from a node not live in
    /// the directory, for another worker) or names a room or member this node does not share.
    case cascadeRejected, cascadeUnknown

    /// The metric label.
    public var label: String {
        switch self {
        case .oversize: "oversize"
        case .unknownProtocol: "unknown_protocol"
        case .malformedRTP: "malformed_rtp"
        case .malformedRTCP: "malformed_rtcp"
        case .malformedSignalling: "malformed_signalling"
        case .unknownSender: "unknown_sender"
        case .ssrcMismatch: "ssrc_mismatch"
        case .notPublisher: "not_publisher"
        case .muted: "muted"
        case .connectionMismatch: "connection_mismatch"
        case .unexpectedMessage: "unexpected_message"
        case .joinFlood: "join_flood"
        case .badCookie: "bad_cookie"
        case .resumeRejected: "resume_rejected"
        case .tokenReplay: "token_replay"
        case .pathRejected: "path_rejected"
        case .cleartext: "cleartext"
        case .handshakeFailed: "handshake_failed"
        case .sealedRejected: "sealed_rejected"
        case .sealedReplayed: "sealed_replayed"
        case .srtpRejected: "srtp_rejected"
        case .srtpReplayed: "srtp_replayed"
        case .stunRejected: "stun_rejected"
        case .dtlsUncheckedAddress: "dtls_unchecked_address"
        case .dtlsRejected: "dtls_rejected"
        case .srtpNotReady: "srtp_not_ready"
        case .cascadeRejected: "cascade_rejected"
        case .cascadeUnknown: "cascade_unknown"
        }
    }
}

/// Why a reliable signalling message to a session was not queued (or left the queue unsent).
public enum SignallingDropReason: Int, CaseIterable, Sendable {
    /// A text (one per recipient) not queued to a recipient that was not keeping up; the sender was told.
    case textRefused
    /// A speaker list or mute event still waiting to go out, replaced by a newer one.
    case superseded
    /// A message that did not fit in a full queue (`signallingQueueLimit`); its session was removed.
    case queueFull

    /// The metric label.
    public var label: String {
        switch self {
        case .textRefused: "text_refused"
        case .superseded: "superseded"
        case .queueFull: "queue_full"
        }
    }
}

/// A worker's counters: plain integers owned by its loop (read by others only through snapshots).
public struct RelayCounters: Sendable, Equatable {
    /// Datagrams and bytes received.
    public var packetsIn: UInt64 = 0, bytesIn: UInt64 = 0
    /// Datagrams and bytes the core queued to send (handed to the loop's output; what the kernel accepted is
    /// counted by the loop's socket, see `DatagramCounters` in ParleyNet).
    public var packetsQueued: UInt64 = 0, bytesQueued: UInt64 = 0
    /// RTP packets forwarded (one per listener).
    public var forwarded: UInt64 = 0
    /// Of those, the ones another worker sent for this one (a big room's shared listeners, `FanOutTable.shares`).
    public var forwardedByOtherWorkers: UInt64 = 0
    /// Cluster: datagrams sent to and accepted from other nodes' relay-to-relay links (media, mixes, rosters, texts).
    public var cascadeOut: UInt64 = 0, cascadeIn: UInt64 = 0
    /// Drops by `DropReason.rawValue`.
    public var drops = [UInt64](repeating: 0, count: DropReason.allCases.count)
    /// Joins accepted.
    public var joinsAccepted: UInt64 = 0
    /// Joins refused, by refusal code.
    public var joinsRefused: [UInt16: UInt64] = [:]
    /// Cookie answers sent.
    public var retriesSent: UInt64 = 0
    /// Handshakes answered (initiations that opened with the relay's key; repeats answered from the cache excluded).
    public var handshakes: UInt64 = 0
    /// NACKed packets resent from history, and those no longer held.
    public var nacksAnswered: UInt64 = 0, nacksMissed: UInt64 = 0
    /// NACKed packets not resent because the requester's retransmission budget was spent (or past 64 in one NACK).
    public var nacksRefused: UInt64 = 0
    /// Uplink repair: sequence numbers found missing from speakers' streams (gaps seen), asked for again in NACKs
    /// to speakers (a retry counts again), arrived after being asked for, and still missing when their window ended.
    public var uplinkLost: UInt64 = 0, uplinkNacked: UInt64 = 0, uplinkRecovered: UInt64 = 0, uplinkGivenUp: UInt64 = 0
    /// Listeners' report blocks ignored (jitter over a second) or whose fraction lost was lowered to what the
    /// listener's own counts allow (`ListenerReports`).
    public var implausibleReports: UInt64 = 0
    /// Signalling messages retransmitted.
    public var signallingRetransmissions: UInt64 = 0
    /// Members removed for silence.
    public var timeouts: UInt64 = 0
    /// Signalling messages not queued or dropped unsent, by `SignallingDropReason.rawValue`.
    public var signallingDrops = [UInt64](repeating: 0, count: SignallingDropReason.allCases.count)
    /// Members and presence sessions removed because their signalling queue overflowed (not keeping up).
    public var slowSessionsRemoved: UInt64 = 0
    /// Mixed packets sent (mix mode, one per listener per 20 ms while someone speaks).
    public var mixedPacketsSent: UInt64 = 0
    /// Resumes accepted.
    public var resumes: UInt64 = 0
    /// Path challenges sent to new addresses of sessions.
    public var pathChallengesSent: UInt64 = 0
    /// Presence sessions registered; calls rung (callee online and free); calls answered.
    public var presenceRegistered: UInt64 = 0, callsStarted: UInt64 = 0, callsAnswered: UInt64 = 0

    /// Zeroed counters.
    public init() {}

    /// The count for one reason.
    public func drops(_ reason: DropReason) -> UInt64 { drops[reason.rawValue] }

    /// The count of signalling messages dropped for one reason.
    public func signallingDrops(_ reason: SignallingDropReason) -> UInt64 { signallingDrops[reason.rawValue] }
}
