import BenchmarkSupport
import COpus

/// The C-equivalent floor of one mix room: per 20 ms, `opus_decode` of each speaker's packet and `opus_encode`
/// of the shared mix and of each speaker's minus-one, at the relay's encoder settings, on the same packets —
/// straight libopus calls, no jitter buffer, speaker detection, limiter, RTP or signalling. What any relay
/// written in C must spend at least; the core's cost is read as a multiple of it, measured in the same run.
///
/// With pauses in the talk pattern, it decodes only packets carrying audio (more than 2 bytes) and encodes what
/// the relay's rule asks for those: a shared mix when anyone speaks, minus-ones when two or more do.
final class FloorRoom {
    private let decoders: [OpaquePointer]
    private let sharedEncoder: OpaquePointer
    private let minusOneEncoders: [OpaquePointer]
    private let rings: [SpeakerRing]
    private let offset: Int
    private let hasListeners: Bool
    private let pcm: UnsafeMutablePointer<Int16>  // speakers × 960
    private let sum = UnsafeMutablePointer<Int32>.allocate(capacity: SpeakerRing.frameSamples)
    private let mix = UnsafeMutablePointer<Int16>.allocate(capacity: SpeakerRing.frameSamples)
    private let packet = UnsafeMutablePointer<UInt8>.allocate(capacity: 1500)
    private var active: [Bool]
    /// libopus calls made.
    private(set) var decodes = 0, encodes = 0

    /// A floor room over `rings` (one per speaker), starting `offset` frames in, as its relay room does.
    /// `minusOnes` false: a hybrid room (its speakers hear each other forwarded; no minus-one encodes).
    init(rings: [SpeakerRing], offset: Int, hasListeners: Bool, minusOnes: Bool, complexity: Int32, bitrate: Int32, expectedLossPercent: Int32) {
        func encoder() -> OpaquePointer {
            var error: Int32 = 0
            guard let e = opus_encoder_create(48_000, 1, OPUS_APPLICATION_VOIP, &error), error == OPUS_OK else { fail("opus_encoder_create: \(error)") }
            precondition(parley_opus_set_complexity(e, complexity) == OPUS_OK)
            precondition(parley_opus_set_bitrate(e, bitrate) == OPUS_OK)
            precondition(parley_opus_set_inband_fec(e, 1) == OPUS_OK)
            precondition(parley_opus_set_packet_loss_perc(e, expectedLossPercent) == OPUS_OK)  // as the relay's mixes
            return e
        }
        decoders = rings.map { _ in
            var error: Int32 = 0
            guard let d = opus_decoder_create(48_000, 1, &error), error == OPUS_OK else { fail("opus_decoder_create: \(error)") }
            return d
        }
        sharedEncoder = encoder()
        minusOneEncoders = minusOnes ? rings.map { _ in encoder() } : []
        self.rings = rings
        self.offset = offset
        self.hasListeners = hasListeners
        pcm = .allocate(capacity: rings.count * SpeakerRing.frameSamples)
        active = Array(repeating: false, count: rings.count)
    }

    deinit {
        for d in decoders { opus_decoder_destroy(d) }
        opus_encoder_destroy(sharedEncoder)
        for e in minusOneEncoders { opus_encoder_destroy(e) }
        pcm.deallocate(); sum.deallocate(); mix.deallocate(); packet.deallocate()
    }

    /// One 20 ms frame: decode, sum, encode the shared mix and the minus-ones.
    func run(frame f: Int) {
        let n = SpeakerRing.frameSamples
        var speaking = 0
        sum.update(repeating: 0, count: n)
        for k in rings.indices {
            let own = pcm + k * n
            active[k] = rings[k].withPayload(offset + f) { payload in
                guard payload.count > 2 else { return false }
                let got = opus_decode(decoders[k], payload.baseAddress!.assumingMemoryBound(to: UInt8.self), Int32(payload.count), own, Int32(n), 0)
                precondition(got == Int32(n), "opus_decode: \(got)")
                return true
            }
            guard active[k] else { continue }
            decodes += 1
            speaking += 1
            for i in 0..<n { sum[i] &+= Int32(own[i]) }
        }
        guard speaking > 0 else { return }
        if hasListeners {
            for i in 0..<n { mix[i] = Int16(clamping: sum[i]) }
            encode(sharedEncoder)
        }
        guard speaking > 1, !minusOneEncoders.isEmpty else { return }
        for k in rings.indices where active[k] {
            let own = pcm + k * n
            for i in 0..<n { mix[i] = Int16(clamping: sum[i] &- Int32(own[i])) }
            encode(minusOneEncoders[k])
        }
    }

    private func encode(_ encoder: OpaquePointer) {
        let written = opus_encode(encoder, mix, Int32(SpeakerRing.frameSamples), packet, 1500)
        precondition(written > 0, "opus_encode: \(written)")
        encodes += 1
    }
}

/// The floor for every room of the scenario.
final class Floor {
    let rooms: [FloorRoom]
    private var frame = 0

    init(shape: Shape, rings: [SpeakerRing], complexity: Int, bitrate: Int, expectedLossPercent: Int) {
        rooms = (0..<shape.rooms).map { r in
            FloorRoom(rings: Array(rings.prefix(shape.speakersPerRoom)), offset: r * 37,
                      hasListeners: shape.membersPerRoom > shape.speakersPerRoom, minusOnes: !shape.hybrid, complexity: Int32(complexity), bitrate: Int32(bitrate),
                      expectedLossPercent: Int32(expectedLossPercent))
        }
    }

    /// Runs `count` frames of every room; returns their thread CPU time and allocations.
    func run(frames count: Int) -> CallCost {
        var cost = CallCost()
        measure(&cost, if: true) {
            for _ in 0..<count {
                for room in rooms { room.run(frame: frame) }
                frame += 1
            }
        }
        return cost
    }

    /// libopus calls made in all.
    var decodes: Int { rooms.reduce(0) { $0 + $1.decodes } }
    var encodes: Int { rooms.reduce(0) { $0 + $1.encodes } }
}
