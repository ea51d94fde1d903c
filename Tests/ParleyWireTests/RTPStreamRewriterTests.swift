import Testing
import ParleyWire

@Suite("RTP stream rewriter (one stream per forwarding slot)")
struct RTPStreamRewriterTests {
    static let t0 = Instant(nanoseconds: 1_000_000_000)
    static func at(_ ms: Int64) -> Instant { t0 + .milliseconds(ms) }

    /// Feeds `packets` (source, seq, ts, ms) and returns the outputs (nil: dropped).
    static func run(_ r: inout RTPStreamRewriter, _ packets: [(UInt32, UInt16, UInt32, Int64)]) -> [RTPStreamRewriter.Output?] {
        packets.map { r.rewrite(source: $0.0, sequence: $0.1, timestamp: $0.2, marker: false, payloadBytes: 60, now: at($0.3)) }
    }

    @Test func continuesAcrossSpeakerChanges() {
        var r = RTPStreamRewriter(ssrc: 7, initialSequence: 1000, initialTimestamp: 500_000)
        let out = Self.run(&r, [
            (1, 59558, 865_000_000, 0), (1, 59559, 865_000_960, 20), (1, 59560, 865_001_920, 40),
            (2, 27877, 12, 60), (2, 27878, 972, 80),        // new speaker 20 ms after the last packet
            (3, 5, 4_000_000_000, 1_080),                   // another, after a second of silence
        ])
        #expect(out.map { $0?.sequenceNumber } == [1000, 1001, 1002, 1003, 1004, 1005])
        #expect(out.map { $0?.timestamp } == [500_000, 500_960, 501_920, 502_880, 503_840, 503_840 + 48_000])
        #expect(out.map { $0?.marker } == [true, false, false, true, false, true])
        #expect(r.switches == 3 && r.packetsSent == 6 && r.octetsSent == 360)
    }

    // Sequence rewriting across 65535 → 0, in the input and in the output (tables, as for the jitter buffer).
    static let sequenceWraps: [(initial: UInt16, inputs: [UInt16], outputs: [UInt16])] = [
        (10, [65533, 65534, 65535, 0, 1], [10, 11, 12, 13, 14]),            // the input wraps
        (65534, [100, 101, 102, 103], [65534, 65535, 0, 1]),                // the output wraps
        (65535, [65535, 0, 1], [65535, 0, 1]),                              // both at once
        (0, [65535, 1, 0, 2], [0, 2, 1, 3]),                                // reordered across the wrap
    ]

    @Test(arguments: sequenceWraps)
    func sequenceWrap(initial: UInt16, inputs: [UInt16], outputs: [UInt16]) {
        var r = RTPStreamRewriter(ssrc: 1, initialSequence: initial, initialTimestamp: 0)
        let out = inputs.enumerated().map { i, seq in
            r.rewrite(source: 9, sequence: seq, timestamp: UInt32(i) * 960, marker: false, payloadBytes: 10, now: Self.at(Int64(i) * 20))
        }
        #expect(out.map { $0?.sequenceNumber } == outputs)
    }

    // Timestamps across 2³² − 1 → 0, in the input, in the output, and across a change of source.
    static let timestampWraps: [(initial: UInt32, source2: UInt32, inputs: [UInt32], outputs: [UInt32])] = [
        (1_000, 1, [UInt32.max - 959, 0, 960], [1_000, 1_960, 2_920]),
        (UInt32.max - 959, 1, [5, 965, 1_925], [UInt32.max - 959, 0, 960]),
        // second source 20 ms later: continues from the wrapped output
        (UInt32.max - 959, 2, [5, 77], [UInt32.max - 959, 0]),
    ]

    @Test(arguments: timestampWraps)
    func timestampWrap(initial: UInt32, source2: UInt32, inputs: [UInt32], outputs: [UInt32]) {
        var r = RTPStreamRewriter(ssrc: 1, initialSequence: 0, initialTimestamp: initial)
        let out = inputs.enumerated().map { i, ts in
            r.rewrite(source: i == 0 ? 1 : source2, sequence: UInt16(i), timestamp: ts, marker: false, payloadBytes: 10,
                      now: Self.at(Int64(i) * 20))
        }
        #expect(out.map { $0?.timestamp } == outputs)
    }

