// libFuzzer target for STUN as the relay's ICE-lite agent reads it (Sources/ParleyWebRTC): `STUNBindingRequest` and
// `STUNBindingResponse` on every input, and on the input re-signed (its MESSAGE-INTEGRITY and FINGERPRINT recomputed,
// so that mutations get past the CRC), `hasValidIntegrity` (HMAC-SHA1 through OpenSSL) on whatever parsed, the
// MESSAGE-INTEGRITY check's own bounds at an offset taken from the input, and `STUNWriter`'s request and success
// response rebuilt from what parsed: they must parse back to the same fields with valid integrity.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleyWebRTC/*.swift and Sources/ParleyWire/*.swift into one
// module named ParleyWire (the files' own `import ParleyWire` is then ignored; internal API is visible), with
// `-I Sources/COpenSSL` for the COpenSSL module map and `-lssl -lcrypto`. Invariant violations trap through
// `precondition`.

/// The relay's ice-pwd in these checks, and a key that must never verify what it signed.
private let key = Array("fuzzFUZZfuzzFUZZfuzz+/".utf8)
private let wrongKey = Array("fuzzFUZZfuzzFUZZfuzz+0".utf8)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    // Path 1: the input as it is (a mutation almost always breaks the CRC, so most stop at FINGERPRINT).
    parseBoth(bytes, signedAt: nil)
    // Path 2: the input with its trailer made right, when it has one: the header's length, MESSAGE-INTEGRITY under
    // `key` and FINGERPRINT recomputed (as a peer that knows the key would send it), so mutations inside the message
    // reach everything after the CRC, and a signed request or response must verify.
    if let (signed, integrityAt) = resigned(bytes) {
        signed.withUnsafeBytes { parseBoth($0, signedAt: integrityAt) }
    }

    // The integrity check's bounds on any offset, whatever the message: it refuses, never reads past the bytes.
    if size >= 2 {
        let offset = Int(bytes[size - 1]) << 2 | Int(bytes[size - 2] & 0x03)
        _ = STUNMessageIntegrity.isValid(key: key, attributeOffset: offset, in: bytes)
    }
    return 0
}

/// Both parsers on `bytes`; when `signedAt` is the offset of a MESSAGE-INTEGRITY computed under `key`, a message whose
/// MESSAGE-INTEGRITY the parser finds there must verify.
private func parseBoth(_ bytes: UnsafeRawBufferPointer, signedAt: Int?) {
    let request = try? STUNBindingRequest(parsing: bytes)
    let response = try? STUNBindingResponse(parsing: bytes)
    precondition(request == nil || response == nil, "one message parsed as a request and as a response")
    if let request {
        check(request, bytes)
        if signedAt != nil, request.messageIntegrityOffset == signedAt {
            precondition(request.hasValidIntegrity(key: key, in: bytes), "a signed request fails its integrity")
        }
    }
    if let response {
        check(response, bytes)
        if signedAt != nil, response.messageIntegrityOffset == signedAt {
            precondition(response.hasValidIntegrity(key: key, in: bytes), "a signed response fails its integrity")
        }
    }
}

/// `bytes` with the header's length fixed and, when it ends in FINGERPRINT, the CRC recomputed, and MESSAGE-INTEGRITY
/// too when that is just before it (with its offset then); nil when it does not end in FINGERPRINT or is not 4-byte
/// aligned.
private func resigned(_ bytes: UnsafeRawBufferPointer) -> ([UInt8], Int?)? {
    let size = bytes.count
    guard size >= STUN.headerSize + 8, size % 4 == 0 else { return nil }
    let fingerprintAt = size - 8
    guard bytes.stunUInt16(at: fingerprintAt) == STUNLayout.fingerprint,
          bytes.stunUInt16(at: fingerprintAt + 2) == UInt16(STUNLayout.fingerprintSize) else { return nil }
    var out = Array(bytes)
    var signedAt: Int?
    out.withUnsafeMutableBytes { buffer in
        let integrityAt = fingerprintAt - STUNMessageIntegrity.attributeSize
        let read = UnsafeRawBufferPointer(buffer)
        if integrityAt >= STUN.headerSize, read.stunUInt16(at: integrityAt) == STUNLayout.messageIntegrity,
           read.stunUInt16(at: integrityAt + 2) == UInt16(STUNLayout.messageIntegritySize) {
            buffer.stunSet(UInt16(fingerprintAt - STUN.headerSize), at: 2)
            STUNMessageIntegrity.hmac(key: key, message: UnsafeRawBufferPointer(rebasing: buffer[0..<integrityAt]),
                                      into: buffer.baseAddress! + integrityAt + STUNLayout.attributeHeaderSize)
            signedAt = integrityAt
        }
        buffer.stunSet(UInt16(size - STUN.headerSize), at: 2)
        let crc = STUNFingerprint.value(over: UnsafeRawBufferPointer(rebasing: buffer[0..<fingerprintAt]))
        buffer.stunSet(crc, at: fingerprintAt + 4)
    }
    return (out, signedAt)
}

