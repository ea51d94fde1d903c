import ParleyWire

/// RFC 2198 RED through the relay: a native member that negotiated it (`MemberTraits.redundancy`) may send packets of
/// payload type `RedundantAudio.defaultPayloadType`, each its Opus frame plus copies of the frames before. Listeners
/// that took RED get the packet as it came; everything else (plain RTP and WebRTC endpoints, recordings, a mix
/// room's lone-speaker forwarding, native members that did not ask) gets its primary alone, as a plain Opus packet.
extension RelayCore {
    /// For a RED packet from a native or cascaded member: the packet of its primary alone, written into the output
    /// arena (valid until the loop's flush), with its view. Nil for any other packet. Throws for a RED payload that
    /// does not parse: the caller drops the packet (every length in it is the sender's word).
    func primaryOnly(_ packet: RTPPacketView, from member: Member) throws(WireError) -> (
        bytes: UnsafeRawBufferPointer, view: RTPPacketView
    )? {
        guard packet.payloadType == RedundantAudio.defaultPayloadType, member.kind.speaksRedundancy else { return nil }
        let red = try RedundantAudio(parsing: packet.payload)
        let space = output.reserve(packet.bytes.count)
        let length = red.writePrimaryPacket(of: packet, into: space)
        guard length > 0 else { throw .bufferTooSmall }
        let bytes = output.keep(space, length: length)
        return (bytes, try RTPPacketView(parsing: bytes))
    }
}
