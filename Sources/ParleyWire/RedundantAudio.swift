// RTP payload for redundant audio data (RFC 2198), as Chrome's Opus RED (`red/48000/2`, fmtp `111/111`) sends it:
// block headers, then the blocks' data in the same order, the primary (newest) last.
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |F|   block PT  |  timestamp offset         |   block length    |  F=1: a redundant block (4 bytes)
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |0|   block PT  |                                                  F=0: the primary's header (1 byte), last
// +-+-+-+-+-+-+-+-+
// |  redundant block data … | primary data (the rest of the payload) |
//
// The timestamp offset (14 bits) is how far before the packet's RTP timestamp the block's audio starts; the length
// (10 bits) is the block's data in bytes. The primary's length is what is left.

/// RFC 2198 layout constants.
enum RedundantAudioLayout {
    /// Bytes of a redundant block's header.
    static let blockHeaderSize = 4
    /// Bytes of the primary's header.
    static let primaryHeaderSize = 1
    /// The F bit: another header follows.
    static let followBit: UInt8 = 0x80
    /// Largest timestamp offset (14 bits).
    static let maxTimestampOffset: UInt32 = (1 << 14) - 1
    /// Largest block length (10 bits).
    static let maxBlockLength = (1 << 10) - 1
}

/// One block of a redundant payload: its payload type, how far before the packet's timestamp its audio starts (0
/// for the primary), and where its data lies within the payload the view parsed.
public struct RedundantBlock: Equatable, Sendable {
    /// The block's payload type (7 bits).
    public var payloadType: UInt8
    /// RTP timestamp units before the packet's timestamp (0 for the primary).
    public var timestampOffset: UInt32
    /// The block's data, as offsets into the parsed payload.
    public var range: Range<Int>
}

/// A parsed RFC 2198 payload: the primary and up to `maxRedundantBlocks` redundant blocks, oldest first. Every
/// length is checked against the payload before anything is read; a payload that breaks a rule throws.
///
/// Rules beyond RFC 2198's syntax, because a redundant copy is only of use as a recent frame of the same stream:
/// at most `maxRedundantBlocks` redundant blocks (`badField`); every redundant block holds data (`badLength`) and
/// the primary too; timestamp offsets are above 0 and fall from the oldest block to the newest (`badField`).
public struct RedundantAudio: Sendable {
    /// The payload type Parley's native flows carry RED with (Chrome's choice for `red/48000/2`).
    public static let defaultPayloadType: UInt8 = 63
    /// Redundant blocks a payload may carry (Chrome sends at most 2; more is refused).
    public static let maxRedundantBlocks = 3

    /// The newest frame (the packet's own timestamp).
    public let primary: RedundantBlock
    /// How many redundant blocks there are (0 … `maxRedundantBlocks`).
    public let redundantCount: Int
    /// The redundant blocks in fixed storage (parsing allocates nothing): the first `redundantCount` are used.
    private var blocks: (RedundantBlock, RedundantBlock, RedundantBlock)

    /// Redundant block `i`, 0 the oldest, below `redundantCount`.
    public func redundant(_ i: Int) -> RedundantBlock {
        precondition(i >= 0 && i < redundantCount, "redundant block index out of range")
        switch i {
        case 0: return blocks.0
        case 1: return blocks.1
        default: return blocks.2
        }
    }

    /// Parses `payload` (an RTP packet's payload, after any padding is removed).
    public init(parsing payload: UnsafeRawBufferPointer) throws(WireError) {
        var headers = 0
        var offset = 0
        let unused = RedundantBlock(payloadType: 0, timestampOffset: 0, range: 0..<0)
        var parsed = (unused, unused, unused)
        var dataStart = 0
        // First pass: the headers, and the sum of the redundant lengths they claim.
        var claimed = 0
        var lastOffset = UInt32.max
        while true {
            guard offset < payload.count else { throw .truncated }
            let first = payload[offset]
            guard first & RedundantAudioLayout.followBit != 0 else {
                offset += RedundantAudioLayout.primaryHeaderSize
                dataStart = offset
                break
            }
            guard headers < Self.maxRedundantBlocks else { throw .badField }
            guard offset + RedundantAudioLayout.blockHeaderSize <= payload.count else { throw .truncated }
            let word = payload.getUInt32(at: offset)
            let timestampOffset = (word >> 10) & RedundantAudioLayout.maxTimestampOffset
            let length = Int(word & UInt32(RedundantAudioLayout.maxBlockLength))
            guard length > 0 else { throw .badLength }
            guard timestampOffset > 0, timestampOffset < lastOffset else { throw .badField }
            lastOffset = timestampOffset
            let block = RedundantBlock(
                payloadType: first & 0x7F, timestampOffset: timestampOffset, range: claimed..<(claimed + length))
            switch headers {
            case 0: parsed.0 = block
            case 1: parsed.1 = block
            default: parsed.2 = block
            }
            claimed += length
            headers += 1
            offset += RedundantAudioLayout.blockHeaderSize
        }
        guard dataStart + claimed < payload.count else { throw .badLength }  // the primary holds at least a byte
        parsed.0.range = parsed.0.range.shifted(by: dataStart)
        parsed.1.range = parsed.1.range.shifted(by: dataStart)
        parsed.2.range = parsed.2.range.shifted(by: dataStart)
        primary = RedundantBlock(
            payloadType: payload[dataStart - 1] & 0x7F, timestampOffset: 0,
            range: (dataStart + claimed)..<payload.count)
        redundantCount = headers
        blocks = parsed
    }

