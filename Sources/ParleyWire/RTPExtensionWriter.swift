// Writes an RFC 8285 header extension block (RFC 3550 §5.3.1) element by element into a buffer the caller owns:
// begin at an offset, append elements, finish (zero padding to a 32-bit word, then the length field).
//
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |       0xBEDE (one-byte)       |    length in 32-bit words     |   `init(into:at:)`; length set by `finish()`
// |  ID   | len-1 |    data ...   |  ID   | len-1 |    data ...   |   `appendElement` / `beginElement` + `append`
// |    data ...   |       0       |       0       |       0       |   zero padding, `finish()`
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//
// The two-byte form (0x1000, 8-bit ID, 8-bit length) is written the same way; `RTPHeader` uses it when an element
// does not fit the one-byte form. The per-packet senders use the one-byte form only.

/// A cursor over one extension block being written. No allocation: it holds the caller's buffer and two offsets.
public struct RTPExtensionWriter {
    @usableFromInline let buffer: UnsafeMutableRawBufferPointer
    @usableFromInline let start: Int
    @usableFromInline let oneByte: Bool
    @usableFromInline var next: Int
    /// The offset of the next byte to be written.
    @inlinable public var cursor: Int { next }

    /// Bytes a one-byte-form block takes (header plus padded elements) for elements with these data sizes in total:
    /// `elements` element headers and `dataBytes` bytes of data.
    @inlinable
    public static func oneByteBlockSize(elements: Int, dataBytes: Int) -> Int {
        RTPLayout.extensionHeaderSize + paddedToWord(elements + dataBytes)
    }

    /// Starts a block at `offset` of `buffer` (one-byte form unless `twoByteForm`): writes the profile field.
    @inlinable
    public init(into buffer: UnsafeMutableRawBufferPointer, at offset: Int, twoByteForm: Bool = false) {
        self.buffer = buffer
        self.start = offset
        self.oneByte = !twoByteForm
        buffer.setUInt16(twoByteForm ? RTPExtensionLayout.twoByteProfile : RTPExtensionLayout.oneByteProfile,
                         at: offset + RTPExtensionLayout.profileOffset)
        next = offset + RTPLayout.extensionHeaderSize
    }

    /// Writes an element header for `id` with `dataCount` data bytes; the caller then appends exactly that many.
    /// One-byte form: ID 1...14, 1...16 bytes; two-byte form: ID 1...255, 0...255 bytes (checked in debug builds).
    @inlinable
    public mutating func beginElement(id: UInt8, dataCount: Int) {
        if oneByte {
            assert(RTPExtensionLayout.oneByteIDs.contains(id) && RTPExtensionLayout.oneByteDataSizes.contains(dataCount))
            buffer[next] = id << RTPExtensionLayout.oneByteIDShift | UInt8(truncatingIfNeeded: dataCount - 1)
            next += 1
        } else {
            assert(id != RTPExtensionLayout.paddingID && dataCount <= RTPExtensionLayout.twoByteMaxDataSize)
            buffer[next] = id
            buffer[next + 1] = UInt8(truncatingIfNeeded: dataCount)
            next += 2
        }
    }

    /// Appends one data byte of the current element.
    @inlinable
    public mutating func append(_ byte: UInt8) {
        buffer[next] = byte
        next += 1
    }

    /// Appends eight data bytes of the current element, big-endian.
    @inlinable
    public mutating func append(bigEndian value: UInt64) {
        buffer.setUInt64(value, at: next)
        next += 8
    }

    /// Appends a whole one-byte element: `id`, one data byte.
    @inlinable
    public mutating func appendElement(id: UInt8, byte: UInt8) {
        beginElement(id: id, dataCount: 1)
        append(byte)
    }

    /// Appends a whole element: `id` and `data`.
    @inlinable
    public mutating func appendElement(id: UInt8, data: UnsafeRawBufferPointer) {
        beginElement(id: id, dataCount: data.count)
        for byte in data { append(byte) }
    }

    /// Ends the block: zero padding up to a 32-bit word, the length field in words. Returns the offset just after the
    /// block (where the payload begins).
    @inlinable
    @discardableResult
    public mutating func finish() -> Int {
        let dataStart = start + RTPLayout.extensionHeaderSize
        let end = dataStart + paddedToWord(next - dataStart)
        buffer.setZeros(at: next, count: end - next)
        buffer.setUInt16(UInt16(truncatingIfNeeded: (end - dataStart) / 4), at: start + RTPExtensionLayout.lengthOffset)
        next = end
        return end
    }
}
