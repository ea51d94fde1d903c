// The engine: what it is set up with and tells its owner, its state, and the calls an owner makes besides the
// media step and the timers. Its paths: `ClientEngine+ReceivePath.swift` (datagrams in),
// `ClientEngine+SendPath.swift` (the 20 ms media step, RTCP, media out), `ClientEngine+Sessions.swift` (one
// session after another: rejoin, a cluster's redirect, move and failover).

import ParleyAuth
import ParleyCrypto
import ParleyMedia
import ParleyWire

/// The client in a room as a pure, clock-driven engine: one `ClientSession` at a time (joined afresh after
/// `RejoinBackoff`'s wait when the relay forgot us, shut down, timed us out or went silent), the send path
/// (`SendPipeline`: Opus/RTP, FEC sized by the relay's receiver reports), the receive path (`ReceiveMixer`: jitter
/// buffers, mix), NACKs while a gap can still be filled before play-out, receiver reports every second, and who
/// speaks from the received levels. No clock, socket or device inside: the owner passes `now`, hands in datagrams
/// and captured frames, plays what `media` returns, and sends what the engine gives to `transmit`.
///
/// The owner's loop, every 20 ms:
/// ```
/// datagram from the socket → receive(bytes, from:, now:)        (events)
/// captured frame (if inRoom or a device) → media(now:, captured:, level:, into:) → play the frame if true
/// tick(now:)                                                      (events: rejoin, keepalives, speakers)
/// ```
public final class ClientEngine {
    /// What the engine is set up with.
    public struct Configuration: Sendable {
        /// The room to join.
        public var room: String
        /// Receive only: no encoder, nothing sent but signalling, NACKs and receiver reports.
        public var listenOnly = false
        /// Join muted.
        public var muted = false
        /// Join afresh after a session ends in a way a new one can mend; without it such an end is `.lost`.
        public var reconnect = true
        /// Opus bitrate, bit/s.
        public var bitrate: Int32 = 56_000
        /// Opus complexity, 0…10.
        public var complexity: Int32 = 10
        /// Send nothing in silence (Opus DTX).
        public var dtx = true
        /// Ask the relay for RFC 2198 redundancy at join; where it agrees, a lossy path's packets carry earlier frames
        /// (`SendPipeline.redundantFrames`) and the jitter buffers start without room for a NACK's round trip.
        public var redundancy = true
        /// Each received stream's jitter buffer (the client starts with no minimum delay).
        public var jitter: JitterBufferConfig = {
            var c = JitterBufferConfig()
            c.minimumDelay = .zero
            return c
        }()
        /// When what we send counts as voice (its level against the threshold), and who we hear speaking: the
        /// relay's rules.
        public var speech = SpeechRules.standard
        /// Encrypted (the default; with the relay key to insist on, if known) or cleartext (debugging).
        public var security = SignallingSession.Security.encrypted(relayKey: nil)

        /// A configuration for `room` with the client's defaults.
        public init(room: String) { self.room = room }
    }

    /// How a stay in the room ended for good.
    public enum Ending: Equatable, Sendable {
        /// The relay refused the join.
        case refused(RefusalCode, String)
        /// The relay said goodbye because we left.
        case left
        /// The relay removed us (kicked, replaced, or a goodbye a new session cannot mend).
        case removed(GoodbyeCode, String)
        /// No session was ever welcomed: the relay is unreachable.
        case unreachable(String)
        /// A welcomed session ended without a goodbye and the engine does not reconnect.
        case lost(String)
        /// The relay did not prove it holds the key the member expects.
        case relayUnproven(String)
    }

    /// What the engine tells its owner.
    public enum Event: Equatable, Sendable {
        /// Something the current session said.
        case session(ClientSession.Event)
        /// Who speaks changed, from the received streams' levels (forward rooms).
        case speakersHeard([SpeakingTracker.Speaker])
        /// The session ended in a way a new session can mend.
        case connectionLost(String)
        /// A new session is opened after this wait.
        case rejoining(after: Interval)
        /// In a cluster, the room lives on another node: the engine joins there (`roomElsewhere`).
        case redirected(PeerAddress)
        /// In a cluster, the node `from` is draining: the engine rejoins the room at the node it named (goodbye
        /// `moved`).
        case moving(PeerAddress, from: PeerAddress)
        /// In a cluster, the node is lost: the engine rejoins at another the last welcome named (`Welcome.alternates`).
        case failingOver(to: PeerAddress)
        /// The relay stopped answering: nothing heard from it for this long (the session is resuming; the engine
        /// keeps trying, and joins afresh if the session is lost). Said once per silence, at most 4 s after the
        /// relay's last word (the session pings every second once it has been quiet for 3 s, and resumes a second
        /// later), long before the session gives up on it.
        case relaySilent(for: Interval)
        /// The relay answers again (a resume accepted or a new welcome) after being silent for this long.
        case relayBack(after: Interval)
        /// Over for good.
        case over(Ending)
    }

