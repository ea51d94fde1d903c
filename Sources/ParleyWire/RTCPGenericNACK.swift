// Generic NACK, transport-layer feedback PT=205 FMT=1 (RFC 4585 §6.1, §6.2.1):
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P| FMT=1   |   PT=205      |          length               |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                  SSRC of packet sender                        |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                  SSRC of media source                         |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |            PID                |             BLP               |  (one or more)
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// PID is a lost sequence number; bit i (LSB = 0) of BLP set means PID + i + 1 was lost too.

/// Constants of the generic NACK.
enum GenericNACKLayout {
    /// Feedback message type of the generic NACK within RTPFB.
    static let format: UInt8 = 1
    /// Body bytes before the FCI entries: sender and media SSRC.
    static let ssrcsSize = 8
    /// Size of one (PID, BLP) entry.
    static let entrySize = 4
    /// Number of following sequence numbers a BLP covers.
    static let bitmaskWidth: UInt16 = 16
}

/// A zero-copy view of a generic NACK, for the forwarding path.
///
/// Valid only while the buffer behind its `RTCPPacketView` lives.
public struct GenericNACKView {
    private let bytes: UnsafeRawBufferPointer
    private let entriesOffset: Int
    /// Number of (PID, BLP) entries.
    public let entryCount: Int
    /// SSRC of the packet sender (the receiver asking for retransmission).
    public let senderSSRC: UInt32
    /// SSRC of the media source whose packets were lost.
    public let mediaSSRC: UInt32

    /// Reads a generic NACK; `unknownType` unless PT is 205 and FMT is 1, `badLength` unless the body is the two
    /// SSRCs followed by at least one whole 4-byte entry.
    public init(parsing packet: RTCPPacketView) throws(WireError) {
        guard packet.packetType == RTCPLayout.transportFeedback, packet.countOrFormat == GenericNACKLayout.format
        else { throw .unknownType }
        let entriesBytes = packet.bodyCount - GenericNACKLayout.ssrcsSize
        guard entriesBytes >= GenericNACKLayout.entrySize, entriesBytes % GenericNACKLayout.entrySize == 0
        else { throw .badLength }
        self.bytes = packet.bytes
        self.senderSSRC = packet.bytes.getUInt32(at: packet.bodyOffset)
        self.mediaSSRC = packet.bytes.getUInt32(at: packet.bodyOffset + 4)
        self.entriesOffset = packet.bodyOffset + GenericNACKLayout.ssrcsSize
        self.entryCount = entriesBytes / GenericNACKLayout.entrySize
    }

    /// Calls `body` with every lost sequence number, entry by entry: the PID, then PID + i + 1 for each set bit i
    /// of the BLP, with wrapping arithmetic (65535 + 1 is 0). Allocation-free; duplicates across entries are repeated.
    public func forEachLostSequence(_ body: (UInt16) -> Void) {
        for entry in 0..<entryCount {
            let offset = entriesOffset + entry * GenericNACKLayout.entrySize
            let pid = bytes.getUInt16(at: offset)
            let blp = bytes.getUInt16(at: offset + 2)
            body(pid)
            for bit in 0..<GenericNACKLayout.bitmaskWidth where blp & (1 << bit) != 0 {
                body(pid &+ bit &+ 1)
            }
        }
    }
}

/// A generic NACK as a value, for clients and tests: which sequence numbers of `mediaSSRC` to resend.
public struct GenericNACK: Equatable, Sendable {
    /// SSRC of the packet sender.
    public var senderSSRC: UInt32
    /// SSRC of the media source.
    public var mediaSSRC: UInt32
    /// Lost sequence numbers. Serialization sorts them (wraparound-aware) and drops duplicates.
    public var lost: [UInt16]

    /// A NACK with the given fields.
    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lost: [UInt16]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.lost = lost
    }

    /// Reads a generic NACK, expanding its entries in wire order (see `GenericNACKView`).
    public init(parsing packet: RTCPPacketView) throws(WireError) {
        let view = try GenericNACKView(parsing: packet)
        var lost: [UInt16] = []
        view.forEachLostSequence { lost.append($0) }
        self.init(senderSSRC: view.senderSSRC, mediaSSRC: view.mediaSSRC, lost: lost)
    }

    /// `lost` without duplicates, in wraparound-aware order: ascending, starting just after the largest gap
    /// around the 16-bit circle, so `[0, 1, 65535]` orders as `[65535, 0, 1]`.
    static func wraparoundSorted(_ lost: [UInt16]) -> [UInt16] {
        let sorted = Array(Set(lost)).sorted()
        guard sorted.count > 1 else { return sorted }
        // Gap before index i is sorted[i] - sorted[i-1]; before index 0 it wraps from the last element.
        var start = 0
        var largestGap = sorted[0] &- sorted[sorted.count - 1]
        for i in 1..<sorted.count where sorted[i] - sorted[i - 1] > largestGap {
            largestGap = sorted[i] - sorted[i - 1]
            start = i
        }
        return Array(sorted[start...] + sorted[..<start])
    }

    /// The minimal (PID, BLP) entries covering `lost`.
    func entries() -> [(pid: UInt16, blp: UInt16)] {
        var result: [(pid: UInt16, blp: UInt16)] = []
        for sequence in Self.wraparoundSorted(lost) {
            if let last = result.last {
                let step = sequence &- last.pid
                if step >= 1, step <= GenericNACKLayout.bitmaskWidth {
                    result[result.count - 1].blp |= 1 << (step - 1)
                    continue
                }
            }
            result.append((sequence, 0))
        }
        return result
    }

    /// Bytes `serialize(into:)` writes, header included.
    public var serializedSize: Int {
        RTCPLayout.headerSize + GenericNACKLayout.ssrcsSize + entries().count * GenericNACKLayout.entrySize
    }

    /// Writes the NACK packed into minimal (PID, BLP) entries and returns its size; `badField` if `lost` is empty
    /// (or needs more entries than a length field can count), `bufferTooSmall`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        let entries = entries()
        guard !entries.isEmpty else { throw .badField }
        let size = RTCPLayout.headerSize + GenericNACKLayout.ssrcsSize + entries.count * GenericNACKLayout.entrySize
        guard buffer.count >= size else { throw .bufferTooSmall }
        RTCPLayout.writeHeader(
            into: buffer, count: Int(GenericNACKLayout.format), packetType: RTCPLayout.transportFeedback, size: size)
        buffer.setUInt32(senderSSRC, at: RTCPLayout.headerSize)
        buffer.setUInt32(mediaSSRC, at: RTCPLayout.headerSize + 4)
        var offset = RTCPLayout.headerSize + GenericNACKLayout.ssrcsSize
        for entry in entries {
            buffer.setUInt16(entry.pid, at: offset)
            buffer.setUInt16(entry.blp, at: offset + 2)
            offset += GenericNACKLayout.entrySize
        }
        return size
    }
}
