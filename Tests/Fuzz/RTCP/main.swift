// libFuzzer target for RTCP: compound iteration plus every packet parser, with serialize→parse round trips.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleyWire/*.swift into one module (no `import ParleyWire`;
// internal API is visible). Invariant violations trap through `precondition`.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var packets = rtcpPackets(in: bytes)
    var end = 0
    while true {
        let next: RTCPPacketView?
        do { next = try packets.next() } catch { break }
        guard let packet = next else {
            precondition(end == size, "iteration ended before the buffer did")
            break
        }
        precondition(packet.offset == end, "packets are not contiguous")
        end = packet.offset + packet.lengthBytes
        check(packet, size: size)
    }
    // After an error (or the end) the iterator stays finished.
    precondition((try? packets.next()) == nil, "iterator resumed after finishing")
    return 0
}

private func check(_ packet: RTCPPacketView, size: Int) {
    precondition(packet.lengthBytes >= 4 && packet.lengthBytes % 4 == 0, "bad packet length")
    precondition(packet.offset + packet.lengthBytes <= size, "packet runs past the buffer")
    precondition(packet.bodyOffset == packet.offset + 4, "body does not follow the header")
    precondition(packet.bodyCount >= 0, "negative body count")
    precondition(packet.bodyOffset + packet.bodyCount <= packet.offset + packet.lengthBytes, "body runs past the packet")
    precondition(packet.countOrFormat <= 31, "count field out of range")
    precondition(packet.body.count == packet.bodyCount, "body view has the wrong size")

    if let sr = try? SenderReport(parsing: packet) {
        precondition(sr.reports.count == Int(packet.countOrFormat), "SR report count")
        let back = roundTrip(size: sr.serializedSize) { buffer throws(WireError) in try sr.serialize(into: buffer) }
            parse: { packet throws(WireError) in try SenderReport(parsing: packet) }
        precondition(back == sr, "SR round trip changed the value")
    }
    if let rr = try? ReceiverReport(parsing: packet) {
        precondition(rr.reports.count == Int(packet.countOrFormat), "RR report count")
        let back = roundTrip(size: rr.serializedSize) { buffer throws(WireError) in try rr.serialize(into: buffer) }
            parse: { packet throws(WireError) in try ReceiverReport(parsing: packet) }
        precondition(back == rr, "RR round trip changed the value")
    }
    if let sdes = try? SourceDescription(parsing: packet) {
        precondition(sdes.chunks.count == Int(packet.countOrFormat), "SDES chunk count")
        precondition(sdes.serializedSize <= packet.lengthBytes, "SDES grew: unknown items are dropped, nothing added")
        let back = roundTrip(size: sdes.serializedSize) { buffer throws(WireError) in try sdes.serialize(into: buffer) }
            parse: { packet throws(WireError) in try SourceDescription(parsing: packet) }
        precondition(back == sdes, "SDES round trip changed the value")
    }
    if let bye = try? Goodbye(parsing: packet) {
        precondition(bye.ssrcs.count == Int(packet.countOrFormat), "BYE source count")
        if let reason = bye.reason, reason.utf8.count > Goodbye.maxReasonLength {
            // Invalid UTF-8 in the reason is repaired with U+FFFD (3 bytes each), which can push it past the
            // 255 bytes the length byte can describe: serializing must refuse it, not truncate or trap.
            var scratch = [UInt8](repeating: 0, count: 2048)
            let result = scratch.withUnsafeMutableBytes { buffer in Result { () throws(WireError) in try bye.serialize(into: buffer) } }
            precondition(result == .failure(.badField), "over-long BYE reason was not refused")
        } else {
            let back = roundTrip(size: bye.serializedSize) { buffer throws(WireError) in try bye.serialize(into: buffer) }
                parse: { packet throws(WireError) in try Goodbye(parsing: packet) }
            precondition(back == bye, "BYE round trip changed the value")
        }
    }
    if let view = try? GenericNACKView(parsing: packet) {
        precondition(view.entryCount >= 1, "NACK without entries")
        var expanded: [UInt16] = []
        view.forEachLostSequence { expanded.append($0) }
        precondition(expanded.count >= view.entryCount && expanded.count <= 17 * view.entryCount, "NACK expansion size")

        let nack: GenericNACK
        do { nack = try GenericNACK(parsing: packet) } catch { preconditionFailure("GenericNACK refused what GenericNACKView read: \(error)") }
        precondition(nack.senderSSRC == view.senderSSRC && nack.mediaSSRC == view.mediaSSRC, "NACK SSRCs")
        precondition(nack.lost == expanded, "GenericNACK and GenericNACKView disagree")

        // Serializing sorts (wraparound-aware) and drops duplicates, so the round trip yields the normalized list,
        // worked out here independently of `GenericNACK.wraparoundSorted` (which the serializer uses).
        let back = roundTrip(size: nack.serializedSize) { buffer throws(WireError) in try nack.serialize(into: buffer) }
            parse: { packet throws(WireError) in try GenericNACK(parsing: packet) }
        precondition(back.senderSSRC == nack.senderSSRC && back.mediaSSRC == nack.mediaSSRC, "NACK round trip changed an SSRC")
        precondition(back.lost == wireOrder(nack.lost), "NACK round trip is not the distinct sequences in wraparound order")
    } else {
        precondition((try? GenericNACK(parsing: packet)) == nil, "GenericNACK read what GenericNACKView refused")
    }
}

