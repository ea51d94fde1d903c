// Big-endian field access on raw buffers. `get*`/`set*` take absolute offsets and never move anything,
// in the style of NIO's ByteBuffer. Callers check bounds before calling; these only trap in debug builds.

extension UnsafeRawBufferPointer {
    /// Reads a big-endian `UInt16` at `offset`.
    @inline(__always)
    func getUInt16(at offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }

    /// Reads a big-endian `UInt32` at `offset`.
    @inline(__always)
    func getUInt32(at offset: Int) -> UInt32 {
        UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8 | UInt32(self[offset + 3])
    }

    /// Reads a big-endian `UInt64` at `offset`.
    @inline(__always)
    func getUInt64(at offset: Int) -> UInt64 {
        UInt64(getUInt32(at: offset)) << 32 | UInt64(getUInt32(at: offset + 4))
    }
}

extension UnsafeMutableRawBufferPointer {
    /// Writes `value` as a big-endian `UInt16` at `offset`.
    @inline(__always) @usableFromInline
    func setUInt16(_ value: UInt16, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    /// Writes `value` as a big-endian `UInt32` at `offset`.
    @inline(__always) @usableFromInline
    func setUInt32(_ value: UInt32, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 24)
        self[offset + 1] = UInt8(truncatingIfNeeded: value >> 16)
        self[offset + 2] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 3] = UInt8(truncatingIfNeeded: value)
    }

    /// Writes `value` as a big-endian `UInt64` at `offset`.
    @inline(__always) @usableFromInline
    func setUInt64(_ value: UInt64, at offset: Int) {
        setUInt32(UInt32(truncatingIfNeeded: value >> 32), at: offset)
        setUInt32(UInt32(truncatingIfNeeded: value), at: offset + 4)
    }

    /// Writes `count` zero bytes starting at `offset`.
    @inline(__always) @usableFromInline
    func setZeros(at offset: Int, count: Int) {
        for i in offset..<(offset + count) { self[i] = 0 }
    }
}

/// Rounds `n` up to the next multiple of 4 (one 32-bit word).
@inline(__always) @usableFromInline
func paddedToWord(_ n: Int) -> Int { (n + 3) & ~3 }
