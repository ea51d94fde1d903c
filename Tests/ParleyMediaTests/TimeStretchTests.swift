// Pitch-synchronous time-stretching, the sync buffer behind it, and the playout policy that decides when to stretch.
import Foundation
import Testing
import ParleyMedia
import ParleyWire

@Suite("Time-stretching")
struct TimeStretchTests {
    /// A 200 Hz harmonic tone (period 240 samples at 48 kHz) at about −12 dBFS.
    static func voiced(_ count: Int, offset: Int = 0) -> [Int16] {
        (0..<count).map { i in
            let t = Double(i + offset) / 48_000
            return Int16(4_000 * sin(2 * .pi * 200 * t) + 2_000 * sin(2 * .pi * 400 * t + 1))
        }
    }

    /// Largest step between neighbouring samples: a seam shows as a step far above the signal's own.
    static func largestStep(_ x: ArraySlice<Int16>) -> Int {
        zip(x, x.dropFirst()).map { abs(Int($0) - Int($1)) }.max() ?? 0
    }

    @Test func shorteningPeriodicAudioRemovesWholePeriodsWithoutASeam() {
        var x = Self.voiced(1_920)
        let ownStep = Self.largestStep(x[...])
        let n = x.withUnsafeMutableBufferPointer { TimeStretch.shorten($0.baseAddress!, count: 1_920) }
        #expect(n < 1_920)
        #expect((1_920 - n) % 240 == 0)                 // whole pitch periods of the 200 Hz tone
        #expect(Self.largestStep(x[..<n]) <= ownStep + ownStep / 10)
        // What follows the cut is the original continuation: the tail matches the tone shifted by the cut.
        let expected = Self.voiced(n, offset: 1_920 - n)
        #expect(x[(n - 200)..<n].elementsEqual(expected[(n - 200)..<n]))
    }

    @Test func withoutPitchCutsOnlyQuietAudioIsShortened() {
        // An acceleration asked for a pause must not cut into a word that starts there.
        var loud = Self.voiced(1_920)
        #expect(loud.withUnsafeMutableBufferPointer { TimeStretch.shorten($0.baseAddress!, count: 1_920, pitchCut: false) } == 1_920)
        var quiet = Self.voiced(1_920).map { $0 / 100 }
        #expect(quiet.withUnsafeMutableBufferPointer { TimeStretch.shorten($0.baseAddress!, count: 1_920, pitchCut: false) } == 960)
    }

    @Test func shorteningLeavesLoudNoiseAlone() {
        var random = TestRandom(state: 5)
        var x = (0..<1_920).map { _ in Int16((random.next() - 0.5) * 16_000) }
        let before = x
        let n = x.withUnsafeMutableBufferPointer { TimeStretch.shorten($0.baseAddress!, count: 1_920) }
        #expect(n == 1_920)
        #expect(x == before)
    }

    @Test func nearSilenceIsShortenedByAWholeFrame() {
        var x = Self.voiced(1_920).map { $0 / 100 }    // about −52 dBFS
        let n = x.withUnsafeMutableBufferPointer { TimeStretch.shorten($0.baseAddress!, count: 1_920) }
        #expect(n == 960)
    }

    @Test func lengtheningPeriodicAudioRepeatsAPeriodThatJoinsTheContinuation() {
        var x = Self.voiced(1_920) + [Int16](repeating: 0, count: TimeStretch.maximumPeriod)
        let added = x.withUnsafeMutableBufferPointer { TimeStretch.lengthen($0.baseAddress!, end: 1_920) }
        #expect(added > 0 && added % 240 == 0)
        // The appended period ends where the tone continues: the next real sample follows without a seam.
        let joined = Array(x[..<(1_920 + added)]) + Self.voiced(240, offset: 1_920)
        #expect(Self.largestStep(joined[...]) <= Self.largestStep(Self.voiced(2_400)[...]) + 200)
    }

    @Test func lengtheningNeedsEnoughHistory() {
        var x = Self.voiced(600) + [Int16](repeating: 0, count: TimeStretch.maximumPeriod)
        let added = x.withUnsafeMutableBufferPointer { TimeStretch.lengthen($0.baseAddress!, end: 600) }
        #expect(added == 0)
    }
}

@Suite("Playout policy")
struct PlayoutPolicyTests {
    /// A path slower for its first packets than later (70, 55, 40 ms, then 30 ms): the first talkspurt starts at
    /// the delay the first packet showed, and once the fast packets arrive it plays ~40 ms above the target.
    static func slowStart(_ i: Int) -> Int64 { i < 3 ? (70 - 15 * Int64(i)) * ms : 30 * ms }

