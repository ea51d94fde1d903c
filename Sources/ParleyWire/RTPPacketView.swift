// Zero-copy parsing of an RTP packet (RFC 3550 §5.1, §5.3.1):
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |V=2|P|X|  CC   |M|     PT      |       sequence number         |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                           timestamp                           |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |           synchronization source (SSRC) identifier            |
// +=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+=+
// |            contributing source (CSRC) identifiers             |
// |                             ....                              |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |      defined by profile       |           length              |  (if X)
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                        header extension                       |
// |                             ....                              |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                            payload                            |
// |                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                               |  padding ...  | padding count |  (if P)
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+

/// A parsed RTP packet that points into the caller's buffer: no copies, no allocation.
///
/// The view keeps a copy of the buffer's base pointer, so it is valid only while that buffer is alive and
/// unchanged; do not store it past the receive call that produced the bytes. All offsets and ranges it
/// returns are relative to the start of that buffer.
public struct RTPPacketView {
    /// The whole packet as given to `init(parsing:)`.
    public let bytes: UnsafeRawBufferPointer
    /// RTP version; always 2 once parsed.
    public let version: UInt8
    /// The P bit: the packet ends in padding, whose length is its last byte.
    public let padding: Bool
    /// The X bit: a header extension follows the CSRC list.
    public let hasExtension: Bool
    /// The M bit; for audio, the first packet of a talkspurt.
    public let marker: Bool
    /// Payload type, `0...127`.
    public let payloadType: UInt8
    /// Sequence number.
    public let sequenceNumber: UInt16
    /// Media timestamp.
    public let timestamp: UInt32
    /// Synchronization source.
    public let ssrc: UInt32
    /// Number of CSRC identifiers, `0...15`.
    public let csrcCount: Int
    /// Offset of the first payload byte.
    public let payloadOffset: Int
    /// Number of payload bytes, excluding padding; may be 0.
    public let payloadCount: Int
    /// Number of padding bytes at the end, including the count byte; 0 when `padding` is false.
    public let paddingCount: Int
    /// The extension's "defined by profile" field, or nil without an extension.
    public let extensionProfile: UInt16?
    /// Offset of the extension data, just after its 4-byte header (0 without an extension).
    public let extensionOffset: Int
    /// Number of extension data bytes, excluding its 4-byte header.
    public let extensionCount: Int

    /// Parses and validates the packet in `bytes`, including every RFC 8285 extension element.
    ///
    /// Throws `truncated` (under 12 bytes or no room for the extension header), `badVersion`, `badCSRCCount`,
    /// `badExtension` (block or element past its end), `badPadding` (count 0 or larger than the payload).
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        guard bytes.count >= RTPLayout.fixedHeaderSize else { throw .truncated }
        let byte0 = bytes[0]
        let byte1 = bytes[1]
        guard byte0 >> RTPLayout.versionShift == RTPLayout.version else { throw .badVersion }

        let csrcCount = Int(byte0 & RTPLayout.csrcCountMask)
        var cursor = RTPLayout.fixedHeaderSize + csrcCount * RTPLayout.csrcSize
        guard cursor <= bytes.count else { throw .badCSRCCount }

        let hasExtension = byte0 & RTPLayout.extensionMask != 0
        var extensionProfile: UInt16? = nil
        var extensionOffset = 0
        var extensionCount = 0
        if hasExtension {
            guard cursor + RTPLayout.extensionHeaderSize <= bytes.count else { throw .truncated }
            let profile = bytes.getUInt16(at: cursor)
            let words = Int(bytes.getUInt16(at: cursor + 2))
            extensionOffset = cursor + RTPLayout.extensionHeaderSize
            extensionCount = words * 4
            guard extensionOffset + extensionCount <= bytes.count else { throw .badExtension }
            if let form = RTPExtensionForm(profile: profile) {
                var walker = RTPExtensionElementWalker(
                    bytes: bytes, form: form, start: extensionOffset, end: extensionOffset + extensionCount)
                while try walker.next() != nil {}
            }
            extensionProfile = profile
            cursor = extensionOffset + extensionCount
        }

        let padding = byte0 & RTPLayout.paddingMask != 0
        var paddingCount = 0
        if padding {
            guard cursor < bytes.count else { throw .badPadding }
            paddingCount = Int(bytes[bytes.count - 1])
            guard paddingCount >= 1, paddingCount <= bytes.count - cursor else { throw .badPadding }
        }

        self.bytes = bytes
        self.version = RTPLayout.version
        self.padding = padding
        self.hasExtension = hasExtension
        self.marker = byte1 & RTPLayout.markerMask != 0
        self.payloadType = byte1 & RTPLayout.payloadTypeMask
        self.sequenceNumber = bytes.getUInt16(at: RTPLayout.sequenceOffset)
        self.timestamp = bytes.getUInt32(at: RTPLayout.timestampOffset)
        self.ssrc = bytes.getUInt32(at: RTPLayout.ssrcOffset)
        self.csrcCount = csrcCount
        self.payloadOffset = cursor
        self.payloadCount = bytes.count - cursor - paddingCount
        self.paddingCount = paddingCount
        self.extensionProfile = extensionProfile
        self.extensionOffset = extensionOffset
        self.extensionCount = extensionCount
    }

    /// The `i`th CSRC identifier; `i` must be in `0..<csrcCount`.
    public func csrc(at i: Int) -> UInt32 {
        precondition(i >= 0 && i < csrcCount, "CSRC index out of range")
        return bytes.getUInt32(at: RTPLayout.fixedHeaderSize + i * RTPLayout.csrcSize)
    }

    /// Byte range of the payload within `bytes`.
    public var payloadRange: Range<Int> { payloadOffset..<(payloadOffset + payloadCount) }

    /// The payload bytes, as a view into the same buffer.
    public var payload: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[payloadRange]) }

    /// Byte range within `bytes` of the data of the first extension element with `id`, in the one-byte (0xBEDE)
    /// or two-byte (0x100X) form; nil when there is no such element or the extension profile is another one.
    public func extensionElement(id: UInt8) -> Range<Int>? {
        guard let profile = extensionProfile, let form = RTPExtensionForm(profile: profile) else { return nil }
        var walker = RTPExtensionElementWalker(
            bytes: bytes, form: form, start: extensionOffset, end: extensionOffset + extensionCount)
        // Elements were validated in init, so the walk cannot throw here.
        while let element = try? walker.next() {
            if element.id == id { return element.data }
        }
        return nil
    }

    /// The RFC 6464 client-to-mixer audio level carried in extension element `id`, or nil if absent or empty.
    public func audioLevel(id: UInt8) -> AudioLevel? {
        guard let range = extensionElement(id: id), !range.isEmpty else { return nil }
        return AudioLevel(byte: bytes[range.lowerBound])
    }

    /// Calls `body(index, level)` for each byte of the RFC 6465 mixer-to-client (CSRC) audio level element `id`:
    /// `index` is the position in the CSRC list and `level` the 7-bit -dBov value. Only as many entries as
    /// the element holds (at most `csrcCount` when the sender is conformant). Allocation-free; returns the
    /// number of levels visited, 0 if the element is absent.
    @discardableResult
    public func csrcAudioLevels(id: UInt8, into body: (_ index: Int, _ level: UInt8) -> Void) -> Int {
        guard let range = extensionElement(id: id) else { return 0 }
        for (index, offset) in range.enumerated() {
            body(index, bytes[offset] & AudioLevel.levelMask)
        }
        return range.count
    }
}