    /// Bytes of a payload with redundant blocks of `redundantBytes` in total (`count` of them) and a primary of
    /// `primaryBytes`.
    public static func serializedSize(redundantBlocks count: Int, redundantBytes: Int, primaryBytes: Int) -> Int {
        count * RedundantAudioLayout.blockHeaderSize + RedundantAudioLayout.primaryHeaderSize + redundantBytes
            + primaryBytes
    }
}

/// Writes an RFC 2198 payload into a caller-owned buffer without allocating: the redundant blocks, oldest first,
/// then the primary. The number of redundant blocks is fixed up front (their headers come before any data).
///
///     var w = try RedundantAudioWriter(into: out, redundantBlocks: 1)
///     try w.appendRedundant(payloadType: 111, timestampOffset: 960, data: previous)
///     let n = try w.finish(primaryPayloadType: 111, data: current)
public struct RedundantAudioWriter {
    private let out: UnsafeMutableRawBufferPointer
    private let expected: Int
    private var written = 0
    private var dataEnd: Int
    private var lastOffset = UInt32.max

    /// A writer for `redundantBlocks` redundant blocks (at most `RedundantAudio.maxRedundantBlocks`) into `out`.
    public init(into out: UnsafeMutableRawBufferPointer, redundantBlocks: Int) throws(WireError) {
        guard redundantBlocks >= 0, redundantBlocks <= RedundantAudio.maxRedundantBlocks else { throw .badField }
        let headers = redundantBlocks * RedundantAudioLayout.blockHeaderSize + RedundantAudioLayout.primaryHeaderSize
        guard headers <= out.count else { throw .bufferTooSmall }
        self.out = out
        expected = redundantBlocks
        dataEnd = headers
    }

    /// Appends the next redundant block (older blocks first): `timestampOffset` in 1 … 16383 and below the previous
    /// block's, `data` 1 … 1023 bytes.
    public mutating func appendRedundant(payloadType: UInt8, timestampOffset: UInt32, data: UnsafeRawBufferPointer)
        throws(WireError)
    {
        guard written < expected, payloadType < 128, timestampOffset > 0,
            timestampOffset <= RedundantAudioLayout.maxTimestampOffset,
            timestampOffset < lastOffset, !data.isEmpty, data.count <= RedundantAudioLayout.maxBlockLength
        else { throw .badField }
        guard dataEnd + data.count <= out.count else { throw .bufferTooSmall }
        let word =
            UInt32(RedundantAudioLayout.followBit | payloadType) << 24 | timestampOffset << 10 | UInt32(data.count)
        out.setUInt32(word, at: written * RedundantAudioLayout.blockHeaderSize)
        UnsafeMutableRawBufferPointer(rebasing: out[dataEnd..<(dataEnd + data.count)]).copyMemory(from: data)
        dataEnd += data.count
        lastOffset = timestampOffset
        written += 1
    }

    /// Writes the primary's header and data; returns the payload's length. Throws unless every redundant block
    /// announced was appended and `data` is not empty.
    public mutating func finish(primaryPayloadType: UInt8, data: UnsafeRawBufferPointer) throws(WireError) -> Int {
        guard written == expected, primaryPayloadType < 128, !data.isEmpty else { throw .badField }
        guard dataEnd + data.count <= out.count else { throw .bufferTooSmall }
        out[written * RedundantAudioLayout.blockHeaderSize] = primaryPayloadType
        UnsafeMutableRawBufferPointer(rebasing: out[dataEnd..<(dataEnd + data.count)]).copyMemory(from: data)
        return dataEnd + data.count
    }
}

extension Range<Int> {
    /// The range moved `delta` places up.
    fileprivate func shifted(by delta: Int) -> Range<Int> { (lowerBound + delta)..<(upperBound + delta) }
}

extension RedundantAudio {
    /// The RTP sequence number of redundant block `i` in a packet numbered `sequenceNumber`: Parley's senders (and
    /// Chrome's) put the frames of the packets just before in the blocks, so block `i` of `redundantCount` is
    /// `redundantCount − i` packets back.
    public func sequenceNumber(ofRedundant i: Int, primary sequenceNumber: UInt16) -> UInt16 {
        sequenceNumber &- UInt16(truncatingIfNeeded: redundantCount - i)
    }

    /// Writes `packet` (whose payload is `self`) as a plain packet of its primary into `out`: the same header with the
    /// primary's payload type and no padding, then the primary's data. Returns the length, or 0 when `out` is too
    /// small. For listeners that did not negotiate RED (plain RTP, WebRTC without `red`, recordings, old clients).
    public func writePrimaryPacket(of packet: RTPPacketView, into out: UnsafeMutableRawBufferPointer) -> Int {
        let header = packet.payloadOffset
        let length = header + primary.range.count
        guard length <= out.count else { return 0 }
        UnsafeMutableRawBufferPointer(rebasing: out[0..<header]).copyMemory(
            from: UnsafeRawBufferPointer(rebasing: packet.bytes[0..<header]))
        out[0] &= ~0x20  // no padding
        out[1] = (out[1] & 0x80) | primary.payloadType
        let payload = packet.payload
        UnsafeMutableRawBufferPointer(rebasing: out[header..<length])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: payload[primary.range]))
        return length
    }
}
