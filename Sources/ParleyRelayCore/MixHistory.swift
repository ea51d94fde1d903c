// NACKs on the mix leg: what a room's mixer sent, kept long enough to send a listener's lost packet again.

/// A mix room's recent shared mixes as first written — the header with sequence number 0 and no marker, then the
/// payload — one slot per 20 ms frame. A listener's lost packet is rebuilt from its frame with that listener's own
/// sequence number and marker (`MixSendLog`): byte for byte the packet it was first sent, so an encrypted listener's
/// packet is protected again over the same bytes under the same index. Minus-one mixes (one listener each) are not
/// kept. Fixed storage, allocated at the first mix kept; one worker thread owns it.
final class MixHistory {
    /// Frames kept: 1.28 s of 20 ms frames, more than a listener's jitter buffer waits for a repair.
    static let slots = 64
    /// Largest packet kept (header and payload).
    static let slotBytes = 1_500
    private var storage: UnsafeMutableRawBufferPointer?
    private var frames = [UInt32](repeating: 0, count: slots)
    /// Bytes held per slot; 0 is empty.
    private var lengths = [Int](repeating: 0, count: slots)

    deinit { storage?.deallocate() }

    /// Keeps the shared mix of `frame` (its header with sequence number 0 and no marker).
    func store(frame: UInt32, packet: UnsafeRawBufferPointer) {
        guard packet.count <= Self.slotBytes, let base = packet.baseAddress else { return }
        let bytes: UnsafeMutableRawBufferPointer
        if let storage {
            bytes = storage
        } else {
            bytes = .allocate(byteCount: Self.slots * Self.slotBytes, alignment: 16)
            storage = bytes
        }
        let i = Int(frame % UInt32(Self.slots))
        (bytes.baseAddress! + i * Self.slotBytes).copyMemory(from: base, byteCount: packet.count)
        frames[i] = frame
        lengths[i] = packet.count
    }

    /// The shared mix of `frame`, if still kept (valid until the next `store`).
    func packet(frame: UInt32) -> UnsafeRawBufferPointer? {
        let i = Int(frame % UInt32(Self.slots))
        guard let storage, lengths[i] > 0, frames[i] == frame else { return nil }
        return UnsafeRawBufferPointer(start: storage.baseAddress! + i * Self.slotBytes, count: lengths[i])
    }
}

/// What one listener was sent of its room's mix, by sequence number (the last 64 packets): the frame and the marker
/// bit, and whether it was the shared mix (which `MixHistory` keeps; a minus-one mix is not kept).
struct MixSendLog {
    static let slots = 64
    private struct Entry {
        var sequence: UInt16
        var frame: UInt32
        /// Bit 0: in use; bit 1: marker; bit 2: the shared mix.
        var flags: UInt8
    }
    private var entries = [Entry](repeating: Entry(sequence: 0, frame: 0, flags: 0), count: slots)

    /// Notes the packet numbered `sequence` the listener was just sent.
    mutating func record(sequence: UInt16, frame: UInt32, marker: Bool, shared: Bool) {
        entries[Int(sequence) % Self.slots] = Entry(sequence: sequence, frame: frame,
                                                    flags: 1 | (marker ? 2 : 0) | (shared ? 4 : 0))
    }

    /// The frame and marker of the shared-mix packet numbered `sequence`, if it is among the last 64 sent.
    func shared(_ sequence: UInt16) -> (frame: UInt32, marker: Bool)? {
        let e = entries[Int(sequence) % Self.slots]
        guard e.flags & 5 == 5, e.sequence == sequence else { return nil }
        return (e.frame, e.flags & 2 != 0)
    }
}