/// What every parsed message holds: a valid header, its integrity and fingerprint attributes where the parser says.
private func checkCommon(_ bytes: UnsafeRawBufferPointer, transactionID: [UInt8], integrityOffset: Int?,
                         hasFingerprint: Bool) {
    precondition(STUN.isSTUN(bytes[0]), "a STUN message the demultiplexer would not take for STUN")
    precondition(bytes.count >= STUN.headerSize && (bytes.count - STUN.headerSize) % 4 == 0, "bad message size")
    precondition(Int(bytes.stunUInt16(at: 2)) == bytes.count - STUN.headerSize, "header length disagrees")
    precondition(transactionID.count == STUN.transactionIDSize && transactionID.elementsEqual(bytes[8..<20]),
                 "transaction ID")
    let trailer = hasFingerprint ? STUNLayout.attributeHeaderSize + STUNLayout.fingerprintSize : 0
    if let offset = integrityOffset {
        precondition(offset >= STUN.headerSize && offset % 4 == 0, "MESSAGE-INTEGRITY misaligned")
        precondition(offset + STUNMessageIntegrity.attributeSize + trailer == bytes.count,
                     "something other than FINGERPRINT follows MESSAGE-INTEGRITY")
        precondition(bytes.stunUInt16(at: offset) == STUNLayout.messageIntegrity
                     && bytes.stunUInt16(at: offset + 2) == UInt16(STUNLayout.messageIntegritySize),
                     "not a MESSAGE-INTEGRITY attribute")
    }
    if hasFingerprint {
        let at = bytes.count - 8
        precondition(bytes.stunUInt16(at: at) == STUNLayout.fingerprint && bytes.stunUInt16(at: at + 2) == 4,
                     "FINGERPRINT is not last")
        let crc = STUNFingerprint.value(over: UnsafeRawBufferPointer(rebasing: bytes[0..<at]))
        precondition(bytes.stunUInt32(at: at + 4) == crc, "a wrong FINGERPRINT was taken")
    }
}

private func check(_ request: STUNBindingRequest, _ bytes: UnsafeRawBufferPointer) {
    checkCommon(bytes, transactionID: request.transactionID, integrityOffset: request.messageIntegrityOffset,
                hasFingerprint: request.hasFingerprint)
    if let username = request.username {
        precondition(username.utf8.count <= STUNLayout.maxUsernameSize, "USERNAME over 513 bytes")
    }
    precondition(request.isConnectivityCheck == (request.username != nil && request.priority != nil
                    && (request.iceControlling != nil || request.iceControlled != nil)
                    && request.messageIntegrityOffset != nil && request.hasFingerprint), "isConnectivityCheck")
    // What an answer to it may be: never larger than the check (RFC 8489 §6.3.4 amplification; `STUNWriter`'s note).
    if request.isConnectivityCheck {
        precondition(bytes.count >= STUNWriter.maxResponseSize, "a check smaller than an answer to it")
    }
    let valid = request.hasValidIntegrity(key: key, in: bytes)
    precondition(!valid || request.messageIntegrityOffset != nil, "integrity valid without MESSAGE-INTEGRITY")

    // The writer's request from these fields (one role: controlling when the input had both) reads back.
    guard let username = request.username, let priority = request.priority else { return }
    let role: STUNWriter.ICERole
    if let tieBreaker = request.iceControlling {
        role = .controlling(tieBreaker: tieBreaker)
    } else if let tieBreaker = request.iceControlled {
        role = .controlled(tieBreaker: tieBreaker)
    } else {
        return
    }
    let size = STUNWriter.bindingRequestSize(username: username, useCandidate: request.useCandidate)
    var out = [UInt8](repeating: 0xEE, count: size + 16)
    out.withUnsafeMutableBytes { buffer in
        let written = STUNWriter.bindingRequest(transactionID: request.transactionID, username: username,
                                                integrityKey: key, priority: priority,
                                                useCandidate: request.useCandidate, role: role, into: buffer)
        precondition(written == size, "bindingRequest wrote \(written) bytes, bindingRequestSize said \(size)")
        let message = UnsafeRawBufferPointer(rebasing: buffer[0..<written])
        let back: STUNBindingRequest
        do { back = try STUNBindingRequest(parsing: message) } catch {
            preconditionFailure("the writer's request does not parse: \(error)")
        }
        var expected = request
        if case .controlling = role { expected.iceControlled = nil }
        expected.messageIntegrityOffset = written - STUNWriter.trailerSize
        expected.hasFingerprint = true
        precondition(back == expected, "the writer's request reads back as \(back), not \(expected)")
        precondition(back.isConnectivityCheck, "the writer's request is not a connectivity check")
        precondition(back.hasValidIntegrity(key: key, in: message), "the writer's request fails its integrity")
        precondition(!back.hasValidIntegrity(key: wrongKey, in: message),
                     "the writer's request verifies under another key")
    }
}

