// Half-range comparison of wrapping RTP counters (RFC 3550 §A.1, RFC 1982 serial number arithmetic).
// `a` is newer than `b` when the forward distance `a &- b` is in 1..<half the range; the exact half is "older".

/// Half the 16-bit sequence space: forward distances below this are "newer".
let sequenceHalfRange: UInt16 = 0x8000
/// Half the 32-bit timestamp space: forward distances below this are "newer".
let timestampHalfRange: UInt32 = 0x8000_0000

/// True when sequence number `a` comes after `b`, allowing for wraparound (65535 → 0): `(a &- b)` is in `1..<0x8000`.
@inline(__always)
public func isNewer(_ a: UInt16, than b: UInt16) -> Bool {
    let forward = a &- b
    return forward != 0 && forward < sequenceHalfRange
}

/// True when timestamp `a` comes after `b`, allowing for wraparound (2³²−1 → 0): `(a &- b)` is in `1..<0x8000_0000`.
@inline(__always)
public func isNewer(_ a: UInt32, than b: UInt32) -> Bool {
    let forward = a &- b
    return forward != 0 && forward < timestampHalfRange
}

/// Signed number of steps from `from` to `to` across the shorter way round, in `-32768...32767`
/// (positive when `to` is newer). Exactly half the range away reads as -32768, matching `isNewer`.
@inline(__always)
public func sequenceDistance(from: UInt16, to: UInt16) -> Int {
    Int(Int16(bitPattern: to &- from))
}
