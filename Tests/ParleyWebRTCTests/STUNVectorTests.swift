import Testing
import ParleyWire
@testable import ParleyWebRTC

@Suite("STUN: RFC 5769 test vectors, CRC-32, demultiplexing")
struct STUNVectorTests {
    @Test("CRC-32/ISO-HDLC check value: \"123456789\" is 0xCBF43926, nothing is 0")
    func crcCheckValue() {
        #expect(Array("123456789".utf8).withUnsafeBytes { STUNFingerprint.crc32($0) } == 0xCBF4_3926)
        #expect([UInt8]().withUnsafeBytes { STUNFingerprint.crc32($0) } == 0)
        #expect(Array("123456789".utf8).withUnsafeBytes { STUNFingerprint.value(over: $0) } == 0xCBF4_3926 ^ 0x5354_554E)
    }

    @Test("RFC 5769 §2.1 sample request: attributes, MESSAGE-INTEGRITY and FINGERPRINT verify, SOFTWARE ignored")
    func sampleRequest() throws {
        let request = try parseRequest(rfc5769Request)
        #expect(request.transactionID == rfc5769TransactionID)
        #expect(request.username == "evtj:h6vY")
        #expect(request.priority == 0x6E00_01FF)
        #expect(request.iceControlled == 0x932F_F9B1_5126_3B36)
        #expect(request.iceControlling == nil)
        #expect(request.useCandidate == false)
        #expect(request.messageIntegrityOffset == 76) // 20 header + SOFTWARE 20 + PRIORITY 8 + ICE-CONTROLLED 12 + USERNAME 16
        #expect(request.hasFingerprint)
        let copy = rfc5769Request
        copy.withUnsafeBytes { raw in
            #expect(request.hasValidIntegrity(key: rfc5769Password, in: raw))
            #expect(!request.hasValidIntegrity(key: Array("VOkJxbRl1RmTxUk/WvJxBT".utf8), in: raw))
            #expect(!request.hasValidIntegrity(key: [], in: raw))
        }
        #expect(copy == rfc5769Request, "checking integrity must not write the caller's buffer")
    }

    @Test("RFC 5769 §2.2 sample IPv4 response: 192.0.2.1:32853")
    func sampleIPv4Response() throws {
        let response = try parseResponse(rfc5769IPv4Response)
        #expect(response.isSuccess)
        #expect(response.transactionID == rfc5769TransactionID)
        #expect(response.mappedAddress == PeerAddress(ipv4: 192, 0, 2, 1, port: 32853))
        #expect(response.errorCode == nil)
        #expect(response.hasFingerprint)
        rfc5769IPv4Response.withUnsafeBytes { raw in
            #expect(response.hasValidIntegrity(key: rfc5769Password, in: raw))
            #expect(!response.hasValidIntegrity(key: Array("wrong".utf8), in: raw))
        }
    }

    @Test("RFC 5769 §2.3 sample IPv6 response: [2001:db8:1234:5678:11:2233:4455:6677]:32853")
    func sampleIPv6Response() throws {
        let response = try parseResponse(rfc5769IPv6Response)
        #expect(response.isSuccess)
        #expect(response.mappedAddress == PeerAddress(parsing: "[2001:db8:1234:5678:11:2233:4455:6677]:32853"))
        rfc5769IPv6Response.withUnsafeBytes { raw in
            #expect(response.hasValidIntegrity(key: rfc5769Password, in: raw))
        }
    }

    @Test("The relay's success response to the RFC 5769 transaction, byte for byte (checked with Python's hmac and zlib)")
    func successResponseTable() {
        let expected: [UInt8] = [
            0x01, 0x01, 0x00, 0x2c, // Binding success response, length 44
            0x21, 0x12, 0xa4, 0x42, // Magic cookie
            0xb7, 0xe7, 0xa7, 0x01, // }
            0xbc, 0x34, 0xd6, 0x86, // }  Transaction ID
            0xfa, 0x87, 0xdf, 0xae, // }
            0x00, 0x20, 0x00, 0x08, // XOR-MAPPED-ADDRESS, 8 bytes (the RFC's own bytes for 192.0.2.1:32853)
            0x00, 0x01, 0xa1, 0x47, // IPv4, X-Port
            0xe1, 0x12, 0xa6, 0x43, // X-Address
            0x00, 0x08, 0x00, 0x14, // MESSAGE-INTEGRITY, 20 bytes
            0x74, 0xc9, 0x37, 0x1e, // }
            0xbf, 0x31, 0x48, 0x54, // }
            0x85, 0x18, 0x69, 0x9c, // }  HMAC-SHA1 under the RFC 5769 password
            0x3e, 0x31, 0x74, 0xc2, // }
            0x0d, 0xd9, 0xe6, 0x8a, // }
            0x80, 0x28, 0x00, 0x04, // FINGERPRINT
            0xfa, 0xe4, 0x04, 0x3a, // CRC-32 ^ 0x5354554E
        ]
        let bytes = written { buffer in
            STUNWriter.bindingSuccess(transactionID: rfc5769TransactionID, mapped: PeerAddress(ipv4: 192, 0, 2, 1, port: 32853),
                                      integrityKey: rfc5769Password, into: buffer)
        }
        #expect(bytes == expected)
    }

    @Test("IPv6 XOR-MAPPED-ADDRESS is written as RFC 5769 §2.3 has it")
    func ipv6MappedAddressBytes() {
        let mapped = PeerAddress(parsing: "[2001:db8:1234:5678:11:2233:4455:6677]:32853")!
        let bytes = written { buffer in
            STUNWriter.bindingSuccess(transactionID: rfc5769TransactionID, mapped: mapped, integrityKey: rfc5769Password, into: buffer)
        }
        #expect(bytes.count == STUNWriter.maxResponseSize)
        #expect(Array(bytes[20..<44]) == Array(rfc5769IPv6Response[36..<60]))
    }

    @Test("RFC 7983 demultiplexing: 0...3 is STUN", arguments: [
        (UInt8(0), true), (1, true), (3, true), // STUN
        (4, false), (19, false),                // reserved / ZRTP
        (20, false), (63, false),               // DTLS
        (128, false), (191, false),             // RTP/RTCP
    ])
    func demultiplexing(first: UInt8, isSTUN: Bool) {
        #expect(STUN.isSTUN(first) == isSTUN)
    }
}
