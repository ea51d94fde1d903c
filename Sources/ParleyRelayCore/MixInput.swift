import ParleyMedia
import ParleyWire

/// One publisher's input to a room's mix: its receive stream, its last frame, and — while it speaks — the encoder
/// and limiter of its minus-one mix (what it hears: everyone but itself).
final class MixInput {
    let stream: AudioReceiveStream
    let pcm: UnsafeMutablePointer<Int16>
    var contributing = false
    var minusOneEncoder: OpusEncoder?
    var minusOneLimiter = MixLimiter()

    init(stream: AudioReceiveStream, frameSamples: Int) {
        self.stream = stream
        pcm = .allocate(capacity: frameSamples)
        pcm.initialize(repeating: 0, count: frameSamples)
    }

    deinit { pcm.deallocate() }
}
