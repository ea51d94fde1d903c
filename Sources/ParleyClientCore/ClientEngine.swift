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
        /// In a cluster, the node is draining: the engine rejoins the room at the node it named (goodbye `moved`).
        case moving(PeerAddress)
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

    /// The configuration.
    public let configuration: Configuration
    /// The relay it talks to: the one it was given, or the cluster node a `roomElsewhere` refusal, a goodbye `moved`
    /// or a welcome's alternates named.
    public private(set) var server: PeerAddress
    /// The relay key the sessions with `server` insist on: the configured one (`configuration.security`) for the
    /// relay it was given, the key the cluster's pointer named (`NodePointer`) for a node it was sent to.
    public private(set) var serverKey: [UInt8]?
    /// Redirects followed since the last welcome (`roomElsewhere`), at most `maxRedirects`.
    private var redirects = 0
    /// In a cluster: the other nodes the last welcome named, each with its key; a lost relay's member rejoins at the
    /// next of them.
    public private(set) var alternates: [NodePointer] = []
    /// Nodes this member failed over from, and when: a redirect back to one of them soon after is not followed.
    private var lostNodes: [(node: PeerAddress, at: Instant)] = []
    /// Times it asked again instead of following a redirect to a lost node (bounded).
    private var lostRetries = 0
    /// Whether any session of this engine was welcomed (a stay that ends before is not a stay in the room).
    public private(set) var everWelcomed = false

    /// Where the next session goes: `pointer`'s node, insisting on its key.
    private func target(_ pointer: NodePointer) {
        server = pointer.address
        serverKey = Base64URL.decode(Substring(pointer.relayKey))
    }

    /// How the next session is protected: cleartext when configured so (debugging), else encrypted, insisting on
    /// `serverKey` when one is known.
    private var sessionSecurity: SignallingSession.Security {
        if case .cleartext = configuration.security { return .cleartext }
        return .encrypted(relayKey: serverKey)
    }

    /// Moves to `next` of the cluster's nodes, the current one counted as lost for a while (kept as an alternate
    /// with the key it had).
    private func failOver(to next: NodePointer, now: Instant, events: inout [Event]) {
        lostNodes.removeAll { now - $0.at > .seconds(10) || $0.node == server }
        lostNodes.append((server, now))
        alternates.removeAll { $0 == next }
        // The node left keeps the key it proved (a configured one, or the one its handshake proved): it may come back.
        if let key = serverKey ?? session.signalling.presentedRelayKey,
           let current = NodePointer(address: server, relayKey: Base64URL.encode(key)) { alternates.append(current) }
        target(next)
        lostRetries = 0
        phase = .waitingToRejoin(until: now)
        events.append(.failingOver(to: next.address))
    }

    /// The pointer a cluster's refusal or goodbye carries as its reason, or the ending that says why it is not
    /// followed: a node named without its key (or not as "HOST:PORT KEY") is never joined, since the token would go
    /// to whoever answers there.
    private static func pointer(in reason: String) -> NodePointer? {
        try? NodePointer(parsing: reason)
    }

    /// Whether `node` was failed over from within the last 10 s.
    private func lost(_ node: PeerAddress, now: Instant) -> Bool {
        lostNodes.contains { $0.node == node && now - $0.at <= .seconds(10) }
    }
    static let maxRedirects = 3
    /// Where the engine stands.
    public private(set) var phase: Phase = .inSession
    /// The current session (the last one once over).
    public private(set) var session: ClientSession
    /// The receive path: per-SSRC jitter buffers, decoders, NACK trackers, statistics; the local mix.
    public let receiver: ReceiveMixer
    /// The send path (nil when listen-only).
    public let sender: SendPipeline?
    /// What the send path put on the wire lately, resent when the relay NACKs our stream (nil when listen-only).
    public let sentHistory: SentPacketHistory?
    /// Who speaks, from the levels of the received streams (forward rooms send no `speakers` to this client).
    public private(set) var speaking: SpeakingTracker
    /// Muted: captured frames advance the timestamp but nothing is sent.
    public private(set) var muted: Bool
    /// Muted by the room (the backend): `muted` holds until the room lifts it, and `setMuted(false)` is refused.
    public private(set) var mutedByRoom = false
    /// The room's mode, from the last welcome ("forward" until then).
    public private(set) var mode = "forward"
    /// The current round-trip estimate from pongs.
    public private(set) var roundTrip = ClientEngine.initialRoundTrip
    /// The round trip on the media path from RTCP (RFC 3550 §6.4.1: the relay's report block about our uplink names
    /// our sender report), smoothed; nil until one arrived (listen-only members send no SR, so never).
    public private(set) var mediaRoundTrip: Interval?
    /// The round trips of the pings sent at join (`JitterPrior`), first `JitterPrior.probes` pongs of the session.
    public private(set) var joinRoundTrips: [Interval] = []
    /// The round trip NACK timing uses: the media path's when known, else the signalling pongs'.
    public var nackRoundTrip: Interval { mediaRoundTrip ?? roundTrip }
    /// Counters for the live view and the summary.
    public private(set) var packetsSent = 0, packetsReceived = 0, bytesReceived = 0, nacksSent = 0
    /// Per SSRC: packets received.
    public private(set) var receivedBySSRC: [UInt32: Int] = [:]
    /// The longest time between two media packets received (any stream), once the first arrived: with a speaker who
    /// never pauses, the longest the member heard nothing (a node drained or lost, a move).
    public private(set) var longestReceiveGap = Interval.zero
    private var lastMediaAt: Instant?
    /// Level of the last captured frame (RFC 6464: 0 loud … 127 silent).
    public private(set) var inputLevel: UInt8 = 127

    private let token: () -> String
    private let unixMilliseconds: () -> Int64
    private let transmit: (UnsafeRawBufferPointer, PeerAddress) -> Void
    private var random: any RandomNumberGenerator
    private var backoff = RejoinBackoff()
    private var lastReceiverReport = Instant.origin
    /// The CNAME of our RTCP: random per session, so that it names no one (RFC 7022 short-term persistence).
    public private(set) var cname = ""
    /// When the last captured frame was taken and the RTP timestamp it got: an SR maps its NTP time through it.
    private var lastCapture: (at: Instant, timestamp: UInt32)?
    /// When we last sent RTP (an SR only while we send, RFC 3550 §6.4).
    private var lastMediaSent: Instant?
    /// NTP middle words of our last two sender reports: a report block's LSR must name one to give a round trip.
    private var senderReportsSent: (last: UInt32, previous: UInt32) = (0, 0)
    /// Whether the relay answers (`relaySilent` / `relayBack`).
    public private(set) var relayWatch = RelaySilenceWatch()
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
    /// Where media is protected or unprotected (SRTP; the plaintext of a received packet lives here until the next).
    private let cryptoScratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
    /// The session's SRTP (nil: cleartext, or before the welcome).
    public private(set) var crypto: MediaCrypto?
    /// A received packet with its payload opened (end-to-end calls).
    private let opened = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)

    /// End-to-end encryption of the Opus payloads (a call's `FrameCipher`), or nil: every payload we send is sealed
    /// before it goes into RTP, every payload received is opened after RTP and before the jitter buffer; one that
    /// does not open (tampered, replayed, cleartext, our own reflected) is dropped and counted in
    /// `framesRefusedEndToEnd`. Set before media flows.
    public var endToEnd: FrameCipher? {
        didSet { sender?.endToEnd = endToEnd }
    }
    /// Received payloads that did not open with `endToEnd`.
    public private(set) var framesRefusedEndToEnd = 0

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
                                speakersFromMedia: true, security: configuration.security, now: now, unixMilliseconds: unixMilliseconds,
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

    /// Takes a datagram from the socket: signalling goes to the session, RTP to the jitter buffers, RTCP receiver
    /// reports about our stream to the encoder's FEC. Anything not from the relay (`ClientSession.isFromRelay`) is
    /// dropped, and so is everything while no session is open.
    public func receive(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Instant) -> [Event] {
        guard phase == .inSession, !bytes.isEmpty, session.isFromRelay(from) else { return [] }
        guard bytes[0] != Signalling.magic else {
            return settle(session.handle(bytes, from: from, now: now), now: now)
        }
        receiveMedia(bytes, now: now)
        session.noteTraffic(now: now)
        return []
    }

    private func receiveMedia(_ received: UnsafeRawBufferPointer, now: Instant) {
        var bytes = received
        if let crypto {
            guard let n = crypto.unprotect(received, into: cryptoScratch) else { return }
            bytes = UnsafeRawBufferPointer(rebasing: cryptoScratch[..<n])
        } else if case .encrypted = configuration.security {
            return  // nothing unprotected is taken from the relay of an encrypted session
        }
        if isRTCP(bytes) {
            var packets = rtcpPackets(in: bytes)
            while let p = try? packets.next() {
                var blocks: [ReportBlock] = []
                switch p.packetType {
                case 200:
                    guard let sr = try? SenderReport(parsing: p) else { continue }
                    receiver.senderReported(ssrc: sr.ssrc, ntpMiddle: NTPTimestamp(bits: sr.ntpTimestamp).middle, now: now)
                    blocks = sr.reports
                case 201:
                    guard let rr = try? ReceiverReport(parsing: p) else { continue }
                    blocks = rr.reports
                case 203:
                    guard let bye = try? Goodbye(parsing: p) else { continue }
                    for ssrc in bye.ssrcs { receiver.senderLeft(ssrc: ssrc) }
                case 205 where p.countOrFormat == 1:
                    // The relay asks for packets of ours it never got (uplink repair): resent as they went out.
                    if let nack = try? GenericNACKView(parsing: p), let sender, let sentHistory,
                       nack.mediaSSRC == sender.ssrc, nack.senderSSRC != sender.ssrc {
                        sentHistory.answer(nack, now: now) { transmit($0, session.destination) }
                    }
                    continue
                default:
                    continue
                }
                guard let sender else { continue }
                for block in blocks where block.ssrc == sender.ssrc {
                    sender.reportedLoss(fraction: block.fractionLost, jitter: block.jitter)
                    noteRoundTrip(block)
                }
            }
            return
        }
        guard var packet = try? RTPPacketView(parsing: bytes) else { return }
        if let endToEnd {
            guard let plain = open(packet, with: endToEnd) else {
                framesRefusedEndToEnd += 1
                return
            }
            packet = plain
        }
        packetsReceived += 1
        bytesReceived += bytes.count
        receivedBySSRC[packet.ssrc, default: 0] += 1
        if let last = lastMediaAt, now - last > longestReceiveGap { longestReceiveGap = now - last }
        lastMediaAt = now
        speaking.observe(ssrc: packet.ssrc, level: packet.audioLevel(id: SendPipeline.defaultLevelExtensionID)?.level,
                         payloadBytes: packet.payloadCount, now: now)
        receiver.receive(packet, now: now)
    }

    /// The packet with its payload opened into `opened` (same header, padding dropped), or nil when it does not open.
    private func open(_ packet: RTPPacketView, with cipher: FrameCipher) -> RTPPacketView? {
        let headerEnd = packet.payloadOffset
        guard headerEnd + packet.payloadCount <= opened.count else { return nil }  // a hostile size: nothing larger opens
        opened.copyMemory(from: UnsafeRawBufferPointer(rebasing: packet.bytes[0..<headerEnd]))
        opened[0] &= ~0x20  // the padding bit: the opened payload carries none
        let frame = UnsafeRawBufferPointer(rebasing: packet.bytes[headerEnd..<(headerEnd + packet.payloadCount)])
        guard let n = try? cipher.open(frame, into: UnsafeMutableRawBufferPointer(rebasing: opened[headerEnd...])) else { return nil }
        return try? RTPPacketView(parsing: UnsafeRawBufferPointer(rebasing: opened[0..<(headerEnd + n)]))
    }

    /// One 20 ms media step: sends `captured` (already voice-processed, at `level`) when in the room, mixes the
    /// next 20 ms of every received stream into `out` (960 samples), then sends the NACKs still useful and, every
    /// second, a receiver report. Returns false (and touches nothing) while no session is open: nothing to play.
    public func media(now: Instant, captured: UnsafeBufferPointer<Int16>?, level: UInt8, into out: UnsafeMutablePointer<Int16>) -> Bool {
        guard phase == .inSession else { return false }
        let joined = inRoom
        if let captured {
            inputLevel = level
            if joined, let sender {
                lastCapture = (now, sender.nextTimestamp)
                if let packet = sender.packetize(captured, level: level, voice: configuration.speech.isSpeech(level: level), muted: muted) {
                    transmitMedia(packet)
                    packetsSent += 1
                    lastMediaSent = now
                }
            }
        }
        receiver.pull(now: now, into: out)
        guard joined else { return true }
        // NACKs still useful go out at once: in this second's report when it is due, else in a compound of their own.
        // The relay answers NACKs from its history for the streams it forwards (members' own SSRCs); about a mix (an
        // SSRC no member has) when its welcome says so (`MemberFlags.mixRepaired`: a lone speaker forwarded into the
        // mix, or `mix_nack`).
        let forwardRoom = mode == RoomMode.forward
        let mixRepaired = session.welcome?.flags.contains(.mixRepaired) ?? false
        let nacks = receiver.nacksDue(now: now, roundTrip: nackRoundTrip, reporter: reporterSSRC) { ssrc in
            forwardRoom || mixRepaired || session.members.values.contains { $0.ssrc == ssrc }
        }
        if now - lastReceiverReport >= Self.receiverReportInterval {
            lastReceiverReport = now
            sendRTCP(now: now, report: true, nacks: nacks)
        } else if !nacks.isEmpty {
            sendRTCP(now: now, report: false, nacks: nacks)
        }
        return true
    }

    /// The SSRC our RTCP names as its sender: the one the welcome assigned, listen-only or not (RFC 3550 has no
    /// SSRC 0 for a receiver that does not send; every participant has an SSRC).
    private var reporterSSRC: UInt32 { sender?.ssrc ?? session.welcome?.ssrc ?? 0 }

    /// Sends one compound RTCP packet (RFC 3550 §6.1) to the relay: with `report`, an SR about our uplink while we
    /// send (else an RR) with a block per received stream; without, an RR with no blocks (the minimal compound RFC 4585
    /// asks around feedback); then SDES with our CNAME, `nacks`, and a BYE for our SSRC when `goodbye`.
    private func sendRTCP(now: Instant, report: Bool, nacks: [GenericNACK], goodbye: Bool = false) {
        var writer = RTCPCompoundWriter(into: scratch)
        let ssrc = reporterSSRC
        do {
            if report, let sender, let capture = lastCapture, let sent = lastMediaSent, now - sent <= 2 * Self.receiverReportInterval {
                let ntp = NTPTimestamp(unixMilliseconds: unixMilliseconds())
                // The RTP clock at this instant: the last captured frame's timestamp plus the 48 kHz ticks since.
                let ticks = (now - capture.at).nanoseconds * Int64(Self.clockRate) / 1_000_000_000
                try writer.senderReport(ssrc: ssrc, ntpTimestamp: ntp.bits, rtpTimestamp: capture.timestamp &+ UInt32(truncatingIfNeeded: ticks),
                                        packetCount: sender.packetsSent, octetCount: sender.octetsSent)
                senderReportsSent = (ntp.middle, senderReportsSent.last)
            } else {
                try writer.receiverReport(ssrc: ssrc)
            }
            if report { for block in receiver.reportBlocks(now: now) { try writer.reportBlock(block) } }
            try writer.cname(ssrc: ssrc, cname)
            for nack in nacks {
                try writer.nack(nack)
                nacksSent += 1
            }
            if goodbye { try writer.goodbye(ssrc: ssrc) }
        } catch {
            // Only a full buffer (NACKs for many streams at once): what fits is sent; the rest is asked again later.
        }
        transmitMedia(writer.bytes)
    }

    /// The RTP clock rate of what we send (Opus).
    static let clockRate = 48_000
    /// Round trips longer than this from RTCP are taken as stale and ignored.
    public static let maxRoundTrip = Interval.seconds(10)

    /// A block from the relay about our uplink: when its LSR names one of our last two SRs, the round trip (RFC 3550
    /// §6.4.1) smoothed into `mediaRoundTrip` (1/8 gain); negative or over `maxRoundTrip`, ignored.
    private func noteRoundTrip(_ block: ReportBlock) {
        guard block.lastSR != 0, block.lastSR == senderReportsSent.last || block.lastSR == senderReportsSent.previous else { return }
        let arrival = NTPTimestamp(unixMilliseconds: unixMilliseconds()).middle
        guard let rtt = NTPTimestamp.roundTrip(arrival: arrival, lastSR: block.lastSR, delaySinceLastSR: block.delaySinceLastSR),
              rtt <= Self.maxRoundTrip else { return }
        mediaRoundTrip = mediaRoundTrip.map { $0 + (rtt - $0) / 8 } ?? rtt
    }

    /// Sends RTP or RTCP to the relay, protected with the session's SRTP when it is encrypted (never in the clear
    /// then: before the keys nothing goes out). RTP is kept in `sentHistory` as it went out.
    private func transmitMedia(_ packet: UnsafeRawBufferPointer) {
        var wire = packet
        if let crypto {
            guard let n = crypto.protect(packet, into: cryptoScratch) else { return }
            wire = UnsafeRawBufferPointer(rebasing: cryptoScratch[..<n])
        } else if configuration.security != .cleartext {
            return
        }
        transmit(wire, session.destination)
        if let sentHistory, !isRTCP(packet), packet.count >= RTPFixedHeader.size {
            sentHistory.store(sequence: UInt16(packet[2]) << 8 | UInt16(packet[3]), wire)
        }
    }

    /// Timers: opens a new session when the rejoin wait is over; the session's keepalives, retries and resume; who
    /// speaks (forward rooms).
    public func tick(now: Instant) -> [Event] {
        switch phase {
        case .over:
            return []
        case .waitingToRejoin(let until):
            guard now >= until else { return [] }
            session = ClientSession(server: server, token: token(), room: configuration.room, muted: muted, speakersFromMedia: true,
                                    security: sessionSecurity, now: now, unixMilliseconds: unixMilliseconds, random: &random)
            crypto = nil
            roundTrip = Self.initialRoundTrip
            mediaRoundTrip = nil
            senderReportsSent = (0, 0)
            phase = .inSession
            return settle(session.tick(now: now), now: now)
        case .inSession:
            var events = settle(session.tick(now: now), now: now)
            if phase == .inSession,
               case .silent(let quiet) = relayWatch.observe(resuming: session.state == .resuming, lastHeard: session.signalling.lastHeard, now: now) {
                events.append(.relaySilent(for: quiet))
                // A cluster: do not wait out the member timeout on a silent node; rejoin through another now (if this
                // node is alive after all, the other sends us back to it).
                if let next = alternates.first(where: { $0.address != server }) {
                    failOver(to: next, now: now, events: &events)
                    return events + tick(now: now)
                }
            }
            if phase == .inSession, mode != RoomMode.mix, let heard = speaking.update(now: now) { events.append(.speakersHeard(heard)) }
            return events
        }
    }

    /// Applies what the session said, sends what it queued, and decides what follows when it ended.
    private func settle(_ sessionEvents: [ClientSession.Event], now: Instant) -> [Event] {
        var events: [Event] = []
        for event in sessionEvents {
            events.append(.session(event))
            switch event {
            case .welcomed(let w):
                mode = w.mode
                redirects = 0
                alternates = w.alternates.compactMap(Self.pointer(in:))
                sender?.ssrc = w.ssrc
                cname = Self.randomCNAME(using: &random)
                sentHistory?.clear()
                crypto = try? session.makeMediaCrypto()
                followRoomMute(w.flags)
                joinRoundTrips = []
                session.signalling.probePath(count: JitterPrior.probes)
                events += relayAnswers(now: now)
            case .resumed:
                events += relayAnswers(now: now)
            case .roomKey(let key, let indices):
                try? crypto?.installRoomKey(key, streamIndices: indices)
            case .member(.muted, let m, _) where m.memberID == session.welcome?.memberID,
                 .member(.unmuted, let m, _) where m.memberID == session.welcome?.memberID:
                followRoomMute(m.flags)
            case .member(.left, let m, _):
                speaking.forget(ssrc: m.ssrc)
            case .roundTrip(let rtt):
                roundTrip = rtt
                if joinRoundTrips.count < JitterPrior.probes {
                    // The first pongs of a session answer the pings sent at the welcome: where streams start.
                    joinRoundTrips.append(rtt)
                    receiver.startupPrior = JitterPrior.delay(roundTrips: joinRoundTrips)
                }
            case .refused(.roomElsewhere, let reason) where Self.pointer(in: reason).map({ lost($0.address, now: now) }) == true:
                // The directory still names the node we just lost (its record lives a few seconds): ask this node
                // again shortly, until it lets the dead node go and opens the room itself.
                lostRetries += 1
                guard lostRetries <= 40 else { return events + finish(.refused(.roomElsewhere, reason)) }
                phase = .waitingToRejoin(until: now + .milliseconds(250))
                return events
            case .refused(.roomElsewhere, let reason) where redirects < Self.maxRedirects:
                // A cluster: the room lives on another node; join there now, insisting on the key this node named.
                guard let node = Self.pointer(in: reason) else { return events + finish(.refused(.roomElsewhere, Self.unfollowed(reason))) }
                redirects += 1
                target(node)
                phase = .waitingToRejoin(until: now)
                events.append(.redirected(node.address))
                return events + tick(now: now)
            case .refused(let code, let reason):
                return events + finish(.refused(code, reason))
            case .relayUnproven(let reason):
                return events + finish(.relayUnproven(reason))
            case .goodbye(.relayShutdown, _) where configuration.reconnect, .goodbye(.timedOut, _) where configuration.reconnect:
                break
            case .goodbye(.left, _):
                return events + finish(.left)
            case .goodbye(.moved, let reason) where configuration.reconnect:
                // A cluster: the node drains; join the room at the node it named now (the room's other members there
                // or elsewhere hear us again as soon as that node has us).
                guard let node = Self.pointer(in: reason) else { return events + finish(.removed(.moved, Self.unfollowed(reason))) }
                lostNodes.removeAll { now - $0.at > .seconds(10) || $0.node == node.address }
                lostNodes.append((server, now))
                alternates.removeAll { $0 == node }
                target(node)
                redirects = 0
                phase = .waitingToRejoin(until: now)
                events.append(.moving(node.address))
                return events + tick(now: now)
            case .goodbye(let code, let reason):
                return events + finish(.removed(code, reason))
            default:
                break
            }
        }
        flush()
        if session.state == .joined {
            everWelcomed = true
            backoff.reset()
        }
        guard case .ended(let reason) = session.state else { return events }
        if !everWelcomed && session.welcome == nil { return events + finish(.unreachable(reason)) }
        events.append(.connectionLost(reason))
        guard configuration.reconnect else { return events + finish(.lost(reason)) }
        if let next = alternates.first(where: { $0.address != server }) {
            // A cluster: this node is lost; rejoin at another (which sends us on if the room has a node already).
            failOver(to: next, now: now, events: &events)
        }
        let wait = backoff.take()
        phase = .waitingToRejoin(until: now + wait)
        events.append(.rejoining(after: wait))
        return events
    }

    /// Why a cluster's pointer without a usable key is not followed (the ending's reason).
    static func unfollowed(_ reason: String) -> String {
        "sent to another node of the cluster without its relay key (\"\(reason.prefix(100))\"): not followed, the token goes to no one unproven"
    }

    /// The relay answered: ends a silence, if there was one.
    private func relayAnswers(now: Instant) -> [Event] {
        guard case .back(let after) = relayWatch.answered(now: now) else { return [] }
        return [.relayBack(after: after)]
    }

    /// How long the relay has been silent (see `Event.relaySilent`), or nil while it answers.
    public func relaySilence(now: Instant) -> Interval? { relayWatch.silence(now: now) }

    private func finish(_ ending: Ending) -> [Event] {
        flush()
        phase = .over(ending)
        return [.over(ending)]
    }

    /// Sends the session's queued signalling.
    private func flush() {
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

    /// Follows the relay's word on this member's own flags: a mute by the room mutes us and holds; when the room
    /// lifts it, we are as the relay says (unmuted).
    private func followRoomMute(_ flags: MemberFlags) {
        let byRoom = flags.contains(.mutedByRoom)
        if byRoom || mutedByRoom { muted = flags.contains(.muted) }
        mutedByRoom = byRoom
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
