// libFuzzer target for the bodies nodes send each other over a cascade link, inside `CascadeCipher`
// (Sources/ParleyRelayCore/CascadeMessage.swift): `CascadeMessage(parsing:)` for every kind (media, roster, mix, text,
// invite, hangup, callStatus, directText), then `bytes` → parse round trips and the packet path's in-place prefix
// writers.
//
// A node passes what it parsed on to its own members as signalling (texts, incoming calls, call statuses), so an
// accepted message must hold values within the bounds ParleyWire documents for them: a `TextFragment` of 1…5
// fragments (what `Signalling.maxTextBytes` needs) with at most 900 bytes and its attachment ids on the first fragment
// only, a `CallKeyShare` absent or 32 bytes, a `CallStatus` naming a room and token exactly when answered.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleyWire/*.swift into one module named ParleyWire (the file's
// own `import ParleyWire` is then ignored; internal API is visible): CascadeMessage.swift needs nothing else of
// ParleyRelayCore. Invariant violations trap through `precondition`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard let message = CascadeMessage(parsing: input) else { return 0 }
    checkBounds(message)

    // The writer's bytes parse back. Strings are read as UTF-8 with repair (U+FFFD, 3 bytes for each bad byte) and
    // written cut to 255 bytes, so the value comes back the same unless repair made a string longer than that; the
    // bytes are a fixed point either way.
    let bytes = message.bytes
    guard let back = bytes.withUnsafeBytes({ CascadeMessage(parsing: $0) }) else {
        preconditionFailure("\(message)'s bytes do not parse")
    }
    let strings = strings(of: message)
    precondition(back == message || strings.contains { $0.utf8.count > 255 },
                 "round trip changed \(message) into \(back)")
    precondition(back.bytes == bytes, "the writer's bytes are not a fixed point")

    // The bytes are the input's, but for repaired UTF-8 and the room of a presence kind (always written empty; read,
    // and not kept, whatever it was).
    var expected = Array(input)
    if CascadeMessage.isPresence(input[0]) {
        expected.removeSubrange(1..<(2 + Int(input[1])))
        expected.insert(0, at: 1)
    }
    precondition(bytes == expected || strings.contains { $0.unicodeScalars.contains("\u{FFFD}") },
                 "\(message) written as other bytes")

    // The packet path writes the media and mix prefixes in place: the same bytes as `bytes` up to the packet.
    switch message {
    case .media(let room, let origin, let level, let rtp):
        let prefix = prefixed { CascadeMessage.writeMediaPrefix(room: room, origin: origin, level: level, into: $0) }
        precondition(prefix + rtp == bytes, "writeMediaPrefix disagrees with bytes")
    case .mix(let room, let target, let frame, let rtp):
        let prefix = prefixed { CascadeMessage.writeMixPrefix(room: room, target: target, frame: frame, into: $0) }
        precondition(prefix + rtp == bytes, "writeMixPrefix disagrees with bytes")
    default:
        break
    }
    return 0
}

/// What an accepted message may carry (see the header).
private func checkBounds(_ message: CascadeMessage) {
    switch message {
    case .media, .mix, .hangup:
        break
    case .roster(_, let roster):
        precondition(roster.parts >= 1 && roster.part < roster.parts, "roster part \(roster.part) of \(roster.parts)")
    case .text(_, _, _, let fragment), .directText(_, _, let fragment):
        checkFragment(fragment)
    case .invite(_, _, _, _, let keyShare):
        precondition(keyShare.isEmpty || keyShare.count == CallKeyShare.length,
                     "an invite's key share of \(keyShare.count) bytes")
    case .callStatus(_, let status):
        precondition(status.keyShare.isEmpty || status.keyShare.count == CallKeyShare.length,
                     "a call status's key share of \(status.keyShare.count) bytes")
        precondition((status.state == .answered) == !status.room.isEmpty && status.room.isEmpty == status.token.isEmpty,
                     "\(status.state) with room \"\(status.room)\", a token of \(status.token.utf8.count) bytes")
    }
}

private func checkFragment(_ fragment: TextFragment) {
    let maxFragments = (Signalling.maxTextBytes + Signalling.maxTextFragmentBytes - 1) / Signalling.maxTextFragmentBytes
    precondition(fragment.count >= 1 && Int(fragment.count) <= maxFragments, "a text of \(fragment.count) fragments")
    precondition(fragment.index < fragment.count, "fragment \(fragment.index) of \(fragment.count)")
    precondition(fragment.chunk.count <= Signalling.maxTextFragmentBytes, "a fragment of \(fragment.chunk.count) bytes")
    precondition(TextAttachments.areValid(fragment.attachments)
                 && (fragment.attachments.isEmpty || fragment.index == 0),
                 "attachments \(fragment.attachments) on fragment \(fragment.index)")
}

/// Every string a message carries.
private func strings(of message: CascadeMessage) -> [String] {
    switch message {
    case .media(let room, _, _, _), .mix(let room, _, _, _): [room]
    case .roster(let room, let roster): [room] + roster.members.flatMap { [$0.identity, $0.name] }
    case .text(let room, _, let to, let fragment): [room, to] + fragment.attachments
    case .invite(_, let caller, let name, let callee, _): [caller, name, callee]
    case .hangup(_, let identity): [identity]
    case .callStatus(let to, let status): [to, status.reason, status.room, status.token]
    case .directText(let from, let to, let fragment): [from, to] + fragment.attachments
    }
}

/// What a prefix writer writes into a fresh buffer (kind, a room of at most 255 bytes, at most 8 more).
private func prefixed(_ write: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
    var buffer = [UInt8](repeating: 0xEE, count: 1 + 256 + 8)
    let n = buffer.withUnsafeMutableBytes { write($0) }
    return Array(buffer[..<n])
}
