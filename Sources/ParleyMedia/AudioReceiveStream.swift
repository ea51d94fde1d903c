import Glibc
import ParleyWire

/// One incoming Opus stream played out: its jitter buffer, its decoder, and what each jitter decision means in
/// PCM — decode, Opus PLC, FEC recovery from the next packet, and pitch-synchronous time-stretching (`TimeStretch`)
/// when the buffer moves its delay during speech. Used by the relay's mixer (one per publisher) and the client
/// (one per SSRC). Buffers are allocated once; owned by one thread.
///
/// Decoded audio goes through a small sync buffer: a stretch changes its length by a pitch period (2.5–15 ms), so
/// up to a frame of decoded audio can wait there for the next pull. The jitter buffer's delay is the delay at which
/// frames leave it (which is what protects against late packets); what waits in the sync buffer adds to the
/// mouth-to-ear delay until the next silence, where the sync buffer is emptied.
///
///     sync: [ history (played, kept for lengthening) | pending (decoded, not yet played) | free ]
///           0                                      start                              end
public final class AudioReceiveStream {
    /// What a pull produced.
    public enum Outcome: Sendable, Equatable {
        /// Decoded audio (played, FEC-recovered or time-stretched).
        case speech
        /// Packet-loss concealment.
        case concealed
        /// Nothing to play: not in a talkspurt. The frame is zeros.
        case silence
    }

    /// Samples per 20 ms frame.
    public let frameSamples: Int
    /// The jitter buffer.
    public let jitter: JitterBuffer
    private let decoder: OpusDecoder
    private let sync: UnsafeMutablePointer<Int16>
    private let historySamples: Int
    private var start: Int
    private var end: Int
    /// Decode errors (bad packets) so far; each is played as concealment.
    public private(set) var decodeErrors = 0
    /// The last outcome.
    public private(set) var lastOutcome: Outcome = .silence
    /// After a pull whose 20 ms are exactly one received packet decoded as it came (not stretched, concealed,
    /// rebuilt or shifted by audio waiting in the sync buffer): that packet's payload, borrowed from the jitter
    /// buffer until the next `insert` or `pull`. A mixer with one speaker sends it on as it is (no second coding).
    public private(set) var passThroughPayload: UnsafeRawBufferPointer?
    /// Near-silent frames played in a row. Three or more (60 ms) is a pause, told to the jitter buffer: shortening
    /// there is inaudible and, unlike a gap between two words, does not move the timeline within a phrase.
    private var quietFrames = 0
    private var inPause: Bool { quietFrames >= 3 }

    /// A stream decoding 48 kHz mono Opus.
    public init(jitterConfig: JitterBufferConfig = JitterBufferConfig()) throws(OpusError) {
        frameSamples = jitterConfig.frameSamples
        jitter = JitterBuffer(config: jitterConfig)
        decoder = try OpusDecoder(sampleRate: Int32(jitterConfig.clockRate), channels: 1)
        historySamples = TimeStretch.maximumPeriod + 2 * TimeStretch.window
        let capacity = historySamples + 4 * frameSamples + TimeStretch.maximumPeriod
        sync = .allocate(capacity: capacity)
        sync.initialize(repeating: 0, count: capacity)
        start = historySamples
        end = historySamples
    }

    deinit { sync.deallocate() }

    /// The payload type whose packets are RFC 2198 RED (`RedundantFrames`), or nil where RED was not negotiated.
    public var redPayloadType: UInt8? = RedundantAudio.defaultPayloadType

    /// Queues one RTP packet's payload (`retransmission`: see `JitterBuffer.insert`). A RED packet's usable copies go
    /// in first, where they fill holes only (`JitterBuffer.insertRedundant`), then its primary; a malformed one is
    /// dropped.
    public func insert(_ packet: RTPPacketView, arrival: Instant, retransmission: Bool = false) {
        let primary = RedundantFrames.unpack(packet, redPayloadType: redPayloadType,
            frameSamples: frameSamples) { seq, ts, data in
            jitter.insertRedundant(sequenceNumber: seq, timestamp: ts, ssrc: packet.ssrc, payload: data,
                arrival: arrival)
        }
        guard let primary else { return }
        jitter.insert(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, ssrc: packet.ssrc,
                      marker: packet.marker, payload: primary, arrival: arrival, retransmission: retransmission)
    }

