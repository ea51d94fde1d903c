/// One outgoing RTP stream fed by a succession of incoming streams — a forwarding slot whose speaker changes —
/// as receivers expect a stream to look: one SSRC, sequence numbers that continue by one across every change of
/// source, timestamps that advance by the wall-clock time between the last packet of one source and the first of the
/// next, and the marker bit on each source's first packet (a talkspurt start, RFC 3551 §4.1). mediasoup's
/// `SeqManager` is the model: each source is mapped by a fixed offset (output = input + offset, modulo 2¹⁶ and 2³²),
/// so reordered packets and retransmissions of the current source map to the numbers they would have had, and
/// anything older than the source's first packet is dropped (its numbers belong to the segment before).
///
/// ```
/// input   A: 59558 59559 59560 59561 │ B: 27877 27878 27879 …     (SSRC, seq, timestamp jump)
/// output     1000  1001  1002  1003  │    1004* 1005  1006  …     (one SSRC; * marker, ts += time elapsed)
/// ```
///
/// `original(of:)` maps an output sequence number back to the source and input sequence it came from (for NACKs),
/// for the last `segmentCapacity` sources. Pure value, no allocation; one per outgoing stream.
public struct RTPStreamRewriter: Sendable {
    /// The outgoing SSRC.
    public let ssrc: UInt32
    /// Clock rate of the media (Opus: 48 kHz).
    public let clockRate: Int64
    /// The current source (the caller's identifier: a member id), nil before the first packet.
    public private(set) var source: UInt32?
    /// Highest output sequence number sent (valid once `source` is set).
    public private(set) var lastSequence: UInt16
    /// Output timestamp of the packet with `lastSequence`.
    public private(set) var lastTimestamp: UInt32
    /// When the packet with `lastSequence` was rewritten.
    public private(set) var lastSentAt = Instant.distantPast
    /// Packets and payload octets rewritten (the counts of an RTCP sender report).
    public private(set) var packetsSent: UInt32 = 0
    public private(set) var octetsSent: UInt32 = 0
    /// Source changes so far (the first source included), and when the last happened.
    public private(set) var switches = 0
    public private(set) var lastSwitchAt = Instant.distantPast

    private var sequenceOffset: UInt16 = 0
    private var timestampOffset: UInt32 = 0
    /// Highest input sequence number of the current source, and its first (older ones are dropped).
    private var highestInput: UInt16 = 0
    /// How far the current source's input advanced past its first packet (capped): how far back a late packet may be.
    private var inputAdvance = 0
    /// The last sources: where each began in the output and its offset, newest at `segmentNext - 1`.
    private var segments: (Segment, Segment, Segment, Segment) = (.none, .none, .none, .none)
    private var segmentNext = 0

    /// How many past sources `original(of:)` can map back to.
    public static let segmentCapacity = 4
    /// An input jump larger than this (forward or back) is taken as the source restarting its stream: it is mapped
    /// afresh, as a change of source would be, rather than shown to receivers as thousands of lost packets.
    public static let maxJump = 1_000

    private struct Segment: Sendable {
        var source: UInt32
        var outputStart: UInt16
        var sequenceOffset: UInt16
        var timestampOffset: UInt32
        var valid: Bool
        static let none = Segment(source: 0, outputStart: 0, sequenceOffset: 0, timestampOffset: 0, valid: false)
    }

    /// What one input packet becomes.
    public struct Output: Equatable, Sendable {
        public var sequenceNumber: UInt16
        public var timestamp: UInt32
        public var marker: Bool

        public init(sequenceNumber: UInt16, timestamp: UInt32, marker: Bool) {
            self.sequenceNumber = sequenceNumber
            self.timestamp = timestamp
            self.marker = marker
        }
    }

    /// A stream that will start at `initialSequence` and `initialTimestamp` (random, RFC 3550 §5.1).
    public init(ssrc: UInt32, initialSequence: UInt16, initialTimestamp: UInt32, clockRate: Int64 = 48_000) {
        self.ssrc = ssrc
        self.clockRate = clockRate
        lastSequence = initialSequence &- 1
        lastTimestamp = initialTimestamp
    }

