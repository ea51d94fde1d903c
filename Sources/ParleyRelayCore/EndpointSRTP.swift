import ParleyCrypto
import ParleyWebRTC
import ParleyWire

/// The SDES keys of one SRTP plain-RTP endpoint: what it sends with, what the relay sends to it with. The HTTP API
/// draws both from libsodium (`SDESKey.random()`) and returns them to the backend in `a=crypto` lines.
public struct RTPEndpointKeys: Sendable, Equatable {
    /// The endpoint protects its RTP/RTCP with this key; the relay unprotects with it.
    public var endpointSends: SDESKey
    /// The relay protects what it sends to the endpoint (forwarded media, the mix, NACK answers) with this key.
    public var relaySends: SDESKey

    /// Both keys.
    public init(endpointSends: SDESKey, relaySends: SDESKey) {
        self.endpointSends = endpointSends
        self.relaySends = relaySends
    }
}

/// A plain-RTP endpoint's or WebRTC member's SRTP both ways (`EndpointCipher`: libsrtp2 for SDES
/// `AES_CM_128_HMAC_SHA1_80`, the relay's own AES-256-GCM for DTLS-SRTP's `AEAD_AES_256_GCM`), held by its `Member`: what arrives
/// from it is unprotected before anything else looks at it, what goes to it is protected as it is queued. Both work in
/// the core's output arena (`OutputQueue.reserve`), so a packet costs no allocation. One worker thread owns it.
struct EndpointSRTP {
    /// Unprotects the endpoint's SRTP/SRTCP.
    let fromEndpoint: EndpointCipher
    /// Protects what the relay sends to the endpoint.
    let toEndpoint: EndpointCipher

    /// Both sessions from SDES keys, or nil when libsrtp refuses to make one.
    init?(keys: RTPEndpointKeys) {
        guard let inbound = LibSRTPSession(key: keys.endpointSends, direction: .inbound),
              let outbound = LibSRTPSession(key: keys.relaySends, direction: .outbound) else { return nil }
        fromEndpoint = EndpointCipher(inbound)
        toEndpoint = EndpointCipher(outbound)
    }

    /// Both directions from the master keys DTLS-SRTP exported (a WebRTC member: `peerSends` is the client's write
    /// key ‖ salt, `relaySends` the server's): `AEAD_AES_256_GCM` on the relay's own SRTP with session keys derived
    /// from them (`SRTPKeyDerivation`), the other profiles on libsrtp2; nil when a key has the wrong length or a
    /// library refuses.
    init?(profile: SRTPProtectionProfile, peerSends: [UInt8], relaySends: [UInt8]) {
        if profile == .aeadAES256GCM {
            func derived(_ master: [UInt8]) -> SRTPKeyDerivation.SessionKeys? {
                guard master.count == profile.keyLength + profile.saltLength else { return nil }
                return SRTPKeyDerivation.aeadSessionKeys(masterKey: Array(master.prefix(profile.keyLength)),
                                                         masterSalt: Array(master.suffix(profile.saltLength)))
            }
            guard let peer = derived(peerSends), let relay = derived(relaySends),
                  let rtpIn = try? SRTPReceiver(key: peer.rtpKey, salt: peer.rtpSalt, maxStreams: 4),
                  let rtcpIn = try? SRTPReceiver(key: peer.rtcpKey, salt: peer.rtcpSalt, maxStreams: 4),
                  let rtpOut = try? SRTPSender(key: relay.rtpKey, salt: relay.rtpSalt, maxStreams: 4),
                  let rtcpOut = try? SRTPSender(key: relay.rtcpKey, salt: relay.rtcpSalt, maxStreams: 4) else { return nil }
            fromEndpoint = EndpointCipher(receiving: rtpIn, rtcp: rtcpIn)
            toEndpoint = EndpointCipher(sending: rtpOut, rtcp: rtcpOut)
            return
        }
        guard let inbound = LibSRTPSession(masterKey: peerSends, profile: profile, direction: .inbound),
              let outbound = LibSRTPSession(masterKey: relaySends, profile: profile, direction: .outbound) else { return nil }
        fromEndpoint = EndpointCipher(inbound)
        toEndpoint = EndpointCipher(outbound)
    }

    /// Copies the endpoint's SRTP (or SRTCP) packet into `output`'s arena and unprotects it there; the clear packet
    /// stays valid until the loop's next `reset()`, like the received buffer it replaces (forwarding may queue it).
    func unprotect(_ bytes: UnsafeRawBufferPointer, rtcp: Bool, in output: OutputQueue) throws(SRTPError) -> UnsafeRawBufferPointer {
        let space = output.reserve(bytes.count)
        space.copyMemory(from: bytes)
        let n = rtcp ? try fromEndpoint.unprotectRTCP(space, length: bytes.count) : try fromEndpoint.unprotectRTP(space, length: bytes.count)
        return output.keep(space, length: n)
    }

    /// Queues `bytes` (RTP, or RTCP when `rtcp`) to `address` protected with `session`; returns the bytes queued (0 if
    /// libsrtp refused, which only a malformed packet of our own could make it do).
    static func queue(_ bytes: UnsafeRawBufferPointer, rtcp: Bool, with session: EndpointCipher, to address: PeerAddress,
                      in output: OutputQueue) -> Int {
        let space = output.reserve(bytes.count + EndpointCipher.trailerCapacity)
        space.copyMemory(from: bytes)
        guard let n = try? (rtcp ? session.protectRTCP(space, length: bytes.count) : session.protectRTP(space, length: bytes.count)) else { return 0 }
        output.commit(space, length: n, to: address)
        return n
    }

    /// The big-endian 32-bit word at `offset` (an SSRC in a header libsrtp leaves in the clear); the caller checks the length.
    @inline(__always)
    static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    /// The drop a failed unprotect is counted as.
    static func dropReason(_ error: SRTPError, rtcp: Bool) -> DropReason {
        switch error {
        case .authenticationFailed: .srtpRejected
        case .replayed, .tooOld: .srtpReplayed
        default: rtcp ? .malformedRTCP : .malformedRTP
        }
    }
}
