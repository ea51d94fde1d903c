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

    // Walk the extension block once: every element lies inside it, after the one before. `extensionElement(id:)`
    // finds the first element of each id seen and nothing for an id the block lacks. (One lookup per id present
    // plus two absent ones, not 256: the lookups' traced comparisons cost most of an execution.)
    let extensionRange = view.extensionOffset..<(view.extensionOffset + view.extensionCount)
    var seen = IDSet()
    if let profile = view.extensionProfile, let form = RTPExtensionForm(profile: profile) {
        var walker = RTPExtensionElementWalker(bytes: view.bytes, form: form, start: extensionRange.lowerBound, end: extensionRange.upperBound)
        var previousEnd = extensionRange.lowerBound
        while true {
            let next: (id: UInt8, data: Range<Int>)?
            do { next = try walker.next() } catch { preconditionFailure("an element of a parsed packet runs past its block: \(error)") }
            guard let element = next else { break }
            precondition(element.data.lowerBound > previousEnd && element.data.upperBound <= extensionRange.upperBound,
                         "element data outside the extension block, or overlapping the one before")
            previousEnd = element.data.upperBound
            for offset in element.data { sink &+= UInt32(view.bytes[offset]) }
            if seen.insert(element.id) {
                precondition(view.extensionElement(id: element.id) == element.data, "lookup by id did not find the first element")
                if (1...14).contains(element.id) { sink &+= levels(view, id: element.id) }
            }
        }
    } else {
        precondition(view.extensionElement(id: 1) == nil, "element found in an opaque or absent extension")
    }
    for id in [seen.firstAbsent(from: 1), seen.firstAbsent(from: 255)] {
        precondition(view.extensionElement(id: id) == nil && view.audioLevel(id: id) == nil, "found an element the walk did not")
        precondition(view.csrcAudioLevels(id: id) { _, _ in preconditionFailure("CSRC levels from an absent element") } == 0,
                     "CSRC levels from an absent element")
    }
    blackHole(sink)
}

/// The RFC 6464 and RFC 6465 readings of element `id`, checked; returns a checksum of what they read.
private func levels(_ view: RTPPacketView, id: UInt8) -> UInt32 {
    var sink: UInt32 = 0
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
    return sink &+ UInt32(visited)
}

/// A set of extension element ids (0–255) in four words, without allocating.
private struct IDSet {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    func contains(_ id: UInt8) -> Bool {
        let bit = UInt64(1) << UInt64(id & 63)
        switch id >> 6 {
        case 0: return words.0 & bit != 0
        case 1: return words.1 & bit != 0
        case 2: return words.2 & bit != 0
        default: return words.3 & bit != 0
        }
    }

    /// Adds `id`; returns whether it was new.
    mutating func insert(_ id: UInt8) -> Bool {
        guard !contains(id) else { return false }
        let bit = UInt64(1) << UInt64(id & 63)
        switch id >> 6 {
        case 0: words.0 |= bit
        case 1: words.1 |= bit
        case 2: words.2 |= bit
        default: words.3 |= bit
        }
        return true
    }

    /// The first id from `start` on (wrapping) that is not in the set.
    func firstAbsent(from start: UInt8) -> UInt8 {
        var id = start
        while contains(id) { id &+= 1 }
        return id
    }
}

@inline(never)
private func blackHole(_ value: UInt32) { _ = value }
