import ParleyNet
import ParleyWire

/// The ports a call faces its phone on: RTP on an even port (the one its SDP names), RTCP on the next (RFC 3550
/// §11). RTP's socket is used through the forwarding members; `rtcp` by name.
final class PhoneSocket {
    let rtp: UDPSocket
    let rtcp: UDPSocket

    private init(rtp: UDPSocket, rtcp: UDPSocket) {
        self.rtp = rtp
        self.rtcp = rtcp
    }

    /// An even port and the next one on `host`'s address, or nil when 32 tries found none (the refused sockets are
    /// held until the end, so the kernel does not hand the same port back).
    static func open(on host: PeerAddress) -> PhoneSocket? {
        var refused: [UDPSocket] = []
        while refused.count < 32 {
            guard let rtp = try? UDPSocket(bindingTo: host.withPort(0), bufferBytes: 256 << 10),
                  let port = rtp.localAddress?.port else { return nil }
            if port % 2 == 0, port < UInt16.max,
               let rtcp = try? UDPSocket(bindingTo: host.withPort(port + 1), bufferBytes: 64 << 10) {
                return PhoneSocket(rtp: rtp, rtcp: rtcp)
            }
            refused.append(rtp)
        }
        return nil
    }

    /// RTP's descriptor.
    var fd: Int32 { rtp.fd }
    /// RTP's address (its port is the one in the SDP).
    var localAddress: PeerAddress? { rtp.localAddress }
    /// One RTP datagram, if one waits.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: PeerAddress)? {
        rtp.receive(into: buffer)
    }
    /// Sends `bytes` on the RTP port.
    func send(_ bytes: UnsafeRawBufferPointer, to address: PeerAddress) throws(SocketError) {
        try rtp.send(bytes, to: address)
    }
}
