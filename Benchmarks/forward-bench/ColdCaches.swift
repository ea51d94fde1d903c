/// `--cold MB`: between two 20 ms rounds of packets, untimed, write one byte per cache line over MB megabytes, as the
/// live worker's `sendmmsg` of a round's few hundred datagrams (the kernel's send path and loopback delivery) does to
/// the caches between its wakeups. Warm, the core's figures are what its code costs; cold, they include what its data
/// costs to fetch again each round, which is most of what `parley-load` measures above the raw forwarder.
enum ColdCaches {
    /// Bytes written between rounds (0: warm, the default).
    nonisolated(unsafe) static var bytes = 0
    nonisolated(unsafe) private static var buffer: UnsafeMutableRawPointer?
    nonisolated(unsafe) private static var pass: UInt8 = 0

    /// Writes over the buffer when a size is set (allocated at the first call).
    static func evict() {
        guard bytes > 0 else { return }
        let b = buffer ?? UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
        buffer = b
        pass &+= 1
        for offset in stride(from: 0, to: bytes, by: 64) {
            b.storeBytes(of: pass, toByteOffset: offset, as: UInt8.self)
        }
    }
}
