@testable import ParleyWebRTC

/// RFC 5769 §2: the password of every test vector ("VOkJxbRl1RmTxUk/WvJxBt").
let rfc5769Password = Array("VOkJxbRl1RmTxUk/WvJxBt".utf8)

/// RFC 5769 §2.1, sample request (username "evtj:h6vY", padded with spaces as the RFC does).
let rfc5769Request: [UInt8] = [
    0x00, 0x01, 0x00, 0x58, // Request type and message length
    0x21, 0x12, 0xa4, 0x42, // Magic cookie
    0xb7, 0xe7, 0xa7, 0x01, // }
    0xbc, 0x34, 0xd6, 0x86, // }  Transaction ID
    0xfa, 0x87, 0xdf, 0xae, // }
    0x80, 0x22, 0x00, 0x10, // SOFTWARE attribute header
    0x53, 0x54, 0x55, 0x4e, // }
    0x20, 0x74, 0x65, 0x73, // }  User-agent...
    0x74, 0x20, 0x63, 0x6c, // }  ...name ("STUN test client")
    0x69, 0x65, 0x6e, 0x74, // }
    0x00, 0x24, 0x00, 0x04, // PRIORITY attribute header
    0x6e, 0x00, 0x01, 0xff, // ICE priority value
    0x80, 0x29, 0x00, 0x08, // ICE-CONTROLLED attribute header
    0x93, 0x2f, 0xf9, 0xb1, // }  Pseudo-random tie breaker...
    0x51, 0x26, 0x3b, 0x36, // }   ...for ICE control
    0x00, 0x06, 0x00, 0x09, // USERNAME attribute header
    0x65, 0x76, 0x74, 0x6a, // }
    0x3a, 0x68, 0x36, 0x76, // }  Username (9 bytes) and padding (3 bytes)
    0x59, 0x20, 0x20, 0x20, // }
    0x00, 0x08, 0x00, 0x14, // MESSAGE-INTEGRITY attribute header
    0x9a, 0xea, 0xa7, 0x0c, // }
    0xbf, 0xd8, 0xcb, 0x56, // }
    0x78, 0x1e, 0xf2, 0xb5, // }  HMAC-SHA1 fingerprint
    0xb2, 0xd3, 0xf2, 0x49, // }
    0xc1, 0xb5, 0x71, 0xa2, // }
    0x80, 0x28, 0x00, 0x04, // FINGERPRINT attribute header
    0xe5, 0x7a, 0x3b, 0xcf, // CRC32 fingerprint
]

/// RFC 5769 §2.2, sample IPv4 response: XOR-MAPPED-ADDRESS 192.0.2.1:32853.
let rfc5769IPv4Response: [UInt8] = [
    0x01, 0x01, 0x00, 0x3c, // Response type and message length
    0x21, 0x12, 0xa4, 0x42, // Magic cookie
    0xb7, 0xe7, 0xa7, 0x01, // }
    0xbc, 0x34, 0xd6, 0x86, // }  Transaction ID
    0xfa, 0x87, 0xdf, 0xae, // }
    0x80, 0x22, 0x00, 0x0b, // SOFTWARE attribute header
    0x74, 0x65, 0x73, 0x74, // }
    0x20, 0x76, 0x65, 0x63, // }  UTF-8 server name
    0x74, 0x6f, 0x72, 0x20, // }
    0x00, 0x20, 0x00, 0x08, // XOR-MAPPED-ADDRESS attribute header
    0x00, 0x01, 0xa1, 0x47, // Address family (IPv4) and xor'd mapped port number
    0xe1, 0x12, 0xa6, 0x43, // Xor'd mapped IPv4 address
    0x00, 0x08, 0x00, 0x14, // MESSAGE-INTEGRITY attribute header
    0x2b, 0x91, 0xf5, 0x99, // }
    0xfd, 0x9e, 0x90, 0xc3, // }
    0x8c, 0x74, 0x89, 0xf9, // }  HMAC-SHA1 fingerprint
    0x2a, 0xf9, 0xba, 0x53, // }
    0xf0, 0x6b, 0xe7, 0xd7, // }
    0x80, 0x28, 0x00, 0x04, // FINGERPRINT attribute header
    0xc0, 0x7d, 0x4c, 0x96, // CRC32 fingerprint
]

