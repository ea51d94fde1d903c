import ParleyCrypto
import ParleyWire

/// A member's SRTP (RFC 7714, AEAD_AES_256_GCM) with the keys of its encrypted session: what it sends (RTP and
/// RTCP) is protected with its uplink key; what the relay sends is unprotected with the room's downstream key
/// (forwarded speakers, forward rooms) or the member's own downlink key (its mix, the relay's RTCP). Works in
/// caller-owned buffers and allocates nothing per packet. One thread at a time.
public final class MediaCrypto {
    private let uplink: SRTPSender
    private let downlink: SRTPReceiver
    private let room: SRTPReceiver?
    /// Packets from the relay that failed their tag or repeated an index (dropped).
    public private(set) var rejected = 0

    /// Bytes protecting adds to an RTP packet, and to an RTCP packet.
    public static let rtpOverhead = SRTPSender.rtpOverhead, rtcpOverhead = SRTPSender.rtcpOverhead

    /// The crypto of a session with `keys`, in a room whose downstream key is `roomKey` (nil in a mix room).
    /// Throws when this machine cannot run AES-256-GCM.
    /// `streamIndices`: where the room's streams stood when this member joined (`Welcome.streamIndices`).
    public init(keys: SessionKeys, roomKey: MediaKey?, streamIndices: [Welcome.StreamIndex] = []) throws(SRTPError) {
        uplink = try keys.mediaSend.sender(maxStreams: 4)
        downlink = try keys.mediaReceive.receiver(maxStreams: 8)
        room = try roomKey?.receiver(maxStreams: 256)
        for s in streamIndices { room?.seed(ssrc: s.ssrc, index: s.index) }
    }

    /// Protects the RTP or RTCP packet in `packet` into `out` (which may be the same memory, with room for the
    /// overhead); nil when it cannot (an index already used).
    public func protect(_ packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        isRTCP(packet) ? try? uplink.protect(rtcp: packet, into: out) : try? uplink.protect(packet, into: out)
    }

    /// Unprotects a packet from the relay into `out`; nil (and counted) when it does not authenticate.
    public func unprotect(_ packet: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> Int? {
        let n: Int?
        if isRTCP(packet) {
            n = try? downlink.unprotect(rtcp: packet, into: out)
        } else if let room {
            n = try? room.unprotect(packet, into: out)
        } else {
            n = try? downlink.unprotect(packet, into: out)
        }
        if n == nil { rejected += 1 }
        return n
    }
}
