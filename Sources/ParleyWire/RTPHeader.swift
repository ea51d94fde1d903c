// Serialization of an RTP header plus extension block (RFC 3550 §5.1, RFC 8285 §4) from arrays, for building packets
// off the per-packet path; the bytes are written by `RTPFixedHeader` and `RTPExtensionWriter`, as every sender's are.
// The caller appends the payload after the bytes written. Layout, as parsed by `RTPPacketView`:
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
// |                           timestamp                           |
// |           synchronization source (SSRC) identifier            |
// |            contributing source (CSRC) identifiers ...         |
// |  0xBEDE or 0x1000             |    length in 32-bit words     |  (if any extensions)
// |  elements ..., zero-padded to a 32-bit boundary               |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

/// An RTP header to serialize. The padding bit is never set; the payload is written by the caller.
public struct RTPHeader: Equatable, Sendable {
    /// The M bit.
    public var marker: Bool
    /// Payload type, `0...127`.
    public var payloadType: UInt8
    /// Sequence number.
    public var sequenceNumber: UInt16
    /// Media timestamp.
    public var timestamp: UInt32
    /// Synchronization source.
    public var ssrc: UInt32
    /// Contributing sources, at most 15.
    public var csrcs: [UInt32]
    /// Extension elements, written in order. Empty means no X bit and no extension block.
    public var extensions: [RTPExtensionElement]

    /// A header with the given fields.
    public init(
        marker: Bool = false, payloadType: UInt8, sequenceNumber: UInt16, timestamp: UInt32, ssrc: UInt32,
        csrcs: [UInt32] = [], extensions: [RTPExtensionElement] = []
    ) {
        self.marker = marker
        self.payloadType = payloadType
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.ssrc = ssrc
        self.csrcs = csrcs
        self.extensions = extensions
    }

    /// True when every element fits the one-byte form (ID 1...14, 1...16 data bytes); otherwise two-byte form is used.
    var usesOneByteForm: Bool {
        extensions.allSatisfy {
            RTPExtensionLayout.oneByteIDs.contains($0.id) && RTPExtensionLayout.oneByteDataSizes.contains($0.data.count)
        }
    }

    /// Bytes of extension elements before padding to a word.
    private var extensionElementsSize: Int {
        let perElement = usesOneByteForm ? 1 : 2
        return extensions.reduce(0) { $0 + perElement + $1.data.count }
    }

    /// Bytes of extension data after the 4-byte extension header, padded to 32-bit words.
    private var extensionDataSize: Int { paddedToWord(extensionElementsSize) }

    /// Bytes `serialize(into:)` writes: fixed header, CSRCs and the extension block.
    public var serializedSize: Int {
        var size = RTPLayout.fixedHeaderSize + csrcs.count * RTPLayout.csrcSize
        if !extensions.isEmpty { size += RTPLayout.extensionHeaderSize + extensionDataSize }
        return size
    }

    /// Writes the header and extension block at the start of `buffer` and returns the number of bytes written.
    ///
    /// Throws `badField` for a payload type above 127, `badCSRCCount` for more than 15 CSRCs, `badExtension` for
    /// an element no form can carry (ID 0, ID 15 with one-byte data, more than 255 bytes, block over 65535 words),
    /// and `bufferTooSmall`.
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        guard payloadType <= RTPLayout.maxPayloadType else { throw .badField }
        guard csrcs.count <= RTPLayout.maxCSRCCount else { throw .badCSRCCount }
        let oneByte = usesOneByteForm
        for element in extensions {
            guard element.id != RTPExtensionLayout.paddingID,
                  element.data.count <= RTPExtensionLayout.twoByteMaxDataSize
            else { throw .badExtension }
        }
        guard extensionDataSize / 4 <= RTPExtensionLayout.maxWords else { throw .badExtension }
        let size = serializedSize
        guard buffer.count >= size else { throw .bufferTooSmall }

        RTPFixedHeader(marker: marker, payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp,
                       ssrc: ssrc, csrcCount: csrcs.count, hasExtension: !extensions.isEmpty).write(into: buffer)
        for (index, csrc) in csrcs.enumerated() { RTPFixedHeader.writeCSRC(csrc, at: index, into: buffer) }
        let extensionOffset = RTPFixedHeader.extensionOffset(csrcCount: csrcs.count)
        guard !extensions.isEmpty else { return extensionOffset }

        var block = RTPExtensionWriter(into: buffer, at: extensionOffset, twoByteForm: !oneByte)
        for element in extensions {
            element.data.withUnsafeBytes { block.appendElement(id: element.id, data: $0) }
        }
        let end = block.finish()
        assert(end == size)
        return end
    }
}
