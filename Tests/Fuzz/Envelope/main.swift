// libFuzzer target for the version 2 envelope, the first parser every signalling datagram meets:
// `EnvelopeView(parsing:)`, each of its accessors (`helloNonce`, `cookieAnswer`, `initiation`) on every input whatever
// its kind, and the writers of `SignallingEnvelope` (hello, cookie answer, initiation, a header before a response or
// sealed body), whose output must parse back to what they were given.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleyWire/*.swift into one module (no `import ParleyWire`;
// internal API is visible). Invariant violations trap through `precondition`. The sealed body itself
// (ChaCha20-Poly1305, `SealedChannel`) is ParleyCrypto's and not opened here: the envelope only frames it.

private typealias Envelope = SignallingEnvelope

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let view: EnvelopeView
    do {
        view = try EnvelopeView(parsing: bytes)
    } catch {
        checkRefusal(error, bytes)
        return 0
    }
    precondition(Envelope.isEnvelope(bytes), "parsed a datagram that does not start like version 2")
    precondition(size >= Envelope.headerSize && size <= Signalling.maxDatagramSize, "accepted a datagram of bad size")
    precondition(view.kind.rawValue == bytes[2], "kind is not byte 2")
    let connectionID = UInt32(bytes[4]) << 24 | UInt32(bytes[5]) << 16 | UInt32(bytes[6]) << 8 | UInt32(bytes[7])
    precondition(view.connectionID == connectionID, "connection id is not bytes 4..<8")
    precondition(view.body.count == size - Envelope.headerSize
                 && view.body.baseAddress == bytes.baseAddress! + Envelope.headerSize,
                 "body is not everything after the header")

    // Every accessor on every kind: the kind's own may succeed, the others must refuse.
    checkHello(view)
    checkCookieAnswer(view)
    checkInitiation(view)

    // The header writer, as the response and sealed datagrams are built (header + body), reproduces the datagram but
    // for the flags byte (the parser ignores it, the writer writes 0) and, outside sealed datagrams, the connection id.
    let written = view.kind == .sealed ? view.connectionID : 0
    let rebuilt = Envelope.header(view.kind, connectionID: written) + Array(view.body)
    precondition(rebuilt.count == size, "header + body is not the datagram's size")
    rebuilt.withUnsafeBytes { raw in
        guard let again = try? EnvelopeView(parsing: raw) else {
            preconditionFailure("a rebuilt datagram does not parse")
        }
        precondition(again.kind == view.kind && again.connectionID == written && again.body.elementsEqual(view.body),
                     "a rebuilt datagram parses differently")
    }
    return 0
}

/// Why the parser refused: exactly the documented reason, in the documented order (size, version, kind).
private func checkRefusal(_ error: WireError, _ bytes: UnsafeRawBufferPointer) {
    let expected: WireError
    if bytes.count < Envelope.headerSize {
        expected = .truncated
    } else if bytes.count > Signalling.maxDatagramSize {
        expected = .badLength
    } else if !Envelope.isEnvelope(bytes) {
        expected = .badVersion
    } else {
        precondition(Envelope.Kind(rawValue: bytes[2]) == nil, "refused a datagram of a known kind: \(error)")
        expected = .unknownType
    }
    precondition(error == expected, "refused with \(error), not \(expected)")
}

/// A hello's nonce: only from a hello of exactly `helloSize` bytes; `hello(nonce:)` writes one that reads back.
private func checkHello(_ view: EnvelopeView) {
    let exact = view.kind == .hello && view.body.count == Envelope.helloSize - Envelope.headerSize
    switch Result(catching: { () throws(WireError) in try view.helloNonce() }) {
    case .success(let nonce):
        precondition(exact, "a nonce from something other than a \(Envelope.helloSize)-byte hello")
        precondition(nonce.count == Envelope.nonceLength && nonce.elementsEqual(view.body.prefix(Envelope.nonceLength)),
                     "the nonce is not the body's first 16 bytes")
        let hello = Envelope.hello(nonce: nonce)
        precondition(hello.count == Envelope.helloSize, "hello(nonce:) is not helloSize bytes")
        precondition(hello[Envelope.headerSize...].dropFirst(Envelope.nonceLength).allSatisfy { $0 == 0 },
                     "hello padding is not zero")
        let back = hello.withUnsafeBytes { raw in
            Result { () throws(WireError) in try EnvelopeView(parsing: raw).helloNonce() }
        }
        precondition(back == .success(nonce), "hello(nonce:) does not read back: \(back)")
    case .failure(let error):
        precondition(!exact, "a \(Envelope.helloSize)-byte hello refused: \(error)")
        precondition(error == .badLength, "helloNonce refused with \(error), not badLength")
    }
}