    @Test func reorderedAndRetransmittedKeepTheirNumbers() {
        var r = RTPStreamRewriter(ssrc: 1, initialSequence: 100, initialTimestamp: 0)
        let out = Self.run(&r, [(1, 10, 0, 0), (1, 12, 1_920, 40), (1, 11, 960, 45), (1, 11, 960, 50), (1, 13, 2_880, 60)])
        #expect(out.map { $0?.sequenceNumber } == [100, 102, 101, 101, 103])
        #expect(out.map { $0?.timestamp } == [0, 1_920, 960, 960, 2_880])
        #expect(r.lastSequence == 103 && r.packetsSent == 3)  // the late and repeated ones are not new packets
    }

    @Test func aPacketFromBeforeTheSourcesFirstIsDropped() {
        var r = RTPStreamRewriter(ssrc: 1, initialSequence: 0, initialTimestamp: 0)
        let out = Self.run(&r, [(1, 50, 0, 0), (1, 51, 960, 20), (2, 900, 0, 40), (2, 899, 0, 42), (2, 901, 960, 60)])
        // 899 would map onto 1, which speaker 1 already used: a receiver would take it for a duplicate
        #expect(out.map { $0?.sequenceNumber } == [0, 1, 2, nil, 3])
        #expect(out.map { $0?.marker } == [true, false, true, nil, false])
    }

    @Test func aRestartedSourceIsMappedAfresh() {
        var r = RTPStreamRewriter(ssrc: 1, initialSequence: 0, initialTimestamp: 0)
        let out = Self.run(&r, [(1, 10, 0, 0), (1, 11, 960, 20), (1, 40_000, 77, 40)])
        #expect(out.map { $0?.sequenceNumber } == [0, 1, 2])
        #expect(out[2]?.marker == true && out[2]?.timestamp == 1_920)
    }

    @Test func nackTranslation() {
        var r = RTPStreamRewriter(ssrc: 1, initialSequence: 65534, initialTimestamp: 0)
        _ = Self.run(&r, [(1, 10, 0, 0), (1, 11, 960, 20), (2, 500, 0, 40), (2, 502, 1_920, 80)])
        // outputs: 65534 65535 | 0 (2:500)  [1 lost] 2 (2:502)
        #expect(r.original(of: 65534).map { [$0.source, UInt32($0.sequence)] } == [1, 10])
        #expect(r.original(of: 65535).map { [$0.source, UInt32($0.sequence)] } == [1, 11])
        #expect(r.original(of: 0).map { [$0.source, UInt32($0.sequence)] } == [2, 500])
        #expect(r.original(of: 1).map { [$0.source, UInt32($0.sequence)] } == [2, 501])    // lost on the way in: the NACK names the source's 501
        // the timestamp offset of speaker 2's segment: its 0 became 65534's ts (0) + 960 + 20 ms after 11 (at 20 ms) = 1_920
        #expect(r.original(of: 2)?.timestampOffset == 1_920 && r.original(of: 65535)?.timestampOffset == 0)
        #expect(r.original(of: 3) == nil)          // never sent
        #expect(r.original(of: 65000) == nil)      // before the first segment
    }

    @Test func onlyTheLastSegmentsAreRemembered() {
        var r = RTPStreamRewriter(ssrc: 1, initialSequence: 0, initialTimestamp: 0)
        for s in UInt32(1)...6 { _ = r.rewrite(source: s, sequence: 100, timestamp: 0, marker: false, payloadBytes: 1, now: Self.at(Int64(s) * 20)) }
        #expect(r.original(of: 5).map { [$0.source, UInt32($0.sequence)] } == [6, 100])
        #expect(r.original(of: 2).map { [$0.source, UInt32($0.sequence)] } == [3, 100])
        #expect(r.original(of: 1) == nil && r.original(of: 0) == nil)
    }

    @Test func senderReportTime() {
        var r = RTPStreamRewriter(ssrc: 1, initialSequence: 0, initialTimestamp: 4_000)
        #expect(r.timestamp(at: Self.at(0)) == 4_000)
        _ = r.rewrite(source: 1, sequence: 1, timestamp: 9, marker: false, payloadBytes: 1, now: Self.at(0))
        #expect(r.timestamp(at: Self.at(500)) == 4_000 + 24_000)
    }
}
