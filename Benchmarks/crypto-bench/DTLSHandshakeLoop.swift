import BenchmarkSupport
import ParleyWebRTC

/// WebRTC's DTLS-SRTP handshake as the relay runs it for each browser (`DTLSSession`, OpenSSL DTLS 1.2, ECDSA P-256
/// certificate, ECDHE, `use_srtp`, the RFC 5764 key export): a client and the relay's server session shuttle datagrams
/// in memory until both are connected. Only the server's work is timed (making its session, every `receive`, taking
/// its flights): µs per "packet" is µs of relay CPU per handshake.
final class DTLSHandshakeLoop {
    let server: DTLSContext
    let client: DTLSContext
    private(set) var failures = 0

    init() throws {
        server = try DTLSContext(certificate: DTLSCertificate(now: 1_800_000_000))
        client = try DTLSContext(certificate: DTLSCertificate(now: 1_800_000_000))
    }

    /// Runs `count` handshakes; the timing covers the server side only.
    func run(_ count: Int) -> Timing {
        var timing = Timing()
        for _ in 0..<count {
            var serverNanoseconds: Int64 = 0
            do {
                let c = try DTLSSession(context: client, role: .client, peerFingerprint: server.certificate.fingerprint)
                var start = threadCPUNanoseconds()
                let s = try DTLSSession(context: server, role: .server, peerFingerprint: client.certificate.fingerprint)
                serverNanoseconds += threadCPUNanoseconds() - start
                c.start()
                var toServer = c.takeOutgoing()
                for _ in 0..<8 where !(c.state == .connected && s.state == .connected) {
                    start = threadCPUNanoseconds()
                    for d in toServer { _ = d.withUnsafeBytes { s.receive($0) } }
                    let toClient = s.takeOutgoing()
                    serverNanoseconds += threadCPUNanoseconds() - start
                    for d in toClient { _ = d.withUnsafeBytes { c.receive($0) } }
                    toServer = c.takeOutgoing()
                }
                if c.state != .connected || s.state != .connected || s.keys == nil { failures += 1 }
            } catch {
                failures += 1
            }
            timing += Timing(nanoseconds: serverNanoseconds, packets: 1, allocations: 0)
        }
        return timing
    }
}
