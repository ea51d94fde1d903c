import ParleyWire

/// Writes the STUN messages of ICE-lite into caller-owned buffers: the relay's Binding success response, and a
/// Binding request (the relay's own checks of an address and its consent checks, RFC 7675; a controlling peer's checks
/// in tests). Every message ends with MESSAGE-INTEGRITY and FINGERPRINT.
///
/// Amplification: a success response is 64 bytes (IPv4) or 76 (IPv6), `maxResponseSize`. The relay answers only a
/// request that `isConnectivityCheck` and whose MESSAGE-INTEGRITY verifies; such a request carries at least USERNAME
/// (8), PRIORITY (8), ICE-CONTROLLING or ICE-CONTROLLED (12), MESSAGE-INTEGRITY (24) and FINGERPRINT (8) after its
/// 20-byte header: 80 bytes, so no answer is larger than the request it answers.
public enum STUNWriter {
    /// The largest Binding success response: header, XOR-MAPPED-ADDRESS with an IPv6 address, MESSAGE-INTEGRITY,
    /// FINGERPRINT.
    public static let maxResponseSize = STUN.headerSize + 4 + 20 + trailerSize

    /// The message type of a Binding success response (the first two bytes): how a demultiplexer tells an answer
    /// from a check without parsing.
    public static let bindingSuccessType = STUNLayout.bindingSuccess

    /// MESSAGE-INTEGRITY and FINGERPRINT attributes.
    static let trailerSize = STUNMessageIntegrity.attributeSize + STUNLayout.attributeHeaderSize + STUNLayout.fingerprintSize

    /// Size of the success response `bindingSuccess` writes for `mapped`: 64 bytes for IPv4, 76 for IPv6.
    public static func bindingSuccessSize(mapped: PeerAddress) -> Int {
        STUN.headerSize + STUNLayout.attributeHeaderSize + (mapped.isIPv4 ? 8 : 20) + trailerSize
    }

    /// Writes a Binding success response (0x0101) to the request `transactionID`: XOR-MAPPED-ADDRESS `mapped`,
    /// MESSAGE-INTEGRITY under `integrityKey` (the relay's ice-pwd), FINGERPRINT. Returns the bytes written,
    /// `bindingSuccessSize(mapped:)`; `buffer` must hold that many (at most `maxResponseSize`).
    public static func bindingSuccess(
        transactionID: [UInt8], mapped: PeerAddress, integrityKey: [UInt8], into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        precondition(buffer.count >= bindingSuccessSize(mapped: mapped), "STUN response buffer too small")
        writeHeader(STUNLayout.bindingSuccess, transactionID: transactionID, into: buffer)
        var offset = STUN.headerSize
        // |0 0 0 0 0 0 0 0|    Family     |         X-Port                |  then X-Address (RFC 8489 §14.2)
        let cookie = STUN.magicCookie
        let port = mapped.port ^ UInt16(cookie >> 16)
        if mapped.isIPv4 {
            buffer.stunSet(STUNLayout.xorMappedAddress, at: offset)
            buffer.stunSet(UInt16(8), at: offset + 2)
            buffer.stunSet(UInt16(STUNLayout.familyIPv4), at: offset + 4)
            buffer.stunSet(port, at: offset + 6)
            buffer.stunSet(mapped.ipv4Value ^ cookie, at: offset + 8)
            offset += 12
        } else {
            buffer.stunSet(STUNLayout.xorMappedAddress, at: offset)
            buffer.stunSet(UInt16(20), at: offset + 2)
            buffer.stunSet(UInt16(STUNLayout.familyIPv6), at: offset + 4)
            buffer.stunSet(port, at: offset + 6)
            // XORed with the cookie and the transaction ID: exactly the 16 header bytes from offset 4.
            let address = mapped.addressBytes
            for i in 0..<16 { buffer[offset + 8 + i] = address[i] ^ buffer[4 + i] }
            offset += 24
        }
        return writeTrailer(at: offset, integrityKey: integrityKey, into: buffer)
    }

    /// Size of the request `bindingRequest` writes.
    public static func bindingRequestSize(username: String, useCandidate: Bool) -> Int {
        STUN.headerSize
            + STUNLayout.attributeHeaderSize + ((username.utf8.count + 3) & ~3) // USERNAME
            + 8 // PRIORITY
            + 12 // ICE-CONTROLLING or ICE-CONTROLLED
            + (useCandidate ? 4 : 0) // USE-CANDIDATE
            + trailerSize
    }

