// Field positions of the RTP fixed header (RFC 3550 §5.1) and header extensions (RFC 3550 §5.3.1, RFC 8285).

/// Byte offsets, shifts and masks of the RTP header, named once so parser and serializer agree.
@usableFromInline
enum RTPLayout {
    /// Size of the fixed header, before CSRCs.
    @usableFromInline static let fixedHeaderSize = 12
    /// Size of one CSRC identifier.
    @usableFromInline static let csrcSize = 4
    /// Size of the extension header (profile + length in words).
    @usableFromInline static let extensionHeaderSize = 4
    /// The only RTP version we speak.
    @usableFromInline static let version: UInt8 = 2

    /// Byte 0: version in the top two bits.
    @usableFromInline static let versionShift: UInt8 = 6
    /// Byte 0: padding flag.
    @usableFromInline static let paddingMask: UInt8 = 0x20
    /// Byte 0: extension flag.
    @usableFromInline static let extensionMask: UInt8 = 0x10
    /// Byte 0: CSRC count.
    @usableFromInline static let csrcCountMask: UInt8 = 0x0F
    /// Byte 1: marker bit.
    @usableFromInline static let markerMask: UInt8 = 0x80
    /// Byte 1: payload type.
    @usableFromInline static let payloadTypeMask: UInt8 = 0x7F

    /// Offset of byte 0: version, padding, extension, CSRC count.
    @usableFromInline static let flagsOffset = 0
    /// Offset of byte 1: marker and payload type.
    @usableFromInline static let payloadTypeOffset = 1
    /// Offset of the sequence number.
    @usableFromInline static let sequenceOffset = 2
    /// Offset of the timestamp.
    @usableFromInline static let timestampOffset = 4
    /// Offset of the SSRC.
    @usableFromInline static let ssrcOffset = 8

    /// Largest CSRC count that fits the 4-bit field.
    @usableFromInline static let maxCSRCCount = 15
    /// Largest payload type that fits the 7-bit field.
    @usableFromInline static let maxPayloadType: UInt8 = 127
}

/// Constants of the RFC 8285 extension element forms.
@usableFromInline
enum RTPExtensionLayout {
    /// "defined by profile" value of the one-byte form.
    @usableFromInline static let oneByteProfile: UInt16 = 0xBEDE
    /// Top 12 bits of the two-byte form's profile; the low 4 bits are "appbits".
    @usableFromInline static let twoByteProfile: UInt16 = 0x1000
    /// Mask selecting the 12 bits compared with `twoByteProfile`.
    @usableFromInline static let twoByteProfileMask: UInt16 = 0xFFF0

    /// Offset of the profile field in the extension header.
    @usableFromInline static let profileOffset = 0
    /// Offset of the length field (in 32-bit words, header excluded) in the extension header.
    @usableFromInline static let lengthOffset = 2

    /// One-byte form: ID in the high nibble.
    @usableFromInline static let oneByteIDShift: UInt8 = 4
    /// One-byte form: length-minus-one in the low nibble.
    @usableFromInline static let oneByteLengthMask: UInt8 = 0x0F
    /// One-byte form: ID that ends processing of the block.
    @usableFromInline static let oneByteTerminatorID: UInt8 = 15
    /// One-byte form: valid IDs.
    @usableFromInline static let oneByteIDs: ClosedRange<UInt8> = 1...14
    /// One-byte form: data sizes it can carry.
    @usableFromInline static let oneByteDataSizes: ClosedRange<Int> = 1...16
    /// Two-byte form: data sizes it can carry.
    @usableFromInline static let twoByteMaxDataSize = 255
    /// Either form: an element byte of ID 0 is padding.
    @usableFromInline static let paddingID: UInt8 = 0
    /// Largest extension block, in 32-bit words (the 16-bit length field).
    @usableFromInline static let maxWords = 0xFFFF
}

/// Which RFC 8285 form an extension block uses, read from its profile field.
enum RTPExtensionForm {
    /// 0xBEDE: 4-bit ID, 4-bit length-minus-one.
    case oneByte
    /// 0x100X: 8-bit ID, 8-bit length.
    case twoByte

    /// The form for `profile`, or nil if the block is opaque to us.
    init?(profile: UInt16) {
        if profile == RTPExtensionLayout.oneByteProfile {
            self = .oneByte
        } else if profile & RTPExtensionLayout.twoByteProfileMask == RTPExtensionLayout.twoByteProfile {
            self = .twoByte
        } else {
            return nil
        }
    }
}
