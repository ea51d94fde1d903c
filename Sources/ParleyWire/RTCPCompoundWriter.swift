// Writes a compound RTCP packet (RFC 3550 §6.1) into a caller-owned buffer, packet by packet, without allocating:
//
// +------------+------------+------------+-----------------+-------+
// | SR or RR   | (more SRs) | SDES CNAME | NACK / other FB | BYE   |
// | + blocks   |            | chunks     |                 |       |
// +------------+------------+------------+-----------------+-------+
//   reports      reports      description  feedback          goodbye
//
// Report blocks are appended to the SR or RR just written (its count and length are patched), CNAME chunks to the
// SDES just written, SSRCs to the BYE just written; anything else starts a new packet. The writer refuses an order
// §6.1 forbids: the first packet is an SR or RR, and reports, SDES, feedback and BYE come in that order.

/// Builds one compound RTCP packet in `buffer`; `length` bytes are written so far.
///
/// ```
/// var w = RTCPCompoundWriter(into: buffer)
/// try w.senderReport(ssrc: mix, ntpTimestamp: ntp, rtpTimestamp: rtp, packetCount: 50, octetCount: 4_000)
/// try w.reportBlock(block)
/// try w.cname(ssrc: mix, "relay@example")
/// let n = w.length
/// ```
public struct RTCPCompoundWriter {
    /// Where a packet belongs in a compound (RFC 3550 §6.1 order).
    enum Stage: Int, Comparable {
        case reports, description, feedback, goodbye
        static func < (a: Stage, b: Stage) -> Bool { a.rawValue < b.rawValue }
    }

    private let buffer: UnsafeMutableRawBufferPointer
    /// Bytes written.
    public private(set) var length = 0
    /// Offset and type of the last packet written (the one blocks, chunks or SSRCs are appended to).
    private var last: (offset: Int, type: UInt8)?
    private var stage = Stage.reports

    /// A writer into `buffer` (nothing written yet).
    public init(into buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    /// The bytes written so far.
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: buffer[0..<length]) }

    /// Appends a sender report with no blocks (add them with `reportBlock`). Throws `badField` after SDES, feedback or
    /// BYE, `bufferTooSmall`.
    public mutating func senderReport(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32,
                                      octetCount: UInt32) throws(WireError) {
        let space = try begin(.reports, size: RTCPLayout.headerSize + SenderReport.senderInfoSize, type: RTCPLayout.senderReport)
        space.setUInt32(ssrc, at: 0)
        space.setUInt64(ntpTimestamp, at: 4)
        space.setUInt32(rtpTimestamp, at: 12)
        space.setUInt32(packetCount, at: 16)
        space.setUInt32(octetCount, at: 20)
    }

    /// Appends a receiver report from `ssrc` with no blocks (add them with `reportBlock`). Throws like `senderReport`.
    public mutating func receiverReport(ssrc: UInt32) throws(WireError) {
        let space = try begin(.reports, size: RTCPLayout.headerSize + ReceiverReport.reporterSize, type: RTCPLayout.receiverReport)
        space.setUInt32(ssrc, at: 0)
    }

    /// Appends a report block to the SR or RR just written. Throws `badField` unless the last packet is an SR or RR
    /// with fewer than 31 blocks, `bufferTooSmall`.
    public mutating func reportBlock(_ block: ReportBlock) throws(WireError) {
        guard let last, last.type == RTCPLayout.senderReport || last.type == RTCPLayout.receiverReport else { throw .badField }
        try grow(last, by: ReportBlock.size) { buffer, offset in block.write(into: buffer, at: offset) }
    }

    /// Appends a chunk with one CNAME item (`name`'s UTF-8, at most 255 bytes) for `ssrc`: to the SDES just written,
    /// or a new SDES. Throws `badField` before any report or after feedback or BYE, for an over-long name, or for a
    /// 32nd chunk; `bufferTooSmall`.
    public mutating func cname(ssrc: UInt32, _ name: String) throws(WireError) {
        let text = name.utf8
        guard text.count <= SDESLayout.maxItemLength else { throw .badField }
        let size = SDESLayout.chunkSize(itemText: text.count)
        if last?.type != RTCPLayout.sourceDescription {
            _ = try begin(.description, size: RTCPLayout.headerSize, type: RTCPLayout.sourceDescription)
        }
        try grow(last!, by: size) { buffer, offset in
            buffer.setUInt32(ssrc, at: offset)
            buffer[offset + 4] = SDESLayout.cname
            buffer[offset + 5] = UInt8(text.count)
            var i = offset + 6
            for byte in text {
                buffer[i] = byte
                i += 1
            }
            buffer.setZeros(at: i, count: offset + size - i)
        }
    }

    /// Appends a generic NACK (RFC 4585). Throws `badField` before any report or after a BYE, or as
    /// `GenericNACK.serialize` does; `bufferTooSmall`.
    public mutating func nack(_ nack: GenericNACK) throws(WireError) {
        try check(.feedback)
        let n = try nack.serialize(into: UnsafeMutableRawBufferPointer(rebasing: buffer[length...]))
        record(.feedback, type: RTCPLayout.transportFeedback, size: n)
    }

    /// Appends `ssrc` to the BYE just written, or a new BYE (without a reason). Throws `badField` before any report or
    /// for a 32nd source, `bufferTooSmall`.
    public mutating func goodbye(ssrc: UInt32) throws(WireError) {
        if let last, last.type == RTCPLayout.goodbye {
            try grow(last, by: Goodbye.ssrcSize) { buffer, offset in buffer.setUInt32(ssrc, at: offset) }
        } else {
            let space = try begin(.goodbye, size: RTCPLayout.headerSize + Goodbye.ssrcSize, type: RTCPLayout.goodbye, count: 1)
            space.setUInt32(ssrc, at: 0)
        }
    }

    /// Checks that a packet of `stage` may come next.
    private func check(_ next: Stage) throws(WireError) {
        guard next >= stage, next == .reports || length > 0 else { throw .badField }
    }

    /// Writes the header of a new packet of `size` bytes and returns the space after the header.
    private mutating func begin(_ next: Stage, size: Int, type: UInt8, count: Int = 0) throws(WireError) -> UnsafeMutableRawBufferPointer {
        try check(next)
        guard buffer.count - length >= size else { throw .bufferTooSmall }
        let packet = UnsafeMutableRawBufferPointer(rebasing: buffer[length..<(length + size)])
        RTCPLayout.writeHeader(into: packet, count: count, packetType: type, size: size)
        record(next, type: type, size: size)
        return UnsafeMutableRawBufferPointer(rebasing: packet[RTCPLayout.headerSize...])
    }

    private mutating func record(_ next: Stage, type: UInt8, size: Int) {
        last = (length, type)
        stage = next
        length += size
    }

    /// Adds one item (`size` bytes, written by `write` at the offset given) to the packet at `packet.offset`, which is
    /// the last one: its count goes up by one and its length by `size`.
    private mutating func grow(_ packet: (offset: Int, type: UInt8), by size: Int,
                               _ write: (UnsafeMutableRawBufferPointer, Int) -> Void) throws(WireError) {
        let count = Int(buffer[packet.offset] & RTCPLayout.countMask)
        guard count < RTCPLayout.maxCount else { throw .badField }
        guard buffer.count - length >= size else { throw .bufferTooSmall }
        write(buffer, length)
        length += size
        buffer[packet.offset] = buffer[packet.offset] & ~RTCPLayout.countMask | UInt8(count + 1)
        buffer.setUInt16(UInt16((length - packet.offset) / 4 - 1), at: packet.offset + 2)
    }
}
