// Source description, RTCP packet type 202 (RFC 3550 §6.5):
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|    SC   |  PT=SDES=202  |             length            |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |                          SSRC/CSRC_1                          |  chunk 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |    type (1=CNAME)   |   length   |  text (length bytes) ...     |  items ...
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |  0 (end of list) | 0 ... padding to the next 32-bit boundary   |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |                          SSRC/CSRC_2 ...                      |  chunk 2
//
// Each chunk's item list ends with at least one null octet and the chunk is padded with nulls to a word boundary.

/// Constants of the SDES packet.
enum SDESLayout {
    /// Size of a chunk's SSRC/CSRC.
    static let ssrcSize = 4
    /// Item type that ends a chunk's list.
    static let end: UInt8 = 0
    /// Item type of the canonical name.
    static let cname: UInt8 = 1
    /// Item type of private extensions (RFC 3550 §6.5.8), the last one defined.
    static let lastKnown: UInt8 = 8
    /// Longest item text the 8-bit length can describe.
    static let maxItemLength = 255

    /// Bytes a chunk with one item of `textCount` bytes takes: SSRC, type, length, text, a null, word padding.
    static func chunkSize(itemText textCount: Int) -> Int { paddedToWord(ssrcSize + 2 + textCount + 1) }
}

/// An SDES packet: per source, its description items. Parsed items keep their type (1 CNAME … 8 PRIV); types past 8
/// are skipped, as RFC 3550 §6.5 asks of unknown items.
public struct SourceDescription: Equatable, Sendable {
    /// One SDES item: its type (1 CNAME, 2 NAME, … 8 PRIV) and its text, as sent (UTF-8, not checked).
    public struct Item: Equatable, Sendable {
        /// Item type.
        public var type: UInt8
        /// Item text, at most 255 bytes.
        public var text: [UInt8]

        /// An item.
        public init(type: UInt8, text: [UInt8]) {
            self.type = type
            self.text = text
        }

        /// A CNAME item.
        public static func cname(_ name: String) -> Item { Item(type: SDESLayout.cname, text: Array(name.utf8)) }
    }

    /// The items of one source.
    public struct Chunk: Equatable, Sendable {
        /// The source described.
        public var ssrc: UInt32
        /// Its items, in wire order.
        public var items: [Item]

        /// A chunk.
        public init(ssrc: UInt32, items: [Item]) {
            self.ssrc = ssrc
            self.items = items
        }

        /// The CNAME item's text as a string (invalid UTF-8 repaired), or nil when the chunk has none.
        public var cname: String? {
            items.first { $0.type == SDESLayout.cname }.map { String(decoding: $0.text, as: UTF8.self) }
        }
    }

    /// Chunks, at most 31.
    public var chunks: [Chunk]

    /// An SDES packet.
    public init(chunks: [Chunk]) { self.chunks = chunks }

    /// Reads an SDES packet; `unknownType` unless PT is 202, `badCSRCCount` when the body ends before the source
    /// count's chunks do, `badLength` when an item's length runs past the body or a chunk has no terminating null.
    public init(parsing packet: RTCPPacketView) throws(WireError) {
        guard packet.packetType == RTCPLayout.sourceDescription else { throw .unknownType }
        let bytes = packet.bytes
        let end = packet.bodyOffset + packet.bodyCount
        var offset = packet.bodyOffset
        var chunks: [Chunk] = []
        for _ in 0..<Int(packet.countOrFormat) {
            guard end - offset >= SDESLayout.ssrcSize else { throw .badCSRCCount }
            var chunk = Chunk(ssrc: bytes.getUInt32(at: offset), items: [])
            offset += SDESLayout.ssrcSize
            while true {
                guard offset < end else { throw .badLength }  // no null octet before the body ends
                let type = bytes[offset]
                if type == SDESLayout.end { break }
                guard end - offset >= 2 else { throw .badLength }
                let length = Int(bytes[offset + 1])
                guard end - offset - 2 >= length else { throw .badLength }
                if type <= SDESLayout.lastKnown {
                    chunk.items.append(Item(type: type, text: Array(UnsafeRawBufferPointer(rebasing: bytes[(offset + 2)..<(offset + 2 + length)]))))
                }
                offset += 2 + length
            }
            // The null octet, then nulls to the chunk's word boundary (chunks start on words: offset 4 in the packet).
            offset = packet.offset + paddedToWord(offset + 1 - packet.offset)
            guard offset <= end else { throw .badLength }
            chunks.append(chunk)
        }
        self.chunks = chunks
    }

    /// Bytes `serialize(into:)` writes, header and chunk padding included.
    public var serializedSize: Int {
        RTCPLayout.headerSize + chunks.reduce(0) { size, chunk in
            size + paddedToWord(SDESLayout.ssrcSize + chunk.items.reduce(0) { $0 + 2 + $1.text.count } + 1)
        }
    }

    /// Writes the packet and returns its size; `badField` for more than 31 chunks, an item of type 0 or text over 255
    /// bytes, `bufferTooSmall`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        guard chunks.count <= RTCPLayout.maxCount else { throw .badField }
        for chunk in chunks {
            for item in chunk.items where item.type == SDESLayout.end || item.text.count > SDESLayout.maxItemLength { throw .badField }
        }
        let size = serializedSize
        guard buffer.count >= size else { throw .bufferTooSmall }
        RTCPLayout.writeHeader(into: buffer, count: chunks.count, packetType: RTCPLayout.sourceDescription, size: size)
        var offset = RTCPLayout.headerSize
        for chunk in chunks {
            buffer.setUInt32(chunk.ssrc, at: offset)
            offset += SDESLayout.ssrcSize
            for item in chunk.items {
                buffer[offset] = item.type
                buffer[offset + 1] = UInt8(item.text.count)
                for (i, byte) in item.text.enumerated() { buffer[offset + 2 + i] = byte }
                offset += 2 + item.text.count
            }
            let padded = paddedToWord(offset + 1)
            buffer.setZeros(at: offset, count: padded - offset)
            offset = padded
        }
        return size
    }
}
