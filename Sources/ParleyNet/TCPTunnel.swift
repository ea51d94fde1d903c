import ParleyWire

/// The client's side of the relay's TCP tunnel: datagrams for the relay's ports travel as RFC 4571 frames, each a
/// port and a datagram (`RelayTunnel`), over one connection to the relay's TCP port. What it receives reads as if it
/// came from that port of the relay's host, so the session takes it as it takes UDP.
public final class TCPTunnel {
    let socket: TCPSocket
    /// The relay's address (its TCP port is the public UDP port's number).
    public let server: PeerAddress
    private var reader = StreamFrameReader(maxFrame: 0xFFFF)
    private var queued: [UInt8] = []
    /// Bytes waiting to be written past which datagrams are dropped, as UDP would drop them.
    static let maxQueued = 256 * 1024
    /// The connection ended (closed by the relay, or failed).
    public private(set) var closed = false

    /// Connects to `server`'s TCP port, waiting at most `timeoutMilliseconds`.
    public init(server: PeerAddress, timeoutMilliseconds: Int32) throws(SystemError) {
        socket = try TCPSocket.connect(to: server, timeoutMilliseconds: timeoutMilliseconds)
        self.server = server
    }

    /// The descriptor to poll for what the relay sends.
    public var fd: Int32 { socket.fd }

    /// Sends `bytes` to relay port `to.port` (the host is the relay's); dropped when the connection is backed up.
    public func send(_ bytes: UnsafeRawBufferPointer, to: PeerAddress) {
        guard !closed else { return }
        let frame = StreamFrameReader.frame(RelayTunnel.wrap(port: to.port, bytes))
        guard queued.count + frame.count <= Self.maxQueued else { return }
        queued += frame
        flush()
    }

    /// Writes what waits, as far as the socket takes it now.
    public func flush() {
        while !queued.isEmpty && !closed {
            switch queued.withUnsafeBytes({ socket.write($0) }) {
            case .bytes(let n): queued.removeFirst(n)
            case .wouldBlock: return
            case .closed: closed = true
            }
        }
    }

    /// The next datagram from the relay into `buffer`, without blocking: its size and the relay port it came from;
    /// nil when none is complete yet.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: PeerAddress)? {
        flush()
        while !closed {
            if let frame = try? reader.next() {
                guard let (port, datagram) = RelayTunnel.unwrap(frame), datagram.count <= buffer.count else { continue }
                datagram.withUnsafeBytes { buffer.copyMemory(from: $0) }
                return (datagram.count, server.withPort(port))
            }
            switch socket.read(into: buffer) {
            case .bytes(let n): reader.append(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            case .wouldBlock: return nil
            case .closed: closed = true
            }
        }
        return nil
    }
}