private func check(_ response: STUNBindingResponse, _ bytes: UnsafeRawBufferPointer) {
    checkCommon(bytes, transactionID: response.transactionID, integrityOffset: response.messageIntegrityOffset,
                hasFingerprint: response.hasFingerprint)
    precondition(response.isSuccess == (bytes.stunUInt16(at: 0) == STUNLayout.bindingSuccess),
                 "success and type disagree")
    // ERROR-CODE is class × 100 + number (RFC 8489 §14.8: the number is 0-99), read from the first one: the value must
    // say both, so a number over 99 must not be taken (it would read as another class).
    if let code = response.errorCode {
        guard let value = firstAttribute(STUNLayout.errorCode, in: bytes) else {
            preconditionFailure("ERROR-CODE from nowhere")
        }
        let errorClass = Int(bytes[value + 2] & 0x07), number = Int(bytes[value + 3])
        precondition(number <= 99 && code == errorClass * 100 + number,
                     "ERROR-CODE class \(errorClass) number \(number) read as \(code)")
    }
    let valid = response.hasValidIntegrity(key: key, in: bytes)
    precondition(!valid || response.messageIntegrityOffset != nil, "integrity valid without MESSAGE-INTEGRITY")

    // The writer's success response to this transaction, for this address, reads back.
    guard let mapped = response.mappedAddress else { return }
    let size = STUNWriter.bindingSuccessSize(mapped: mapped)
    precondition(size <= STUNWriter.maxResponseSize, "a success response over maxResponseSize")
    var out = [UInt8](repeating: 0xEE, count: STUNWriter.maxResponseSize)
    out.withUnsafeMutableBytes { buffer in
        let written = STUNWriter.bindingSuccess(transactionID: response.transactionID, mapped: mapped,
                                                integrityKey: key, into: buffer)
        precondition(written == size, "bindingSuccess wrote \(written) bytes, bindingSuccessSize said \(size)")
        let message = UnsafeRawBufferPointer(rebasing: buffer[0..<written])
        let back: STUNBindingResponse
        do { back = try STUNBindingResponse(parsing: message) } catch {
            preconditionFailure("the writer's response does not parse: \(error)")
        }
        var expected = response
        expected.isSuccess = true
        expected.errorCode = nil
        expected.messageIntegrityOffset = written - STUNWriter.trailerSize
        expected.hasFingerprint = true
        precondition(back == expected, "the writer's response reads back as \(back), not \(expected)")
        precondition(back.hasValidIntegrity(key: key, in: message), "the writer's response fails its integrity")
        precondition(!back.hasValidIntegrity(key: wrongKey, in: message),
                     "the writer's response verifies under another key")
    }
}

/// The value offset of the first attribute of `type` (walked independently of the parser: type, length, value padded
/// to 4 bytes), nil when there is none.
private func firstAttribute(_ type: UInt16, in bytes: UnsafeRawBufferPointer) -> Int? {
    var offset = STUN.headerSize
    while offset + 4 <= bytes.count {
        let length = Int(bytes.stunUInt16(at: offset + 2))
        if bytes.stunUInt16(at: offset) == type { return offset + 4 }
        offset += 4 + (length + 3) / 4 * 4
    }
    return nil
}