/// The distinct sequence numbers of `lost` in the order a NACK carries them: ascending, from a bitmap of all 65,536,
/// then rotated to start after the largest gap between neighbours (the gap from the last around to the first counts,
/// and the first largest gap wins), so a run across 65535 → 0 stays in one piece.
private func wireOrder(_ lost: [UInt16]) -> [UInt16] {
    var bits = [UInt64](repeating: 0, count: 1024)
    for s in lost { bits[Int(s >> 6)] |= 1 << UInt64(s & 63) }
    var ascending: [UInt16] = []
    ascending.reserveCapacity(lost.count)
    for (w, word) in bits.enumerated() where word != 0 {
        var rest = word
        while rest != 0 {
            ascending.append(UInt16(w * 64 + rest.trailingZeroBitCount))
            rest &= rest - 1
        }
    }
    guard ascending.count > 1 else { return ascending }
    var start = 0
    var largestGap = ascending[0] &- ascending[ascending.count - 1]
    for i in 1..<ascending.count where ascending[i] - ascending[i - 1] > largestGap {
        largestGap = ascending[i] - ascending[i - 1]
        start = i
    }
    return Array(ascending[start...] + ascending[..<start])
}

/// Serializes with `write` into a buffer of exactly `size` bytes (which must succeed and fill it), then parses
/// the result as one RTCP packet with `parse` (which must succeed too).
private func roundTrip<T>(size: Int, _ write: (UnsafeMutableRawBufferPointer) throws(WireError) -> Int,
                          parse: (RTCPPacketView) throws(WireError) -> T) -> T {
    var buffer = [UInt8](repeating: 0xEE, count: size)
    return buffer.withUnsafeMutableBytes { raw -> T in
        let written: Int
        do { written = try write(raw) } catch { preconditionFailure("serialize failed: \(error)") }
        precondition(written == size, "serialize wrote \(written) bytes, serializedSize said \(size)")
        let view = UnsafeRawBufferPointer(raw)
        var packets = rtcpPackets(in: view)
        do {
            guard let packet = try packets.next() else { preconditionFailure("serialized packet not found") }
            precondition(packet.lengthBytes == size, "serialized length field disagrees")
            let extra = try packets.next()
            precondition(extra == nil, "serialized packet is followed by more")
            return try parse(packet)
        } catch {
            preconditionFailure("re-parsing the serialized packet failed: \(error)")
        }
    }
}
