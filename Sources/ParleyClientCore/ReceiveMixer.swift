import ParleyMedia
import ParleyWire

/// The client's receive path: one jitter buffer and decoder per incoming SSRC (or the relay's one mixed stream),
/// mixed locally into the 20 ms frame the device plays. Streams silent for 10 s are dropped. Owned by one thread.
public final class ReceiveMixer {
    /// One incoming stream.
    public final class Stream {
        /// Its SSRC.
        public let ssrc: UInt32
        /// Jitter buffer + decoder.
        public let audio: AudioReceiveStream
        /// Which packets to NACK.
        public var nacks = NackTracker()
        /// RFC 3550 reception statistics, for receiver reports.
        public var statistics = RTPReceiveStatistics(clockRate: 48_000)
        /// When a packet last arrived.
        public var lastPacket: Instant
        /// The NTP middle word of the stream's last sender report and when it arrived: the LSR/DLSR of our blocks
        /// about it, from which its sender (the relay, for its mix) learns the round trip.
        public var lastSenderReport: (ntpMiddle: UInt32, at: Instant)?
        /// What the last pull produced.
        public var lastOutcome: AudioReceiveStream.Outcome = .silence
        let pcm: UnsafeMutablePointer<Int16>

        init(ssrc: UInt32, audio: AudioReceiveStream, now: Instant) {
            self.ssrc = ssrc
            self.audio = audio
            self.lastPacket = now
            pcm = .allocate(capacity: audio.frameSamples)
            pcm.initialize(repeating: 0, count: audio.frameSamples)
        }

        deinit { pcm.deallocate() }
    }

    /// Streams by SSRC.
    public private(set) var streams: [UInt32: Stream] = [:]
    private let bus = AudioMixBus(frameSamples: 960)
    private var limiter = MixLimiter()
    private let config: JitterBufferConfig

    /// Where each stream's jitter buffer starts before its own packets have shown the path (`JitterPrior`, from the
    /// pings at join); set on the streams already open as well (it matters only while a stream is young).
    public var startupPrior: Interval? {
        didSet { for stream in streams.values { stream.audio.jitter.startupPrior = startupPrior } }
    }

    /// A mixer whose streams use `config`.
    public init(jitterConfig: JitterBufferConfig = JitterBufferConfig()) {
        config = jitterConfig
    }

