// libFuzzer target for the RTP parser: `RTPPacketView(parsing:)` and every accessor of a parsed view.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleyWire/*.swift into one module, so there is no
// `import ParleyWire` here and internal API is visible. Invariant violations trap through `precondition`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let view = try? RTPPacketView(parsing: bytes) else { return 0 }
    check(view, size: size)
    return 0
}

private func check(_ view: RTPPacketView, size: Int) {
    precondition(view.bytes.count == size, "view does not cover the input")
    precondition(view.version == 2, "version is not 2")
    precondition(view.csrcCount >= 0 && view.csrcCount <= 15, "CSRC count out of range")
    precondition(view.payloadType <= 127, "payload type out of range")
    precondition(view.payloadOffset >= 12 + 4 * view.csrcCount, "payload starts inside the header")
    precondition(view.payloadCount >= 0, "negative payload count")
    precondition(view.payloadOffset + view.payloadCount <= view.bytes.count, "payload runs past the packet")
    precondition(view.payloadOffset + view.payloadCount + view.paddingCount == view.bytes.count,
                 "payload + padding does not end the packet")
    precondition(view.padding == (view.paddingCount > 0), "padding flag and count disagree")
    if view.hasExtension {
        precondition(view.extensionProfile != nil, "extension bit set without a profile")
        precondition(view.extensionOffset == 12 + 4 * view.csrcCount + 4, "extension data misplaced")
        precondition(view.extensionCount % 4 == 0, "extension length is not whole words")
        precondition(view.extensionOffset + view.extensionCount == view.payloadOffset, "payload does not follow the extension")
    } else {
        precondition(view.extensionProfile == nil && view.extensionCount == 0, "extension fields without the X bit")
        precondition(view.payloadOffset == 12 + 4 * view.csrcCount, "payload does not follow the CSRCs")
    }

    let payload = view.payload
    precondition(payload.count == view.payloadCount, "payload view has the wrong size")

    var sink: UInt32 = 0
    for i in 0..<view.csrcCount { sink ^= view.csrc(at: i) }

    let extensionRange = view.extensionOffset..<(view.extensionOffset + view.extensionCount)
    for id in UInt8(0)...UInt8(255) {
        guard let range = view.extensionElement(id: id) else { continue }
        precondition(view.hasExtension, "element found without an extension")
        precondition(range.lowerBound >= extensionRange.lowerBound && range.upperBound <= extensionRange.upperBound,
                     "element data outside the extension block")
        for offset in range { sink &+= UInt32(view.bytes[offset]) }
    }
    for id in UInt8(1)...UInt8(14) {
        if let level = view.audioLevel(id: id) {
            precondition(level.level <= 127, "audio level out of range")
            sink &+= UInt32(level.level)
        }
        var visited = 0
        let reported = view.csrcAudioLevels(id: id) { index, level in
            precondition(index == visited, "CSRC levels visited out of order")
            precondition(level <= 127, "CSRC audio level out of range")
            visited += 1
        }
        precondition(reported == visited, "csrcAudioLevels count disagrees with visits")
    }
    blackHole(sink)
}

@inline(never)
private func blackHole(_ value: UInt32) { _ = value }