    /// Maps one packet of `source` (its input sequence number, timestamp, marker and payload size) to the output
    /// stream, or returns nil when it must be dropped (older than the source's first packet). A packet of another
    /// source than the current one makes it the current one.
    public mutating func rewrite(source: UInt32, sequence: UInt16, timestamp: UInt32, marker: Bool, payloadBytes: Int,
                                 now: Instant) -> Output? {
        if source != self.source {
            begin(source, sequence: sequence, timestamp: timestamp, now: now)
            return emit(sequence: sequence, timestamp: timestamp, marker: true, payloadBytes: payloadBytes, now: now)
        }
        let distance = sequenceDistance(from: highestInput, to: sequence)
        if distance > Self.maxJump || distance < -Self.maxJump {
            begin(source, sequence: sequence, timestamp: timestamp, now: now)
            return emit(sequence: sequence, timestamp: timestamp, marker: true, payloadBytes: payloadBytes, now: now)
        }
        if distance > 0 {
            highestInput = sequence
            inputAdvance = min(inputAdvance + distance, 1 << 20)
            return emit(sequence: sequence, timestamp: timestamp, marker: marker, payloadBytes: payloadBytes, now: now)
        }
        // Reordered, repeated or a retransmission: the same mapping, unless it predates this source's first packet.
        guard -distance <= inputAdvance else { return nil }
        return Output(sequenceNumber: sequence &+ sequenceOffset, timestamp: timestamp &+ timestampOffset, marker: marker)
    }

    /// The output timestamp that corresponds to `now` (an RTCP sender report's RTP time): the last packet's,
    /// advanced by the time since it was sent.
    public func timestamp(at now: Instant) -> UInt32 {
        guard source != nil else { return lastTimestamp }
        return lastTimestamp &+ UInt32(truncatingIfNeeded: samples(since: lastSentAt, now: now))
    }

    /// Where an output packet came from: its source, its input sequence number, and what was added to its timestamp.
    public struct Origin: Equatable, Sendable {
        public var source: UInt32
        public var sequence: UInt16
        public var timestampOffset: UInt32
        /// Whether it was its source's first packet in the stream, which `rewrite` marked (else the marker was the input's).
        public var startsSegment = false
    }

    /// The origin of an output sequence number, or nil when it was never sent by one of the last `segmentCapacity`
    /// sources (or is newer than anything sent).
    public func original(of output: UInt16) -> Origin? {
        guard source != nil, sequenceDistance(from: output, to: lastSequence) >= 0 else { return nil }
        for back in 1...Self.segmentCapacity {
            let s = segment((segmentNext - back + Self.segmentCapacity * 2) % Self.segmentCapacity)
            guard s.valid else { return nil }
            if sequenceDistance(from: s.outputStart, to: output) >= 0 {
                return Origin(source: s.source, sequence: output &- s.sequenceOffset, timestampOffset: s.timestampOffset,
                              startsSegment: output == s.outputStart)
            }
        }
        return nil
    }

    private mutating func begin(_ source: UInt32, sequence: UInt16, timestamp: UInt32, now: Instant) {
        let outputSequence = lastSequence &+ 1
        // The first packet of a stream keeps the initial timestamp; a later source continues from the last packet's
        // timestamp by the time elapsed (at least one 20 ms frame, so timestamps never stand still or go back).
        var outputTimestamp = lastTimestamp
        if self.source != nil { outputTimestamp &+= UInt32(truncatingIfNeeded: max(clockRate / 50, samples(since: lastSentAt, now: now))) }
        self.source = source
        sequenceOffset = outputSequence &- sequence
        timestampOffset = outputTimestamp &- timestamp
        highestInput = sequence
        inputAdvance = 0
        switches += 1
        lastSwitchAt = now
        setSegment(segmentNext, Segment(source: source, outputStart: outputSequence, sequenceOffset: sequenceOffset,
                                          timestampOffset: timestampOffset, valid: true))
        segmentNext = (segmentNext + 1) % Self.segmentCapacity
    }

    private mutating func emit(sequence: UInt16, timestamp: UInt32, marker: Bool, payloadBytes: Int, now: Instant) -> Output {
        lastSequence = sequence &+ sequenceOffset
        lastTimestamp = timestamp &+ timestampOffset
        lastSentAt = now
        packetsSent &+= 1
        octetsSent &+= UInt32(truncatingIfNeeded: payloadBytes)
        return Output(sequenceNumber: lastSequence, timestamp: lastTimestamp, marker: marker)
    }

    private func samples(since then: Instant, now: Instant) -> Int64 {
        let elapsed = max(0, (now - then).nanoseconds)
        guard elapsed < 3_600 * 1_000_000_000 else { return clockRate * 3_600 }  // an hour's silence: enough
        return elapsed * clockRate / 1_000_000_000
    }

    private func segment(_ i: Int) -> Segment {
        switch i {
        case 0: return segments.0
        case 1: return segments.1
        case 2: return segments.2
        default: return segments.3
        }
    }

    private mutating func setSegment(_ i: Int, _ s: Segment) {
        switch i {
        case 0: segments.0 = s
        case 1: segments.1 = s
        case 2: segments.2 = s
        default: segments.3 = s
        }
    }
}