    /// The packets up to `sequenceNumber` were played elsewhere (`JitterBuffer.skip(through:)`): they are forgotten,
    /// with any decoded audio waiting in the sync buffer, and the stream is silent until what follows starts.
    public func skip(through sequenceNumber: UInt16) {
        jitter.skip(through: sequenceNumber)
        end = start
        quietFrames = 0
    }

    /// Decoded samples waiting to be played.
    public var pendingSamples: Int { end - start }

    /// Produces the next 20 ms into `out` (`frameSamples` samples).
    public func pull(now: Instant, into out: UnsafeMutablePointer<Int16>) -> Outcome {
        var outcome = lastOutcome
        var attempts = 0
        let aligned = end == start  // nothing waiting: the next decision's frame is exactly this pull's output
        var played: UnsafeRawBufferPointer?
        passThroughPayload = nil
        while end - start < frameSamples {
            attempts += 1
            guard attempts <= 3 else {  // cannot happen: play, conceal and silence always produce a frame
                (sync + end).update(repeating: 0, count: frameSamples)
                end += frameSamples
                break
            }
            let decision = jitter.pull(now: now, quiet: inPause)
            if case .play(let f) = decision, attempts == 1, aligned, f.payload.count > 2 { played = f.payload }
            outcome = produce(decision, quietHint: inPause)
        }
        if attempts == 1, outcome == .speech, end - start == frameSamples { passThroughPayload = played }
        out.update(from: sync + start, count: frameSamples)
        quietFrames = TimeStretch.isQuiet(out, count: frameSamples) ? quietFrames + 1 : 0
        start += frameSamples
        if start > historySamples {
            let shift = start - historySamples
            memmove(sync, sync + shift, (end - shift) * MemoryLayout<Int16>.stride)
            start -= shift
            end -= shift
        }
        lastOutcome = outcome
        return outcome
    }

    /// Appends the audio of one jitter decision to the sync buffer; returns what it was. After a quiet frame an
    /// acceleration may have been asked for the pause: it then shortens only audio that is still quiet (a word may
    /// be starting), never by a pitch-period cut; what it does not cut waits in the sync buffer.
    private func produce(_ decision: JitterDecision, quietHint: Bool) -> Outcome {
        let frame = UnsafeMutableBufferPointer(start: sync + end, count: frameSamples)
        switch decision {
        case .play(let f):
            guard decode(f.payload, into: frame) else { return conceal(into: frame) }
            end += frameSamples
            return f.payload.count <= 2 ? .silence : .speech
        case .accelerate(let first, let second):
            let next = UnsafeMutableBufferPointer(start: sync + end + frameSamples, count: frameSamples)
            guard decode(first.payload, into: frame), decode(second.payload, into: next) else { return conceal(into: frame) }
            end += TimeStretch.shorten(sync + end, count: 2 * frameSamples, pitchCut: !quietHint)
            return .speech
        case .fec(let next):
            guard (try? decoder.decodeFEC(from: next.payload, frameSize: frameSamples, into: frame)) == frameSamples else {
                return conceal(into: frame)
            }
            end += frameSamples
            return .speech
        case .conceal:
            return conceal(into: frame)
        case .expand:
            // Preemptive expansion during speech: repeat the last pitch period (nothing when the audio is not
            // periodic; the next pull then plays the due frame).
            end += TimeStretch.lengthen(sync, end: end)
            return .speech
        case .silence:
            // Only what completes the frame: the sync buffer empties in silence, taking back any delay a stretch
            // left waiting.
            let zeros = frameSamples - (end - start)
            (sync + end).update(repeating: 0, count: zeros)
            end += zeros
            return .silence
        }
    }

    private func decode(_ payload: UnsafeRawBufferPointer, into buffer: UnsafeMutableBufferPointer<Int16>) -> Bool {
        guard let n = try? decoder.decode(payload, into: buffer), n == frameSamples else {
            decodeErrors += 1
            return false
        }
        return true
    }

    private func conceal(into buffer: UnsafeMutableBufferPointer<Int16>) -> Outcome {
        end += frameSamples
        if (try? decoder.conceal(frameSize: frameSamples, into: buffer)) == frameSamples { return .concealed }
        buffer.update(repeating: 0)
        return .silence
    }
}