    /// Where the engine stands.
    public enum Phase: Equatable, Sendable {
        /// A session is open (joining, joined or resuming).
        case inSession
        /// Waiting to open a new session at `until`.
        case waitingToRejoin(until: Instant)
        /// Over for good; the owner exits.
        case over(Ending)
    }

    /// Time between receiver reports while in the room.
    public static let receiverReportInterval: Interval = .seconds(1)
    /// Round trip assumed before the first pong.
    public static let initialRoundTrip: Interval = .milliseconds(20)

    // The state: internal rather than private because the engine's paths and sessions, in files of their own,
    // read and write it; its owner reads what is public.

    /// The configuration.
    public let configuration: Configuration
    /// The relay it talks to: the one it was given, or the cluster node a `roomElsewhere` refusal, a goodbye `moved`
    /// or a welcome's alternates named.
    public internal(set) var server: PeerAddress
    /// The relay key the sessions with `server` insist on: the configured one (`configuration.security`) for the
    /// relay it was given, the key the cluster's pointer named (`NodePointer`) for a node it was sent to.
    public internal(set) var serverKey: [UInt8]?
    /// Redirects followed since the last welcome (`roomElsewhere`), at most `maxRedirects`.
    var redirects = 0
    /// In a cluster: the other nodes the last welcome named, each with its key; a lost relay's member rejoins at the
    /// next of them.
    public internal(set) var alternates: [NodePointer] = []
    /// Nodes this member failed over from, and when: a redirect back to one of them soon after is not followed.
    var lostNodes: [(node: PeerAddress, at: Instant)] = []
    /// Times it asked again instead of following a redirect to a lost node (bounded).
    var lostRetries = 0
    /// Whether any session of this engine was welcomed (a stay that ends before is not a stay in the room).
    public internal(set) var everWelcomed = false

    /// Where the engine stands.
    public internal(set) var phase: Phase = .inSession
    /// The current session (the last one once over).
    public internal(set) var session: ClientSession
    /// The receive path: per-SSRC jitter buffers, decoders, NACK trackers, statistics; the local mix.
    public let receiver: ReceiveMixer
    /// The send path (nil when listen-only).
    public let sender: SendPipeline?
    /// What the send path put on the wire lately, resent when the relay NACKs our stream (nil when listen-only).
    public let sentHistory: SentPacketHistory?
    /// Who speaks, from the levels of the received streams (forward rooms send no `speakers` to this client).
    public internal(set) var speaking: SpeakingTracker
    /// Muted: captured frames advance the timestamp but nothing is sent.
    public internal(set) var muted: Bool
    /// Muted by the room (the backend): `muted` holds until the room lifts it, and `setMuted(false)` is refused.
    public internal(set) var mutedByRoom = false
    /// The room's mode, from the last welcome (forward until then).
    public internal(set) var mode = RoomMode.forward
    /// The current round-trip estimate from pongs.
    public internal(set) var roundTrip = ClientEngine.initialRoundTrip
    /// The round trip on the media path from RTCP (RFC 3550 §6.4.1: the relay's report block about our uplink names
    /// our sender report), smoothed; nil until one arrived (listen-only members send no SR, so never).
    public internal(set) var mediaRoundTrip: Interval?
    /// The round trips of the pings sent at join (`JitterPrior`), first `JitterPrior.probes` pongs of the session.
    public internal(set) var joinRoundTrips: [Interval] = []
    /// The round trip NACK timing uses: the media path's when known, else the signalling pongs'.
    public var nackRoundTrip: Interval { mediaRoundTrip ?? roundTrip }
    /// Counters for the live view and the summary.
    public internal(set) var packetsSent = 0, packetsReceived = 0, bytesReceived = 0, nacksSent = 0
    /// Per SSRC: packets received.
    public internal(set) var receivedBySSRC: [UInt32: Int] = [:]
    /// The longest time between two media packets received (any stream), once the first arrived: with a speaker who
    /// never pauses, the longest the member heard nothing (a node drained or lost, a move).
    public internal(set) var longestReceiveGap = Interval.zero
    var lastMediaAt: Instant?
    /// Level of the last captured frame (RFC 6464: 0 loud … 127 silent).
    public internal(set) var inputLevel: UInt8 = 127

