import ParleyWire

/// The RTP packets this client sent in the last ~1.3 s, exactly as they went on the wire (SRTP-protected when the
/// session is encrypted), to answer the relay's NACKs about our own stream (uplink repair): a retransmission is the
/// identical datagram, which the relay's SRTP replay window takes because it never received the original, and no
/// SRTP index is ever protected twice. A ring of fixed slots indexed by sequence number, allocated once.
///
/// Bounded: at most 64 packets per NACK, and `resendsPerSecond` over time (a token bucket holding `burst`), so a
/// stream of NACKs costs at most about one stream's worth of extra upload.
public final class SentPacketHistory {
    /// Packets remembered (64 × 20 ms = 1.28 s).
    public static let slots = 64
    /// Largest packet kept.
    public static let slotSize = 1500
    /// Packets resent per NACK at most (RFC 4585 lets one NACK name any number).
    public static let maxPerNACK = 64
    /// Packets resent per second at most, and at once.
    public static let resendsPerSecond = 50.0, burst = 64.0

    private let storage = UnsafeMutableRawPointer.allocate(byteCount: slots * slotSize, alignment: 16)
    private let lengths = UnsafeMutablePointer<Int32>.allocate(capacity: slots)
    private let sequences = UnsafeMutablePointer<UInt16>.allocate(capacity: slots)
    private var tokens = SentPacketHistory.burst
    private var lastRefill = Instant.distantPast
    /// Packets resent in answer to NACKs, and NACKed numbers not resent (no longer held, or over a bound).
    public private(set) var resent = 0, notResent = 0

    /// An empty history.
    public init() {
        lengths.initialize(repeating: -1, count: Self.slots)
        sequences.initialize(repeating: 0, count: Self.slots)
    }

    deinit {
        storage.deallocate()
        lengths.deallocate()
        sequences.deallocate()
    }

    /// Remembers the datagram that carried RTP packet `sequence` (a larger one than a slot is not kept).
    public func store(sequence: UInt16, _ datagram: UnsafeRawBufferPointer) {
        let i = Int(sequence) % Self.slots
        guard datagram.count <= Self.slotSize, let base = datagram.baseAddress else { lengths[i] = -1; return }
        (storage + i * Self.slotSize).copyMemory(from: base, byteCount: datagram.count)
        lengths[i] = Int32(datagram.count)
        sequences[i] = sequence
    }

    /// Forgets everything (a new session: new keys, a new SSRC).
    public func clear() { lengths.update(repeating: -1, count: Self.slots) }

    /// Hands `send` the stored datagram of each sequence number `nack` names, within the bounds.
    public func answer(_ nack: GenericNACKView, now: Instant, send: (UnsafeRawBufferPointer) -> Void) {
        tokens = min(Self.burst, tokens + max(0, (now - lastRefill).seconds) * Self.resendsPerSecond)
        lastRefill = now
        var left = Self.maxPerNACK
        nack.forEachLostSequence { sequence in
            let i = Int(sequence) % Self.slots
            guard left > 0, tokens >= 1, lengths[i] >= 0, sequences[i] == sequence else {
                notResent += 1
                return
            }
            left -= 1
            tokens -= 1
            resent += 1
            send(UnsafeRawBufferPointer(start: storage + i * Self.slotSize, count: Int(lengths[i])))
        }
    }
}