    @Test func targetStartsAtTheDataWithoutAPrior() {
        // No jitter at all: the target is the data's (zero) from the first packet, which plays at once.
        let h = JitterHarness()
        h.send(stream(count: 40))
        h.run(pulls: 3)   // the first packet arrives after 30 ms, and plays at the next pull
        #expect(h.buffer.stats.targetDelayMilliseconds <= 1)
        #expect(h.buffer.stats.played == 1)
        h.run(pulls: 29)
        #expect(h.buffer.stats.targetDelayMilliseconds <= 1 && h.delays.last! < 20)
        #expect(h.concealments == 0 && h.buffer.stats.played == 30)
    }

    @Test func smallExcessWaitsForTheNextSilence() {
        // The first talkspurt starts ~40 ms above the target (`slowStart`): during the 1.5 s talkspurt of loud
        // audio the excess is not stretched away (at most the part above the large-excess bound); it goes at the
        // next talkspurt (after DTX), which starts at the target, without stretching.
        let h = JitterHarness()
        h.quiet = false
        var packets = stream(count: 75, delay: Self.slowStart)
        var dtx = stream(count: 1, sequence: 75, timestamp: 75 * 960, sendStart: 1_000 * ms + 1_500 * ms)[0]
        dtx.payloadBytes = 1
        packets.append(dtx)
        packets += stream(count: 100, sequence: 76, timestamp: 76 * 960 + 48_000, sendStart: 1_000 * ms + 2_520 * ms)
        h.send(packets)
        h.run(pulls: 80)
        let accelerated = h.buffer.stats.accelerated
        #expect(accelerated <= 1)
        let target = h.buffer.stats.targetDelayMilliseconds
        #expect(target <= 5)
        #expect(h.delays[20..<75].allSatisfy { $0 >= target + 20 + 5 })   // the excess waits
        h.run(pulls: 150)
        #expect(h.buffer.stats.accelerated == accelerated)
        #expect(h.delays.last! <= h.buffer.stats.targetDelayMilliseconds + 20)
        #expect(h.concealments == 0)
    }

    @Test func smallExcessGoesAtOnceInAPauseBetweenWords() {
        // The same start-up excess, but the caller says the audio is near-silent: it is taken back within the
        // first second, where shortening is inaudible.
        let h = JitterHarness()
        h.quiet = true
        h.send(stream(count: 100, delay: Self.slowStart))
        h.run(pulls: 60)
        #expect(h.buffer.stats.accelerated >= 1)
        #expect(h.delays.last! <= h.buffer.stats.targetDelayMilliseconds + 20 + 5)
        #expect(h.concealments == 0)
    }

    @Test func persistentExcessIsTakenBackAfterFiveSecondsOfSpeech() {
        // One long talkspurt with no silence: the start-up excess goes after five seconds, by acceleration.
        let h = JitterHarness()
        h.quiet = false
        h.send(stream(count: 500, delay: Self.slowStart))
        h.run(pulls: 200)
        let early = h.buffer.stats.accelerated
        #expect(early <= 1)
        #expect(h.delays.last! >= h.buffer.stats.targetDelayMilliseconds + 25)
        h.run(pulls: 200)
        #expect(h.buffer.stats.accelerated > early)
        #expect(h.delays.last! <= h.buffer.stats.targetDelayMilliseconds + 25)
        #expect(h.concealments == 0)
    }
}

