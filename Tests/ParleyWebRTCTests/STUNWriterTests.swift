import Testing
import ParleyWire
@testable import ParleyWebRTC

@Suite("STUN writer: round trips, sizes, amplification")
struct STUNWriterTests {
    static let relayPassword = Array("Wh4tEv3rTheRelayPicks22".utf8)
    static let transaction: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]

    @Test("request → parse: every field, integrity under the key, not under another", arguments: [true, false])
    func requestRoundTrip(useCandidate: Bool) throws {
        let username = "R3layUfr:abcd"
        let bytes = written { buffer in
            STUNWriter.bindingRequest(transactionID: Self.transaction, username: username, integrityKey: Self.relayPassword,
                                      priority: 1_853_824_767, useCandidate: useCandidate,
                                      role: .controlling(tieBreaker: 0x0102_0304_0506_0708), into: buffer)
        }
        #expect(bytes.count == STUNWriter.bindingRequestSize(username: username, useCandidate: useCandidate))
        let request = try parseRequest(bytes)
        #expect(request.transactionID == Self.transaction)
        #expect(request.username == username)
        #expect(request.priority == 1_853_824_767)
        #expect(request.useCandidate == useCandidate)
        #expect(request.iceControlling == 0x0102_0304_0506_0708 && request.iceControlled == nil)
        #expect(request.messageIntegrityOffset == bytes.count - 32)
        #expect(request.hasFingerprint)
        bytes.withUnsafeBytes { raw in
            #expect(request.hasValidIntegrity(key: Self.relayPassword, in: raw))
            #expect(!request.hasValidIntegrity(key: rfc5769Password, in: raw))
        }
    }

    @Test("response → parse: IPv4 and IPv6 mapped addresses, integrity, fingerprint", arguments: [
        "203.0.113.7:54321", "[2001:db8::1]:3478", "0.0.0.0:0", "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
    ])
    func responseRoundTrip(address: String) throws {
        let mapped = try #require(PeerAddress(parsing: address))
        let bytes = written { buffer in
            STUNWriter.bindingSuccess(transactionID: Self.transaction, mapped: mapped, integrityKey: Self.relayPassword, into: buffer)
        }
        #expect(bytes.count == STUNWriter.bindingSuccessSize(mapped: mapped))
        #expect(bytes.count == (mapped.isIPv4 ? 64 : 76))
        let response = try parseResponse(bytes)
        #expect(response.isSuccess && response.transactionID == Self.transaction)
        #expect(response.mappedAddress == mapped)
        #expect(response.hasFingerprint)
        bytes.withUnsafeBytes { #expect(response.hasValidIntegrity(key: Self.relayPassword, in: $0)) }
        #expect(errorCode { try parseRequest(bytes) } == "not_binding_request")
    }

    @Test("writing fits exactly: a buffer of bindingSuccessSize bytes is enough; maxResponseSize is 76")
    func exactBuffer() {
        #expect(STUNWriter.maxResponseSize == 76)
        let mapped = PeerAddress(parsing: "[2001:db8::1]:3478")!
        var buffer = [UInt8](repeating: 0xEE, count: STUNWriter.maxResponseSize)
        let count = buffer.withUnsafeMutableBytes {
            STUNWriter.bindingSuccess(transactionID: Self.transaction, mapped: mapped, integrityKey: Self.relayPassword, into: $0)
        }
        #expect(count == buffer.count)
    }

    @Test("an error response parses with its code")
    func errorResponse() throws {
        // ERROR-CODE 487 Role Conflict: class 4, number 87, reason "Role Conflict".
        let bytes = STUNMessageBuilder(type: 0x0111, attributes: [(0x0009, [0, 0, 4, 87] + Array("Role Conflict".utf8))],
                                       integrityKey: rfc5769Password).bytes
        let response = try parseResponse(bytes)
        #expect(!response.isSuccess && response.errorCode == 487 && response.mappedAddress == nil)
        #expect(errorCode { try parseResponse(rfc5769Request) } == "not_binding_response")
        #expect(errorCode { try parseResponse(STUNMessageBuilder(type: 0x0101, attributes: [(0x0020, [0, 3, 0, 0, 1, 2, 3, 4])]).bytes) } == "bad_stun")
    }

    @Test("an ERROR-CODE number over 99 is refused, not read as the next class (found by the stun fuzz target)",
          arguments: [([0, 0, 4, 99], 499), ([0, 0, 6, 0], 600), ([0, 0, 4, 100], nil), ([0, 0, 4, 150], nil),
                      ([0, 0, 5, 255], nil)] as [([UInt8], Int?)])
    func errorCodeNumber(value: [UInt8], code: Int?) {
        let bytes = STUNMessageBuilder(type: 0x0111, attributes: [(0x0009, value + Array("Reason".utf8))]).bytes
        #expect((try? parseResponse(bytes))?.errorCode == code)
        if code == nil { #expect(errorCode { try parseResponse(bytes) } == "bad_stun") }
    }

    @Test("what the stun fuzz target found: a success response whose ERROR-CODE (class 5, number 150) read as 650")
    func errorCodeFound() {
        let found: [UInt8] = [
            0x01, 0x01, 0x00, 0x14, // Binding success, 20 bytes of attributes
            0x21, 0x12, 0xa4, 0x42, // magic cookie
            0xb7, 0xe7, 0xa7, 0x01, 0xbc, 0x34, 0xd6, 0x86, 0xfa, 0x87, 0xdf, 0xae, // transaction ID
            0x00, 0x09, 0x00, 0x08, // ERROR-CODE, 8 bytes
            0x00, 0x01, 0x0d, 0x96, // reserved, class 5 (0x0d & 7), number 150
            0xc0, 0x00, 0x02, 0x01, // reason (4 bytes)
            0xff, 0xff, 0x00, 0x04, // a comprehension-optional attribute, 4 bytes
            0xb5, 0xe4, 0x2e, 0x26,
        ]
        #expect(errorCode { try parseResponse(found) } == "bad_stun")
    }

    /// A check as Chrome sends it to an ICE-lite peer once it nominates: USERNAME `<relay ufrag>:<chrome ufrag>`,
    /// GOOG-NETWORK-INFO, ICE-CONTROLLING, USE-CANDIDATE, PRIORITY, MESSAGE-INTEGRITY, FINGERPRINT.
    static let chromeCheck = STUNMessageBuilder(attributes: [
        (0x0006, Array("R3layUfr:Ab1+".utf8)),       // USERNAME, 13 bytes + 3 padding
        (0xC057, [0x00, 0x01, 0x00, 0x0A]),           // GOOG-NETWORK-INFO: network id 1, cost 10
        (0x802A, [0x5B, 0x1F, 0x0E, 0x33, 0x9C, 0x21, 0x47, 0x02]), // ICE-CONTROLLING tie-breaker
        (0x0025, []),                                 // USE-CANDIDATE
        (0x0024, [0x6E, 0x7F, 0x1E, 0xFF]),           // PRIORITY (prflx)
    ], integrityKey: relayPassword)

    @Test("amplification: the answer to a Chrome-like check is no larger than the check, for IPv4 and IPv6")
    func noAmplification() throws {
        let check = Self.chromeCheck.bytes
        let request = try parseRequest(check)
        check.withUnsafeBytes { #expect(request.hasValidIntegrity(key: Self.relayPassword, in: $0)) }
        #expect(request.useCandidate && request.iceControlling == 0x5B1F_0E33_9C21_4702 && request.isConnectivityCheck)
        for address in ["198.51.100.20:61000", "[2001:db8::20]:61000"] {
            let response = written { buffer in
                STUNWriter.bindingSuccess(transactionID: request.transactionID, mapped: PeerAddress(parsing: address)!,
                                          integrityKey: Self.relayPassword, into: buffer)
            }
            #expect(response.count <= check.count, "\(address): \(response.count) > \(check.count)")
        }
        // The smallest request the relay answers (MESSAGE-INTEGRITY verified, so USERNAME, PRIORITY and an ICE role
        // present, RFC 8445 §7.1.1) is still no smaller than the largest response.
        #expect(STUNWriter.bindingRequestSize(username: "a", useCandidate: false) >= STUNWriter.maxResponseSize)
        // A signed request without PRIORITY and a role is smaller than a response: it is not a check, not answered.
        let short = STUNMessageBuilder(attributes: [(0x0006, Array("a:b".utf8))], integrityKey: Self.relayPassword).bytes
        #expect(short.count < STUNWriter.bindingSuccessSize(mapped: PeerAddress(ipv4: 192, 0, 2, 1, port: 1)))
        #expect(try !parseRequest(short).isConnectivityCheck)
        #expect(try parseRequest(rfc5769Request).isConnectivityCheck)
    }
}
