import ParleyCrypto
import ParleyWire

/// A member's SRTP (RFC 7714, AEAD_AES_256_GCM) with the keys of its encrypted session: what it sends (RTP and
/// RTCP) is protected with its uplink key; what the relay sends is unprotected with the room's downstream key
/// (forwarded speakers, forward rooms) or the member's own downlink key (its mix, the relay's RTCP). The room's key
/// changes when members leave (`installRoomKey`): the newest two are tried, the one that last worked first. Works in
/// caller-owned buffers and allocates nothing per packet. One thread at a time.
public final class MediaCrypto {
    private let uplink: SRTPSender
    private let downlink: SRTPReceiver
    /// The room's key that last opened a packet, and the other one (the newer until the relay starts using it, or
    /// the older for packets still in flight after it did).
    private var room: SRTPReceiver?
    private var otherRoom: SRTPReceiver?
    /// A packet decrypted in place is copied here while two room keys are tried.
    private let retryCopy = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
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

    /// The room's next key (a `roomKey` message), with where each forwarded stream stands under it: tried beside
    /// the current one until a packet opens with it, then first. The key before the current one is forgotten.
    public func installRoomKey(_ key: MediaKey, streamIndices: [Welcome.StreamIndex]) throws(SRTPError) {
        let next = try key.receiver(maxStreams: 256)
        for s in streamIndices { next.seed(ssrc: s.ssrc, index: s.index) }
        if room == nil { room = next } else { otherRoom = next }
    }

    deinit { retryCopy.deallocate() }

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
            if let other = otherRoom {
                // Two keys to try: a failed try may have overwritten `out`, so when it is the packet's own memory
                // the packet is tried from a copy.
                var source = packet
                if out.baseAddress == UnsafeMutableRawPointer(mutating: packet.baseAddress), packet.count <= retryCopy.count {
                    retryCopy.copyMemory(from: packet)
                    source = UnsafeRawBufferPointer(rebasing: retryCopy[..<packet.count])
                }
                if let opened = try? room.unprotect(source, into: out) {
                    n = opened
                } else if let opened = try? other.unprotect(source, into: out) {
                    (self.room, otherRoom) = (other, room)  // the other key opened it: it is the one in use now
                    n = opened
                } else {
                    n = nil
                }
            } else {
                n = try? room.unprotect(packet, into: out)
            }
        } else {
            n = try? downlink.unprotect(packet, into: out)
        }
        if n == nil { rejected += 1 }
        return n
    }
}
