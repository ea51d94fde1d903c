// What `--sender-stalls` and `--sender-drift` add to a client's media toward the relay: SenderModel's stalls and
// drift, made into a hold that only ever delays and stays bounded.
import SenderModel

/// How long to hold one client's RTP packets toward the relay, besides the network's delay: as if the client's
/// capture had stalled (every later packet late by the stalls so far) and its clock drifted against the time since
/// its first RTP packet.
///
/// A proxy cannot send a packet before it has it, so a negative drift starts from `negativeDriftStartMs` and
/// shrinks from there (at −0.5 % it runs out after 200 s, and the packets then pass without drift). The hold never
/// exceeds `capMs`: once the stalls and drift reach it, the client stops falling behind, so long runs stay bounded.
struct SenderLag {
    /// The longest hold, in ms.
    static let capMs = 2000.0
    /// Where a negative drift starts, in ms.
    static let negativeDriftStartMs = 1000.0

    private(set) var timing: SenderTiming
    private var firstMs: Double?
    /// The hold given to the latest packet, in ms.
    private(set) var lastMs = 0.0

    init(stalls: SenderStalls?, drift: Double, seed: UInt64) {
        timing = SenderTiming(stalls: stalls, drift: drift, seed: seed)
    }

    /// The hold for an RTP packet that reached the proxy at `nowMs`.
    mutating func hold(nowMs: Double) -> Double {
        let first = firstMs ?? nowMs
        firstMs = first
        let late = timing.lateness(nominalMs: nowMs - first) + (timing.drift < 0 ? Self.negativeDriftStartMs : 0)
        lastMs = min(max(late, 0), Self.capMs)
        return lastMs
    }
}