/// A cookie answer: a cookie of 1 to `maxCookieLength` bytes, then the 32-byte key; `cookieAnswer(cookie:relayKey:)`
/// writes the same datagram (but for the ignored flags and connection id).
private func checkCookieAnswer(_ view: EnvelopeView) {
    let keyLength = Envelope.publicKeyLength
    let fits = view.kind == .cookie && view.body.count > keyLength
        && view.body.count - keyLength <= Envelope.maxCookieLength
    switch Result(catching: { () throws(WireError) in try view.cookieAnswer() }) {
    case .success(let (cookie, relayKey)):
        precondition(fits, "a cookie answer read from a datagram that is not one")
        precondition((1...Envelope.maxCookieLength).contains(cookie.count) && relayKey.count == keyLength,
                     "cookie or key length out of bounds")
        precondition((cookie + relayKey).elementsEqual(view.body), "cookie ‖ key is not the body")
        let answer = Envelope.cookieAnswer(cookie: cookie, relayKey: relayKey)
        precondition(answer == Envelope.header(.cookie) + Array(view.body),
                     "cookieAnswer(cookie:relayKey:) writes other bytes")
        let back = answer.withUnsafeBytes { raw in
            Result { () throws(WireError) in try EnvelopeView(parsing: raw).cookieAnswer() }
        }
        guard case .success(let again) = back, again.cookie == cookie, again.relayKey == relayKey else {
            preconditionFailure("cookieAnswer(cookie:relayKey:) does not read back: \(back)")
        }
    case .failure(let error):
        precondition(!fits, "a cookie answer refused: \(error)")
        precondition(error == .badLength, "cookieAnswer refused with \(error), not badLength")
    }
}

/// An initiation: the cookie's length byte (at most `maxCookieLength`), the cookie, the Noise message (any length, even
/// none: the handshake refuses a short one); `initiation(cookie:noiseMessage:)` writes the same datagram.
private func checkInitiation(_ view: EnvelopeView) {
    let declared = view.body.first.map(Int.init)
    let expected: WireError?
    if view.kind != .initiation || declared == nil {
        expected = .truncated
    } else if declared! > Envelope.maxCookieLength || view.body.count < 1 + declared! {
        expected = .badLength
    } else {
        expected = nil
    }
    switch Result(catching: { () throws(WireError) in try view.initiation() }) {
    case .success(let (cookie, noiseMessage)):
        precondition(expected == nil, "an initiation read from a datagram that is not one")
        precondition(cookie.count == declared! && 1 + cookie.count + noiseMessage.count == view.body.count,
                     "cookie and Noise message do not split the body")
        let initiation = Envelope.initiation(cookie: cookie, noiseMessage: noiseMessage)
        precondition(initiation == Envelope.header(.initiation) + Array(view.body),
                     "initiation(cookie:noiseMessage:) writes other bytes")
        let back = initiation.withUnsafeBytes { raw in
            Result { () throws(WireError) in try EnvelopeView(parsing: raw).initiation() }
        }
        guard case .success(let again) = back, again.cookie == cookie, again.noiseMessage == noiseMessage else {
            preconditionFailure("initiation(cookie:noiseMessage:) does not read back: \(back)")
        }
    case .failure(let error):
        precondition(error == expected, "initiation refused with \(error), not \(String(describing: expected))")
    }
}