    let token: () -> String
    let unixMilliseconds: () -> Int64
    let transmit: (UnsafeRawBufferPointer, PeerAddress) -> Void
    var random: any RandomNumberGenerator
    var backoff = RejoinBackoff()
    var lastReceiverReport = Instant.origin
    /// The CNAME of our RTCP: random per session, so that it names no one (RFC 7022 short-term persistence).
    public internal(set) var cname = ""
    /// When the last captured frame was taken and the RTP timestamp it got: an SR maps its NTP time through it.
    var lastCapture: (at: Instant, timestamp: UInt32)?
    /// When we last sent RTP (an SR only while we send, RFC 3550 §6.4).
    var lastMediaSent: Instant?
    /// NTP middle words of our last two sender reports: a report block's LSR must name one to give a round trip.
    var senderReportsSent: (last: UInt32, previous: UInt32) = (0, 0)
    /// Whether the relay answers (`relaySilent` / `relayBack`).
    public internal(set) var relayWatch = RelaySilenceWatch()
    let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
    /// Where media is protected or unprotected (SRTP; the plaintext of a received packet lives here until the next).
    let cryptoScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    /// The session's SRTP (nil: cleartext, or before the welcome).
    public internal(set) var crypto: MediaCrypto?
    /// A received packet with its payload opened (end-to-end calls).
    let opened = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)

    /// End-to-end encryption of the Opus payloads (a call's `FrameCipher`), or nil: every payload we send is sealed
    /// before it goes into RTP, every payload received is opened after RTP and before the jitter buffer; one that
    /// does not open (tampered, replayed, cleartext, our own reflected) is dropped and counted in
    /// `framesRefusedEndToEnd`. Set before media flows.
    public var endToEnd: FrameCipher? {
        didSet { sender?.endToEnd = endToEnd }
    }
    /// Received payloads that did not open with `endToEnd`.
    public internal(set) var framesRefusedEndToEnd = 0

    /// An engine that joins `configuration.room` at `server` with `token()` (asked afresh for every session) and
    /// sends its join at once. Nonces and the RTP stream's first sequence number and timestamp come from `random`.
    /// Datagrams go out through `transmit(bytes, to)` (the bytes are valid only during the call).
    public init(server: PeerAddress, token: @escaping () -> String, configuration: Configuration, now: Instant,
                unixMilliseconds: @escaping () -> Int64, random: some RandomNumberGenerator,
                transmit: @escaping (UnsafeRawBufferPointer, PeerAddress) -> Void) throws(OpusError) {
        self.server = server
        if case .encrypted(let key) = configuration.security { serverKey = key }
        self.token = token
        self.configuration = configuration
        self.unixMilliseconds = unixMilliseconds
        self.transmit = transmit
        self.muted = configuration.muted
        self.speaking = SpeakingTracker(rules: configuration.speech)
        var random = random
        sender = configuration.listenOnly ? nil
            : try SendPipeline(ssrc: 0, bitrate: configuration.bitrate, complexity: configuration.complexity, dtx: configuration.dtx,
                               random: &random)
        sentHistory = configuration.listenOnly ? nil : SentPacketHistory()
        receiver = ReceiveMixer(jitterConfig: configuration.jitter)
        session = ClientSession(server: server, token: token(), room: configuration.room, muted: configuration.muted,
                                speakersFromMedia: true, redundancy: configuration.redundancy,
                                security: configuration.security, now: now, unixMilliseconds: unixMilliseconds,
                                random: &random)
        self.random = random
        _ = session.tick(now: now)
        flush()
    }

    deinit {
        scratch.deallocate()
        cryptoScratch.deallocate()
        opened.deallocate()
    }

    /// Whether the member is in the room (joined, or resuming): captured audio is sent, NACKs and reports go out.
    public var inRoom: Bool {
        guard phase == .inSession else { return false }
        return session.state == .joined || session.state == .resuming
    }

    /// How long the relay has been silent (see `Event.relaySilent`), or nil while it answers.
    public func relaySilence(now: Instant) -> Interval? { relayWatch.silence(now: now) }

    /// Sends the session's queued signalling.
    func flush() {
        for d in session.drainOutgoing() { d.withUnsafeBytes { transmit($0, session.destination) } }
    }

    /// Mutes or unmutes: the relay is told, and captured frames stop (or start) going out. Returns false, changing
    /// nothing, for an unmute while the room's mute holds (`mutedByRoom`).
    @discardableResult
    public func setMuted(_ muted: Bool, now: Instant) -> Bool {
        guard muted || !mutedByRoom else { return false }
        self.muted = muted
        session.setMuted(muted, now: now)
        flush()
        return true
    }

    /// Sends a text to the room (`to` empty) or to one identity, with image ids; its message id, or nil (see
    /// `ClientSession.sendText`).
    public func sendText(_ text: String, attachments: [String] = [], to: String = "", now: Instant) -> UInt32? {
        defer { flush() }
        return session.sendText(text, attachments: attachments, to: to, now: now)
    }

    /// A CNAME of 16 random hex digits: a participant's RTCP name that says nothing about who it is.
    static func randomCNAME(using random: inout any RandomNumberGenerator) -> String {
        let bits = random.next()
        let hex = String(bits, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Leaves the room now (the relay removes the member on receipt): an RTCP BYE for our SSRC goes first (in a
    /// compound, protected like our other RTCP), then the signalling leave; the engine is then over.
    public func leave(now: Instant) {
        if inRoom { sendRTCP(now: now, report: false, nacks: [], goodbye: true) }
        session.leave(now: now)
        flush()
        phase = .over(.left)
    }

    /// Who is audible right now (SSRCs whose last frame played audio).
    public var audibleSSRCs: [UInt32] { receiver.streams.values.filter { $0.lastOutcome == .speech }.map(\.ssrc) }

    /// Concealed frames so far over all streams.
    public var concealedFrames: Int { receiver.streams.values.reduce(0) { $0 + $1.audio.jitter.stats.concealedFrames } }
}
