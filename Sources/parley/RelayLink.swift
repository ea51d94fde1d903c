import ParleyNet
import ParleyWire

/// How `parley` reaches the relay: UDP, or the relay's TCP port (the same port number) with each datagram in a tunnel
/// frame (`TCPTunnel`) — from the start with `--tcp`, or when UDP got no answer (`RoomCall`). The engine's datagrams
/// go through `send` whichever it is; what comes back reads the same.
final class RelayLink {
    private let udp: UDPSocket
    private(set) var tunnel: TCPTunnel?
    /// When the tunnel was last (re)opened: a relay that closes it (a limit, a restart) is tried again at most once a
    /// second, not for every datagram.
    private var lastConnect = Instant.origin

    init(server: PeerAddress) { udp = openSocket(for: server) }

    /// The descriptor to poll.
    var fd: Int32 { tunnel?.fd ?? udp.fd }

    /// Whether datagrams go over TCP.
    var overTCP: Bool { tunnel != nil }

    /// From now on over TCP to `server`'s TCP port (waits at most 3 s for the connection).
    func useTCP(_ server: PeerAddress) throws(SystemError) {
        lastConnect = Clock.monotonic()
        tunnel = try TCPTunnel(server: server, timeoutMilliseconds: 3_000)
    }

    /// One datagram to `to`. Over TCP, a datagram for another host (a cluster's other node) first moves the tunnel there.
    func send(_ bytes: UnsafeRawBufferPointer, to: PeerAddress) {
        guard let tunnel else {
            try? udp.send(bytes, to: to)
            return
        }
        if tunnel.server.withPort(0) != to.withPort(0) || tunnel.closed {
            guard Clock.monotonic() - lastConnect >= .seconds(1) else { return }  // dropped, as UDP would lose it
            guard (try? useTCP(to)) != nil, let moved = self.tunnel else { return }
            return moved.send(bytes, to: to)
        }
        tunnel.send(bytes, to: to)
    }

    /// The next datagram, without blocking.
    func receive(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: PeerAddress)? {
        if let tunnel { return tunnel.receive(into: buffer) }
        return udp.receive(into: buffer)
    }
}
