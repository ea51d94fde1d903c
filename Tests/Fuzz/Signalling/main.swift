// libFuzzer target for the signalling codec: `SignalDatagram(parsing:)`, then serialize → parse round trip.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleyWire/*.swift into one module (no `import ParleyWire`).
// Invariant violations trap through `precondition`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    let first: SignalDatagram
    do { first = try SignalDatagram(parsing: bytes) } catch { return 0 }

    precondition(size >= Signalling.headerSize && size <= Signalling.maxDatagramSize, "accepted a datagram of bad size")
    precondition(first.message.typeCode == bytes[2], "message type changed")
    precondition(first.message.isReliable == (first.sequence != 0), "reliability and sequence disagree")

    // Serialize into a maximum-size datagram buffer; everything the parser accepted must fit again.
    var buffer = [UInt8](repeating: 0xEE, count: Signalling.maxDatagramSize)
    let second: SignalDatagram = buffer.withUnsafeMutableBytes { raw in
        let written: Int
        do { written = try first.serialize(into: raw) } catch { preconditionFailure("serializing a parsed datagram failed: \(error)") }
        precondition(written >= Signalling.headerSize && written <= raw.count, "serialize returned a bad size")
        do {
            return try SignalDatagram(parsing: UnsafeRawBufferPointer(rebasing: raw[..<written]))
        } catch {
            preconditionFailure("re-parsing a serialized datagram failed: \(error)")
        }
    }
    precondition(second == first, "signalling round trip changed the datagram")

    // The Array conveniences agree with the buffer-based API.
    let array = Array(bytes)
    precondition((try? SignalDatagram(parsing: array)) == first, "Array parse disagrees")
    if let reserialized = try? first.serialized() {
        precondition((try? SignalDatagram(parsing: reserialized)) == first, "serialized() round trip disagrees")
    } else {
        preconditionFailure("serialized() failed on a parsed datagram")
    }
    return 0
}