    /// Writes a Binding request (0x0001) as an ICE agent in `role` sends it: USERNAME (at most 513 bytes),
    /// PRIORITY, ICE-CONTROLLING or ICE-CONTROLLED with the role's tie-breaker, USE-CANDIDATE when `useCandidate`
    /// (a controlling agent's nomination), MESSAGE-INTEGRITY under `integrityKey` (the remote ice-pwd), FINGERPRINT.
    /// Returns the bytes written, `bindingRequestSize(…)`.
    public static func bindingRequest(
        transactionID: [UInt8], username: String, integrityKey: [UInt8], priority: UInt32, useCandidate: Bool,
        role: ICERole, into buffer: UnsafeMutableRawBufferPointer
    ) -> Int {
        let name = Array(username.utf8)
        precondition(name.count <= STUNLayout.maxUsernameSize, "STUN USERNAME longer than 513 bytes")
        precondition(buffer.count >= bindingRequestSize(username: username, useCandidate: useCandidate),
                     "STUN request buffer too small")
        writeHeader(STUNLayout.bindingRequest, transactionID: transactionID, into: buffer)
        var offset = STUN.headerSize
        buffer.stunSet(STUNLayout.username, at: offset)
        buffer.stunSet(UInt16(name.count), at: offset + 2)
        let padded = (name.count + 3) & ~3
        for i in 0..<padded { buffer[offset + 4 + i] = i < name.count ? name[i] : 0 }
        offset += 4 + padded
        buffer.stunSet(STUNLayout.priority, at: offset)
        buffer.stunSet(UInt16(4), at: offset + 2)
        buffer.stunSet(priority, at: offset + 4)
        offset += 8
        switch role {
        case .controlling(let tieBreaker):
            buffer.stunSet(STUNLayout.iceControlling, at: offset)
            buffer.stunSet(tieBreaker, at: offset + 4)
        case .controlled(let tieBreaker):
            buffer.stunSet(STUNLayout.iceControlled, at: offset)
            buffer.stunSet(tieBreaker, at: offset + 4)
        }
        buffer.stunSet(UInt16(8), at: offset + 2)
        offset += 12
        if useCandidate {
            buffer.stunSet(STUNLayout.useCandidate, at: offset)
            buffer.stunSet(UInt16(0), at: offset + 2)
            offset += 4
        }
        return writeTrailer(at: offset, integrityKey: integrityKey, into: buffer)
    }

    /// An ICE agent's role in a check and its tie-breaker (RFC 8445 §7.1.3): the relay, ICE-lite, is always
    /// controlled; the browsers it serves control.
    public enum ICERole: Sendable, Equatable {
        case controlling(tieBreaker: UInt64)
        case controlled(tieBreaker: UInt64)
    }

    /// Type, a zero length (the trailer sets it), cookie, transaction ID.
    private static func writeHeader(_ type: UInt16, transactionID: [UInt8], into buffer: UnsafeMutableRawBufferPointer) {
        precondition(transactionID.count == STUN.transactionIDSize, "a STUN transaction ID is 12 bytes")
        buffer.stunSet(type, at: 0)
        buffer.stunSet(UInt16(0), at: 2)
        buffer.stunSet(STUN.magicCookie, at: 4)
        for i in 0..<STUN.transactionIDSize { buffer[8 + i] = transactionID[i] }
    }

    /// Appends MESSAGE-INTEGRITY and FINGERPRINT after the attributes ending at `offset`, setting the header's
    /// length as each requires (RFC 8489 §14.5, §14.7). Returns the message size.
    private static func writeTrailer(at offset: Int, integrityKey: [UInt8], into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let fingerprintOffset = offset + STUNMessageIntegrity.attributeSize
        let end = fingerprintOffset + STUNLayout.attributeHeaderSize + STUNLayout.fingerprintSize
        buffer.stunSet(UInt16(fingerprintOffset - STUN.headerSize), at: 2)
        STUNMessageIntegrity.hmac(key: integrityKey, message: UnsafeRawBufferPointer(rebasing: buffer[0..<offset]),
                                  into: buffer.baseAddress! + offset + STUNLayout.attributeHeaderSize)
        buffer.stunSet(STUNLayout.messageIntegrity, at: offset)
        buffer.stunSet(UInt16(STUNLayout.messageIntegritySize), at: offset + 2)
        buffer.stunSet(UInt16(end - STUN.headerSize), at: 2)
        let fingerprint = STUNFingerprint.value(over: UnsafeRawBufferPointer(rebasing: buffer[0..<fingerprintOffset]))
        buffer.stunSet(STUNLayout.fingerprint, at: fingerprintOffset)
        buffer.stunSet(UInt16(STUNLayout.fingerprintSize), at: fingerprintOffset + 2)
        buffer.stunSet(fingerprint, at: fingerprintOffset + 4)
        return end
    }
}