/// RFC 5769 §2.3, sample IPv6 response: XOR-MAPPED-ADDRESS [2001:db8:1234:5678:11:2233:4455:6677]:32853.
let rfc5769IPv6Response: [UInt8] = [
    0x01, 0x01, 0x00, 0x48, // Response type and message length
    0x21, 0x12, 0xa4, 0x42, // Magic cookie
    0xb7, 0xe7, 0xa7, 0x01, // }
    0xbc, 0x34, 0xd6, 0x86, // }  Transaction ID
    0xfa, 0x87, 0xdf, 0xae, // }
    0x80, 0x22, 0x00, 0x0b, // SOFTWARE attribute header
    0x74, 0x65, 0x73, 0x74, // }
    0x20, 0x76, 0x65, 0x63, // }  UTF-8 server name
    0x74, 0x6f, 0x72, 0x20, // }
    0x00, 0x20, 0x00, 0x14, // XOR-MAPPED-ADDRESS attribute header
    0x00, 0x02, 0xa1, 0x47, // Address family (IPv6) and xor'd mapped port number
    0x01, 0x13, 0xa9, 0xfa, // }
    0xa5, 0xd3, 0xf1, 0x79, // }  Xor'd mapped IPv6 address
    0xbc, 0x25, 0xf4, 0xb5, // }
    0xbe, 0xd2, 0xb9, 0xd9, // }
    0x00, 0x08, 0x00, 0x14, // MESSAGE-INTEGRITY attribute header
    0xa3, 0x82, 0x95, 0x4e, // }
    0x4b, 0xe6, 0x7b, 0xf1, // }
    0x17, 0x84, 0xc9, 0x7c, // }  HMAC-SHA1 fingerprint
    0x82, 0x92, 0xc2, 0x75, // }
    0xbf, 0xe3, 0xed, 0x41, // }
    0x80, 0x28, 0x00, 0x04, // FINGERPRINT attribute header
    0xc8, 0xfb, 0x0b, 0x4c, // CRC32 fingerprint
]

/// The RFC 5769 transaction ID.
let rfc5769TransactionID: [UInt8] = [0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae]

/// Parses `bytes` as a Binding request.
func parseRequest(_ bytes: [UInt8]) throws(WebRTCError) -> STUNBindingRequest {
    let result: Result<STUNBindingRequest, WebRTCError> = bytes.withUnsafeBytes { raw in
        do throws(WebRTCError) { return .success(try STUNBindingRequest(parsing: raw)) } catch { return .failure(error) }
    }
    return try result.get()
}

/// Parses `bytes` as a Binding response.
func parseResponse(_ bytes: [UInt8]) throws(WebRTCError) -> STUNBindingResponse {
    let result: Result<STUNBindingResponse, WebRTCError> = bytes.withUnsafeBytes { raw in
        do throws(WebRTCError) { return .success(try STUNBindingResponse(parsing: raw)) } catch { return .failure(error) }
    }
    return try result.get()
}

/// The `WebRTCError` code `body` throws, nil when it returns, "not a WebRTCError" for any other error.
func errorCode<T>(_ body: () throws -> T) -> String? {
    do { _ = try body(); return nil } catch let error as WebRTCError { return error.code } catch { return "not a WebRTCError" }
}

/// Runs `write` against a zeroed buffer of `capacity` bytes and returns the bytes it reports writing.
func written(capacity: Int = 1500, _ write: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
    var buffer = [UInt8](repeating: 0, count: capacity)
    let count = buffer.withUnsafeMutableBytes { write($0) }
    return Array(buffer[..<count])
}

/// A copy of `bytes` whose header length is fixed up for its size and whose FINGERPRINT (if last) is recomputed,
/// so a test can change an attribute and still reach the check it means to reach.
func refingerprinted(_ bytes: [UInt8]) -> [UInt8] {
    var copy = bytes
    let length = UInt16(copy.count - 20)
    copy[2] = UInt8(length >> 8)
    copy[3] = UInt8(length & 0xFF)
    let fp = copy.count - 8
    if fp >= 20, copy[fp] == 0x80, copy[fp + 1] == 0x28 {
        let value = copy.withUnsafeBytes { STUNFingerprint.value(over: UnsafeRawBufferPointer(rebasing: $0[0..<fp])) }
        copy[fp + 4] = UInt8(value >> 24)
        copy[fp + 5] = UInt8((value >> 16) & 0xFF)
        copy[fp + 6] = UInt8((value >> 8) & 0xFF)
        copy[fp + 7] = UInt8(value & 0xFF)
    }
    return copy
}
