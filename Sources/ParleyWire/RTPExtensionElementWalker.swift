// Walks the elements of an RFC 8285 extension block without allocating.
//
// One-byte form (profile 0xBEDE), §4.2:
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |       0xBE    |    0xDE       |           length=3            |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |  ID   | L=0   |     data      |  ID   |  L=1  |   data...
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//       ...data   |    0 (pad)    |    0 (pad)    |  ID   | L=3   |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// Two-byte form (profile 0x100 + appbits), §4.3:
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |       0x100           |appbits|           length=3            |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |      ID       |     L=0       |     ID        |     L=1       |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |       data    |    0 (pad)    |       ID      |      L=4      |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// A zero byte where an ID is expected is padding and is skipped. In the one-byte form ID 15 ends the block.

/// Iterates `(id, data range)` pairs of an extension block inside `bytes[start..<end]`.
struct RTPExtensionElementWalker {
    private let bytes: UnsafeRawBufferPointer
    private let form: RTPExtensionForm
    private let end: Int
    private var cursor: Int

    /// A walker over `bytes[start..<end]` in `form`.
    init(bytes: UnsafeRawBufferPointer, form: RTPExtensionForm, start: Int, end: Int) {
        self.bytes = bytes
        self.form = form
        self.end = end
        self.cursor = start
    }

    /// The next element, nil at the end of the block, `badExtension` if an element runs past it.
    mutating func next() throws(WireError) -> (id: UInt8, data: Range<Int>)? {
        while cursor < end {
            let first = bytes[cursor]
            switch form {
            case .oneByte:
                let id = first >> RTPExtensionLayout.oneByteIDShift
                if id == RTPExtensionLayout.paddingID {
                    cursor += 1
                    continue
                }
                if id == RTPExtensionLayout.oneByteTerminatorID {
                    cursor = end
                    return nil
                }
                let dataStart = cursor + 1
                let dataEnd = dataStart + Int(first & RTPExtensionLayout.oneByteLengthMask) + 1
                guard dataEnd <= end else { throw .badExtension }
                cursor = dataEnd
                return (id, dataStart..<dataEnd)
            case .twoByte:
                if first == RTPExtensionLayout.paddingID {
                    cursor += 1
                    continue
                }
                guard cursor + 1 < end else { throw .badExtension }
                let dataStart = cursor + 2
                let dataEnd = dataStart + Int(bytes[cursor + 1])
                guard dataEnd <= end else { throw .badExtension }
                cursor = dataEnd
                return (first, dataStart..<dataEnd)
            }
        }
        return nil
    }
}
