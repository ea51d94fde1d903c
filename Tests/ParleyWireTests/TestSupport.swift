@testable import ParleyWire

/// Parses `bytes` as RTP and passes the view to `body` while the array's storage is pinned.
func withRTP<R>(_ bytes: [UInt8], _ body: (RTPPacketView) throws -> R) throws -> R {
    try bytes.withUnsafeBytes { raw in try body(try RTPPacketView(parsing: raw)) }
}

/// Parses `bytes` as RTP and throws whatever the parser throws; for `#expect(throws:)`.
func parseRTP(_ bytes: [UInt8]) throws {
    _ = try withRTP(bytes) { $0.ssrc }
}

/// Runs `write` against a zeroed buffer of `capacity` bytes and returns the bytes it reports writing.
func serialized(capacity: Int = 1500, _ write: (UnsafeMutableRawBufferPointer) throws -> Int) throws -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: capacity)
    let written = try buffer.withUnsafeMutableBytes { try write($0) }
    return Array(buffer[..<written])
}

/// Parses the first RTCP packet of `bytes` and hands its view to `body`.
func withRTCP<R>(_ bytes: [UInt8], _ body: (RTCPPacketView) throws -> R) throws -> R {
    try bytes.withUnsafeBytes { raw in
        var packets = rtcpPackets(in: raw)
        guard let packet = try packets.next() else { throw WireError.truncated }
        return try body(packet)
    }
}

/// Every packet of a compound RTCP buffer as (type, count/format, body bytes), or the error that stopped it.
func rtcpSummary(_ bytes: [UInt8]) throws -> [(type: UInt8, count: UInt8, body: [UInt8])] {
    try bytes.withUnsafeBytes { raw in
        var packets = rtcpPackets(in: raw)
        var result: [(type: UInt8, count: UInt8, body: [UInt8])] = []
        while let packet = try packets.next() {
            result.append((packet.packetType, packet.countOrFormat, Array(packet.body)))
        }
        return result
    }
}
