/// Writes a generic NACK (RFC 4585 §6.2.1, layout in `RTCPGenericNACK.swift`) straight into a caller-owned buffer,
/// one lost sequence number at a time, without allocating: the sender side's counterpart of `GenericNACKView`.
///
/// Sequence numbers must come in ascending order around the 16-bit circle (each after the one before, by less than
/// 2¹⁵); a number within 16 of the current entry's PID sets a BLP bit, any other starts a new entry. A duplicate
/// (the same number twice in a row) is ignored.
///
///     var writer = GenericNACKWriter(into: space, senderSSRC: relay, mediaSSRC: speaker)
///     writer.append(65_535); writer.append(0); writer.append(2)   // one entry: PID 65535, BLP 0b101
///     let length = writer.finish()                               // 16, or 0 if nothing was appended
public struct GenericNACKWriter {
    private let buffer: UnsafeMutableRawBufferPointer
    private var offset: Int
    private var pid: UInt16 = 0
    /// Entries written so far (the open one included).
    public private(set) var entryCount = 0

    /// Bytes of a NACK with `entries` (PID, BLP) entries.
    public static func size(entries: Int) -> Int {
        RTCPLayout.headerSize + GenericNACKLayout.ssrcsSize + entries * GenericNACKLayout.entrySize
    }

    /// A writer for a NACK from `senderSSRC` about `mediaSSRC` into `buffer`, which holds at least the header and
    /// SSRCs (`size(entries: 0)`); entries that do not fit are not written (`isFull`).
    public init(into buffer: UnsafeMutableRawBufferPointer, senderSSRC: UInt32, mediaSSRC: UInt32) {
        precondition(buffer.count >= Self.size(entries: 0))
        self.buffer = buffer
        offset = Self.size(entries: 0)
        buffer.setUInt32(senderSSRC, at: RTCPLayout.headerSize)
        buffer.setUInt32(mediaSSRC, at: RTCPLayout.headerSize + 4)
    }

    /// True when a new entry would not fit in the buffer.
    public var isFull: Bool { offset + GenericNACKLayout.entrySize > buffer.count }

    /// Adds one lost sequence number; false (nothing written) when it needs a new entry and the buffer is full.
    @discardableResult
    public mutating func append(_ sequence: UInt16) -> Bool {
        if entryCount > 0 {
            let step = sequence &- pid
            if step == 0 { return true }
            if step <= GenericNACKLayout.bitmaskWidth {
                let at = offset - GenericNACKLayout.entrySize + 2
                buffer.setUInt16(UnsafeRawBufferPointer(buffer).getUInt16(at: at) | 1 << (step - 1), at: at)
                return true
            }
        }
        guard !isFull else { return false }
        pid = sequence
        buffer.setUInt16(sequence, at: offset)
        buffer.setUInt16(0, at: offset + 2)
        offset += GenericNACKLayout.entrySize
        entryCount += 1
        return true
    }

    /// Writes the RTCP header and returns the NACK's length, or 0 when no sequence number was appended (a NACK
    /// must name at least one).
    public func finish() -> Int {
        guard entryCount > 0 else { return 0 }
        RTCPLayout.writeHeader(into: buffer, count: Int(GenericNACKLayout.format), packetType: RTCPLayout.transportFeedback,
                               size: offset)
        return offset
    }
}