@Suite("Receive stream sync buffer")
struct ReceiveStreamSyncBufferTests {
    /// Plays `pattern` (true: a loud 200 Hz frame, false: digital silence), one packet per 20 ms on a path without
    /// jitter after its first three (slower) packets, through a receive stream; returns the jitter buffer's acceleration count.
    static func accelerations(_ pattern: [Bool]) throws -> Int {
        let encoder = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
        try encoder.setBitrate(40_000)
        let stream = try AudioReceiveStream()
        let tone = TimeStretchTests.voiced(960)
        let silence = [Int16](repeating: 0, count: 960)
        var payload = [UInt8](repeating: 0, count: 1_500)
        var out = [Int16](repeating: 0, count: 960)
        var datagrams: [(arrival: Int64, bytes: [UInt8])] = []
        for (k, loud) in pattern.enumerated() {
            let n = try (loud ? tone : silence).withUnsafeBufferPointer { pcm in
                try payload.withUnsafeMutableBytes { try encoder.encode(pcm, frameSize: 960, into: $0) }
            }
            var datagram: [UInt8] = [0x80, 111, UInt8(k >> 8), UInt8(k & 0xFF)]
            datagram += withUnsafeBytes(of: UInt32(k * 960).bigEndian, Array.init)
            datagram += [0, 0, 0, 1]
            datagram += payload[..<n]
            // The first three packets are slower (45, 30, 15 ms): the talkspurt starts ~45 ms above the target.
            datagrams.append((Int64(k) * 20 * ms + max(0, 45 - 15 * Int64(k)) * ms, datagram))
        }
        var next = 0
        for k in pattern.indices {
            let now = Int64(k) * 20 * ms + 48 * ms
            while next < datagrams.count, datagrams[next].arrival <= now {
                try datagrams[next].bytes.withUnsafeBytes { stream.insert(try RTPPacketView(parsing: $0), arrival: Instant(nanoseconds: datagrams[next].arrival)) }
                next += 1
            }
            _ = out.withUnsafeMutableBufferPointer { stream.pull(now: Instant(nanoseconds: now), into: $0.baseAddress!) }
        }
        return stream.jitter.stats.accelerated
    }

    @Test func startUpExcessWaitsThroughGapsBetweenWordsAndGoesInAPause() throws {
        // The first talkspurt starts ~45 ms above the target (the path's first packets were slower). Words 80 ms long with
        // 40 ms gaps between them (3 s): a gap is not a pause, so nothing is cut within the phrase…
        let phrase = (0..<150).map { $0 % 6 < 4 }
        #expect(try Self.accelerations(phrase) == 0)
        // …but a 120 ms pause after the first words is, and the excess goes there.
        let withPause = Array(phrase[0..<28]) + Array(repeating: false, count: 6) + Array(phrase[28..<150])
        #expect(try Self.accelerations(withPause) > 0)
    }

    @Test func accelerationKeepsTheOutputContinuousAndSilenceEmptiesTheSyncBuffer() throws {
        // A voiced stream whose first 10 packets take 150 ms longer than the rest: once the fast packets arrive the
        // talkspurt is far above the target, so the stream accelerates (by whole pitch periods) without ever playing a
        // gap; when the sender stops, the audio left waiting in the sync buffer is gone once silence begins.
        let encoder = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
        try encoder.setBitrate(40_000)
        let stream = try AudioReceiveStream()
        let tone = TimeStretchTests.voiced(960 * 150)
        var datagrams: [(arrival: Int64, bytes: [UInt8])] = []
        var payload = [UInt8](repeating: 0, count: 1_500)
        for k in 0..<150 {
            let n = try tone.withUnsafeBufferPointer { pcm in
                try payload.withUnsafeMutableBytes { bytes in
                    try encoder.encode(UnsafeBufferPointer(rebasing: pcm[(k * 960)..<((k + 1) * 960)]), frameSize: 960, into: bytes)
                }
            }
            let header: [UInt8] = [0x80, 111, UInt8(k >> 8), UInt8(k & 0xFF)] + withUnsafeBytes(of: UInt32(k * 960).bigEndian, Array.init)
                + [0, 0, 0, 1]
            datagrams.append((Int64(k) * 20 * ms + (k < 10 ? 150 * ms : 0), header + payload[..<n]))
        }
        var out = [Int16](repeating: 0, count: 960)
        var gapsInSpeech = 0, mostPending = 0
        var next = 0
        for pull in 0..<300 {
            let now = Int64(pull) * 20 * ms
            while next < datagrams.count, datagrams[next].arrival <= now {
                try datagrams[next].bytes.withUnsafeBytes { stream.insert(try RTPPacketView(parsing: $0), arrival: Instant(nanoseconds: datagrams[next].arrival)) }
                next += 1
            }
            let outcome = out.withUnsafeMutableBufferPointer { stream.pull(now: Instant(nanoseconds: now), into: $0.baseAddress!) }
            if outcome == .speech, out.allSatisfy({ $0 == 0 }) { gapsInSpeech += 1 }
            mostPending = max(mostPending, stream.pendingSamples)
        }
        #expect(stream.jitter.stats.accelerated > 0)
        #expect(mostPending > 0)            // a pitch-period cut left decoded audio waiting
        #expect(gapsInSpeech == 0)
        #expect(stream.pendingSamples == 0)
        #expect(stream.lastOutcome == .silence)
    }
}