    /// Takes one RTP packet.
    public func receive(_ packet: RTPPacketView, now: Instant) {
        var stream = streams[packet.ssrc]
        if stream == nil {
            guard let audio = try? AudioReceiveStream(jitterConfig: config) else { return }
            audio.jitter.startupPrior = startupPrior
            stream = Stream(ssrc: packet.ssrc, audio: audio, now: now)
            streams[packet.ssrc] = stream
        }
        guard let stream else { return }
        stream.lastPacket = now
        _ = stream.statistics.record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, arrivalTimeNanoseconds: now.nanoseconds)
        // A RED packet's copies count as arrived before its primary: the gaps they fill are never asked for.
        _ = RedundantFrames.unpack(packet, redPayloadType: stream.audio.redPayloadType,
            frameSamples: stream.audio.frameSamples) {
            seq, _, _ in _ = stream.nacks.received(seq, now: now)
        }
        // A packet we NACKed arrives at least a round trip after its neighbours: kept out of the jitter buffer's
        // delay estimate as an arrival (the buffer counted its gap as a repair when it saw it; see `nacksDue`).
        let repaired = stream.nacks.received(packet.sequenceNumber, now: now)
        stream.audio.insert(packet, arrival: now, retransmission: repaired)
    }

    /// The sender of `ssrc` said goodbye (RTCP BYE, RFC 3550 §6.6): its stream plays out what it holds and then
    /// falls silent instead of being concealed (`JitterBuffer.senderStopped`).
    public func senderLeft(ssrc: UInt32) {
        streams[ssrc]?.audio.jitter.senderStopped()
    }

    /// Generic NACKs (RFC 4585) from `reporter` for every stream's gaps that a retransmission sent now can still
    /// fill before play-out (the stream's target delay plus one frame), each gap asked at most twice, a round trip
    /// apart (`NackTracker`). `roundTrip` is taken as at least `minimumRoundTrip`.
    ///
    /// For a stream the sender answers NACKs for (`answered`: the relay keeps a history of every stream it
    /// forwards, not of a mix unless configured to), once a gap has been filled after being asked for, its jitter
    /// buffer counts every gap as arriving a round trip (and a tick) after it was seen
    /// (`JitterBuffer.repairRoundTrip`), so on a lossy path the target grows to let repairs play. Until then its
    /// gaps are asked for even where the answer may come too late: a buffer whose target is below the round trip
    /// would otherwise never ask, never be answered, and never make room for repairs. (A late original after a
    /// NACK also counts as filled, which is why streams nobody answers for are left out.)
    public func nacksDue(now: Instant, roundTrip: Interval, reporter: UInt32,
                         answered: (UInt32) -> Bool = { _ in true }) -> [GenericNACK] {
        let rtt = max(roundTrip, Self.minimumRoundTrip)
        var nacks: [GenericNACK] = []
        for stream in streams.values {
            let answerable = answered(stream.ssrc)
            let repaired = answerable && stream.nacks.recovered > 0
            stream.audio.jitter.repairRoundTrip = repaired ? rtt + Self.frameDuration : nil
            var delay = stream.audio.jitter.stats.targetDelay + Self.frameDuration
            if answerable && !repaired { delay = max(delay, rtt + Self.frameDuration + Self.frameDuration) }
            let lost = stream.nacks.due(now: now, roundTrip: rtt, playoutDelay: delay)
            if !lost.isEmpty { nacks.append(GenericNACK(senderSSRC: reporter, mediaSSRC: stream.ssrc, lost: lost)) }
        }
        return nacks
    }

    /// Smallest round trip NACK timing assumes.
    public static let minimumRoundTrip: Interval = .milliseconds(5)
    /// A stream silent this long is dropped.
    public static let staleAfter: Interval = .seconds(10)
    /// One frame of the mix (960 samples at 48 kHz).
    static let frameDuration: Interval = .milliseconds(20)

    /// The sender of `ssrc` sent a sender report stamped `ntpMiddle` (the middle of its NTP time), received at `now`.
    public func senderReported(ssrc: UInt32, ntpMiddle: UInt32, now: Instant) {
        streams[ssrc]?.lastSenderReport = (ntpMiddle, now)
    }

    /// One report block per stream (at most 31), fraction lost counted since the previous call, LSR/DLSR naming the
    /// stream's last sender report (0 when none). The relay sizes its mix encoders' FEC by these.
    public func reportBlocks(now: Instant) -> [ReportBlock] {
        var blocks: [ReportBlock] = []
        for stream in streams.values.prefix(31) {
            var lsr: UInt32 = 0, dlsr: UInt32 = 0
            if let sr = stream.lastSenderReport {
                lsr = sr.ntpMiddle
                dlsr = NTPTimestamp.compactUnits(now - sr.at)
            }
            blocks.append(stream.statistics.makeReportBlock(ssrc: stream.ssrc, lastSR: lsr, delaySinceLastSR: dlsr))
        }
        return blocks
    }

    /// An RTCP receiver report from `reporter` with `reportBlocks(now:)`; nil with no streams.
    public func receiverReport(reporter: UInt32, now: Instant) -> ReceiverReport? {
        guard !streams.isEmpty else { return nil }
        return ReceiverReport(ssrc: reporter, reports: reportBlocks(now: now))
    }

    /// Mixes the next 20 ms of every stream into `out` (960 samples); returns the SSRCs that played audio.
    @discardableResult
    public func pull(now: Instant, into out: UnsafeMutablePointer<Int16>) -> Int {
        bus.clear()
        var playing = 0
        var stale: [UInt32] = []
        for (ssrc, s) in streams {
            s.lastOutcome = s.audio.pull(now: now, into: s.pcm)
            if s.lastOutcome != .silence {
                bus.add(s.pcm)
                playing += 1
            } else if now - s.lastPacket > Self.staleAfter {
                stale.append(ssrc)
            }
        }
        for ssrc in stale { streams[ssrc] = nil }
        bus.mix(into: out, limiter: &limiter)
        return playing
    }
}
