import ParleyWire

/// The frames an RTP packet carries when its payload is RFC 2198 RED (`RedundantAudio`): the redundant copies a
/// receiver may use and the primary. A copy is usable only as Parley's and Chrome's senders make them: the same
/// payload type as the primary, and block `i` of `n` exactly `n − i` frames back (`timestampOffset` = (n − i) ×
/// `frameSamples`), so a copy can only name one of the few frames just before the packet. Copies that break this are
/// skipped; a payload that does not parse yields nothing at all. Pure.
public enum RedundantFrames {
    /// Calls `redundant` with each usable copy of `packet` (oldest first: sequence number, RTP timestamp, data) and
    /// returns the primary's data; for a packet whose payload type is not `redPayloadType` (or when that is nil),
    /// returns its payload and calls nothing. Nil for a RED payload that does not parse.
    public static func unpack(
        _ packet: RTPPacketView, redPayloadType: UInt8?, frameSamples: Int,
        redundant: (UInt16, UInt32, UnsafeRawBufferPointer) -> Void
    ) -> UnsafeRawBufferPointer? {
        let payload = packet.payload
        guard let redPayloadType, packet.payloadType == redPayloadType else { return payload }
        guard let red = try? RedundantAudio(parsing: payload) else { return nil }
        for i in 0..<red.redundantCount {
            let block = red.redundant(i)
            let back = red.redundantCount - i
            guard block.payloadType == red.primary.payloadType, Int(block.timestampOffset) == back * frameSamples else {
                continue
            }
            redundant(
                red.sequenceNumber(ofRedundant: i, primary: packet.sequenceNumber),
                packet.timestamp &- block.timestampOffset,
                UnsafeRawBufferPointer(rebasing: payload[block.range]))
        }
        return UnsafeRawBufferPointer(rebasing: payload[red.primary.range])
    }
}
