// RFC 4571 framing: datagrams over a byte stream (TCP), each as a 16-bit big-endian length and that many bytes.
//
//     frame   length u16 (big-endian) | payload (length bytes)
//
// ICE-TCP (RFC 6544) carries STUN, DTLS and SRTP this way. Parley's own client carries its datagrams in the same
// frames, each payload a relay port and the datagram for it (`RelayTunnel`).

/// Reassembles RFC 4571 frames from a byte stream, refusing any longer than `maxFrame`.
public struct StreamFrameReader {
    /// The longest payload taken; a longer length ends the stream (`tooLarge`).
    public let maxFrame: Int
    private var buffer: [UInt8] = []
    private var start = 0

    /// A frame's length field named more than `maxFrame` bytes.
    public struct TooLarge: Error, Equatable {
        public let length: Int
    }

    public init(maxFrame: Int) { self.maxFrame = maxFrame }

    /// Bytes held that do not yet make a whole frame.
    public var pendingBytes: Int { buffer.count - start }

    /// Takes bytes read from the stream.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    public mutating func append(_ bytes: [UInt8]) { bytes.withUnsafeBytes { append($0) } }

    /// The next whole frame's payload, or nil until more bytes come. Empty frames are skipped.
    public mutating func next() throws(TooLarge) -> [UInt8]? {
        while buffer.count - start >= 2 {
            let length = Int(buffer[start]) << 8 | Int(buffer[start + 1])
            guard length <= maxFrame else { throw TooLarge(length: length) }
            guard buffer.count - start >= 2 + length else { break }
            let payload = Array(buffer[(start + 2)..<(start + 2 + length)])
            start += 2 + length
            if start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
            } else if start > 65_536 {
                buffer.removeFirst(start)
                start = 0
            }
            if !payload.isEmpty { return payload }
        }
        return nil
    }

    /// `payload` framed: its length (≤ 65,535 bytes), then it.
    public static func frame(_ payload: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(payload.count <= 0xFFFF, "an RFC 4571 frame holds at most 65,535 bytes")
        var out = [UInt8](repeating: 0, count: 2)
        out.reserveCapacity(2 + payload.count)
        out[0] = UInt8(payload.count >> 8)
        out[1] = UInt8(payload.count & 0xFF)
        out.append(contentsOf: payload)
        return out
    }

    public static func frame(_ payload: [UInt8]) -> [UInt8] { payload.withUnsafeBytes { frame($0) } }
}

/// Parley's client over TCP: each RFC 4571 frame's payload is a relay UDP port and one datagram, as UDP would carry it
/// to (client → relay) or from (relay → client) that port of the relay's host.
///
///     tunnel frame payload   port u16 (big-endian) | datagram
public enum RelayTunnel {
    /// The payload for `datagram` to or from relay port `port`.
    public static func wrap(port: UInt16, _ datagram: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = [UInt8(port >> 8), UInt8(port & 0xFF)]
        out.reserveCapacity(2 + datagram.count)
        out.append(contentsOf: datagram)
        return out
    }

    /// The port and datagram of a tunnel payload; nil for one too short to hold both or naming port 0.
    public static func unwrap(_ payload: [UInt8]) -> (port: UInt16, datagram: ArraySlice<UInt8>)? {
        guard payload.count >= 3 else { return nil }
        let port = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard port != 0 else { return nil }
        return (port, payload[2...])
    }
}

/// What a TCP connection to the relay carries, told by its first frame.
public enum StreamKind: Equatable, Sendable {
    /// ICE-TCP from a browser: the first frame is a STUN Binding request (type 0x0001, the magic cookie).
    case iceTCP
    /// Parley's client: tunnel frames (`RelayTunnel`).
    case tunnel

    /// The kind a first frame shows, or nil when it is neither.
    public static func classify(_ first: [UInt8]) -> StreamKind? {
        if first.count >= 20, first[0] == 0x00, first[1] == 0x01, first[4] == 0x21, first[5] == 0x12, first[6] == 0xA4, first[7] == 0x42 {
            return .iceTCP
        }
        return RelayTunnel.unwrap(first) == nil ? nil : .tunnel
    }
}
