import ParleyWire

/// What an SRTP context remembers per SSRC: the replay windows of its RTP packet indices (whose highest gives the
/// rollover counter) and of its SRTCP indices. A bounded table, reserved up front: finding or adding a stream never
/// allocates, and a stream is added only when its first packet authenticated (or, sending, was protected).
struct SRTPStreamTable {
    /// One stream's state.
    struct Stream {
        var ssrc: UInt32
        var rtp = SRTPReplayWindow()
        var rtcp = SRTPReplayWindow()
    }

    /// Streams that may be tracked at once.
    let capacity: Int
    private var streams: [Stream]

    /// An empty table for up to `capacity` streams.
    init(capacity: Int) {
        precondition(capacity > 0, "an SRTP context needs room for at least one stream")
        self.capacity = capacity
        streams = []
        streams.reserveCapacity(capacity)
    }

    /// Notes the streams' storage (`HotLines`).
    func noteLines(_ hot: HotLines) {
        streams.withUnsafeBufferPointer { b in
            guard let base = b.baseAddress else { return }
            hot.note(UnsafeRawPointer(base), bytes: b.count * MemoryLayout<Stream>.stride)
        }
    }

    /// Where a packet's stream is: an existing slot, or a new one to add once the packet is accepted.
    struct Slot {
        /// The stream's position, or nil for a stream not tracked yet.
        var position: Int?
    }

    /// The slot of `ssrc`; throws `tooManyStreams` for a new SSRC when the table is full.
    func slot(for ssrc: UInt32) throws(SRTPError) -> Slot {
        for i in streams.indices where streams[i].ssrc == ssrc { return Slot(position: i) }
        guard streams.count < capacity else { throw .tooManyStreams }
        return Slot(position: nil)
    }

    /// The estimated index of RTP packet `sequence` in `slot`, checked against the stream's window (nothing changes).
    func rtpIndex(sequence: UInt16, in slot: Slot) throws(SRTPError) -> UInt64 {
        guard let i = slot.position, !streams[i].rtp.isEmpty else { return UInt64(sequence) }
        let index = try SRTPPacketIndex.estimate(sequence: sequence, highest: streams[i].rtp.highest)
        try streams[i].rtp.check(index)
        return index
    }

    /// The index of RTP packet `sequence` in `slot` when that index was protected already and is still in the window;
    /// throws `tooOld` otherwise (never protected, before the stream, or out of the window). Nothing changes.
    func protectedRTPIndex(sequence: UInt16, in slot: Slot) throws(SRTPError) -> UInt64 {
        guard let i = slot.position, !streams[i].rtp.isEmpty else { throw .tooOld }
        let index = try SRTPPacketIndex.estimate(sequence: sequence, highest: streams[i].rtp.highest)
        do {
            try streams[i].rtp.check(index)
        } catch .replayed {
            return index
        }
        throw .tooOld
    }

    /// Checks SRTCP `index` against the window of `slot` (nothing changes).
    func checkRTCP(_ index: UInt64, in slot: Slot) throws(SRTPError) {
        guard let i = slot.position else { return }
        try streams[i].rtcp.check(index)
    }

    /// Records RTP `index` of `ssrc` as accepted, adding the stream when `slot` is new.
    mutating func acceptRTP(_ index: UInt64, ssrc: UInt32, in slot: Slot) {
        let i = position(of: ssrc, slot)
        streams[i].rtp.accept(index)
    }

    /// Records SRTCP `index` of `ssrc` as accepted, adding the stream when `slot` is new.
    mutating func acceptRTCP(_ index: UInt64, ssrc: UInt32, in slot: Slot) {
        let i = position(of: ssrc, slot)
        streams[i].rtcp.accept(index)
    }

    /// The highest RTP index accepted for `ssrc`, nil before its first RTP packet.
    func highestRTPIndex(of ssrc: UInt32) -> UInt64? {
        guard let stream = streams.first(where: { $0.ssrc == ssrc }), !stream.rtp.isEmpty else { return nil }
        return stream.rtp.highest
    }

    /// Streams tracked.
    var count: Int { streams.count }

    /// Every RTP stream's SSRC and highest index, in the order they were added.
    var rtpHighest: [(ssrc: UInt32, index: UInt64)] {
        streams.compactMap { $0.rtp.isEmpty ? nil : ($0.ssrc, $0.rtp.highest) }
    }

    /// Starts `ssrc`'s RTP window at `index` (as if that packet had been accepted) when the stream is unknown and
    /// there is room; returns whether it did.
    mutating func seedRTP(ssrc: UInt32, index: UInt64) -> Bool {
        guard !streams.contains(where: { $0.ssrc == ssrc }), streams.count < capacity else { return false }
        var stream = Stream(ssrc: ssrc)
        stream.rtp.accept(index)
        streams.append(stream)
        return true
    }

    /// Forgets `ssrc`'s stream, freeing its slot. Its indices may then be used again under the same key: the caller
    /// must make sure the SSRC never comes back (see `SRTPSender.retire`).
    mutating func remove(_ ssrc: UInt32) {
        if let i = streams.firstIndex(where: { $0.ssrc == ssrc }) { streams.remove(at: i) }
    }

    private mutating func position(of ssrc: UInt32, _ slot: Slot) -> Int {
        if let i = slot.position { return i }
        streams.append(Stream(ssrc: ssrc))  // within the reserved capacity: `slot(for:)` checked the count
        return streams.count - 1
    }
}
