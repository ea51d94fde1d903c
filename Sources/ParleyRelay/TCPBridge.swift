import ParleyNet
import ParleyRelayCore
import ParleyWebRTC
import ParleyWire
import Synchronization

/// The relay's TCP port (the public UDP port's number): each connection gets a UDP socket on loopback
/// (`TCPBridgeRules.loopbackSource`), and its frames go to the workers' ports as datagrams, and what the workers send
/// that socket goes back as frames. One thread, poll(2) over the listener, the connections and their sockets.
///
/// A connection's first frame says what it is (`StreamKind`): a STUN check (ICE-TCP, routed to the worker its answer
/// named by the check's ufrag: `ICETCPRoutes`) or a tunnel frame (Parley's client: each frame names a worker port).
/// Hostile input costs the sender as much as the relay: a frame in is at most one datagram out; a frame over
/// `maxFrame`, a first frame that is neither, a tunnel frame to a port that is not a worker's, an unknown ufrag, or
/// silence past the deadlines closes the connection; what cannot be written at once waits up to `maxQueuedBytes`,
/// then datagrams are dropped as UDP would drop them.
final class TCPBridge: @unchecked Sendable {
    // Invariant: everything but `stopping` and `wakeup` is touched only by the bridge's thread (inside `run`).
    let listener: TCPSocket
    let rules: TCPBridgeRules
    let workerPorts: [UInt16]
    /// Where the workers' sockets take datagrams: the UDP bind address, or loopback when that is a wildcard.
    let relayHost: PeerAddress
    let routes: ICETCPRoutes
    let log: LogSink
    let stopping = Atomic<Bool>(false)
    private let wakeup: WakeupSignal
    private var connections: [Connection] = []
    private var count = TCPConnectionCount()
    /// Connections accepted, and refused at a limit, since start.
    let accepted = Atomic<Int>(0), refused = Atomic<Int>(0)

    final class Connection {
        let tcp: TCPSocket
        let client: PeerAddress
        var udp: UDPSocket?
        var kind: StreamKind?
        /// ICE-TCP: the worker port its checks go to.
        var port: UInt16 = 0
        var reader: StreamFrameReader
        var queued: [UInt8] = []
        var queuedStart = 0
        let opened: Int64
        var lastFrame: Int64
        var closed = false

        init(tcp: TCPSocket, client: PeerAddress, maxFrame: Int, now: Int64) {
            self.tcp = tcp
            self.client = client
            reader = StreamFrameReader(maxFrame: maxFrame)
            opened = now
            lastFrame = now
        }

        var queuedBytes: Int { queued.count - queuedStart }
    }

    init(address: PeerAddress, rules: TCPBridgeRules, workerPorts: [UInt16], routes: ICETCPRoutes, log: LogSink) throws(SystemError) {
        listener = try TCPSocket.listening(on: address)
        self.rules = rules
        self.workerPorts = workerPorts
        relayHost = address.isWildcard ? PeerAddress(ipv4: 127, 0, 0, 1, port: 0) : address.withPort(0)
        self.routes = routes
        self.log = log
        wakeup = try WakeupSignal()
    }

    func stop() {
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
    }

    static func milliseconds() -> Int64 { Clock.monotonicNanoseconds() / 1_000_000 }

    func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 8)
        defer { buffer.deallocate() }
        var fds = PollSet()
        while !stopping.load(ordering: .acquiring) {
            fds.removeAll()
            fds.add(wakeup.fd)
            fds.add(listener.fd)
            for c in connections {
                fds.add(c.tcp.fd, writable: c.queuedBytes > 0)
                fds.add(c.udp?.fd ?? -1)
            }
            fds.wait(timeoutMilliseconds: 500)
            if fds.isReadable(0) { wakeup.drain() }
            let now = Self.milliseconds()
            for (k, c) in connections.enumerated() {
                if fds.isWritable(2 + 2 * k) { flush(c) }
                if fds.isReadable(2 + 2 * k) { readClient(c, buffer: buffer, now: now) }
                if fds.isReadable(3 + 2 * k) { readRelay(c, buffer: buffer) }
                if c.kind == nil && now - c.opened >= rules.firstFrameMilliseconds { close(c, "no valid first frame in time") }
                if now - c.lastFrame >= rules.idleMilliseconds { close(c, "idle") }
            }
            connections.removeAll { $0.closed }
            if fds.isReadable(1) { acceptAll(now: now) }
        }
        for c in connections { close(c, "the relay is stopping") }
        connections.removeAll()
    }

    private func acceptAll(now: Int64) {
        for _ in 0..<64 {
            guard let tcp = listener.accept(), let client = tcp.peer else { return }
            guard count.take(client, rules: rules) else {
                refused.add(1, ordering: .relaxed)
                if log.threshold <= .debug { log.write(.debug, "tcp: refused \(client): connection limit") }
                continue  // closed as `tcp` goes
            }
            accepted.add(1, ordering: .relaxed)
            connections.append(Connection(tcp: tcp, client: client, maxFrame: rules.maxFrame, now: now))
        }
    }

    private func close(_ c: Connection, _ reason: String) {
        guard !c.closed else { return }
        c.closed = true
        count.release(c.client)
        if log.threshold <= .debug { log.write(.debug, "tcp: closed \(c.client): \(reason)") }
    }

    /// Reads what the client sent and passes its frames on.
    private func readClient(_ c: Connection, buffer: UnsafeMutableRawBufferPointer, now: Int64) {
        for _ in 0..<4 where !c.closed {
            switch c.tcp.read(into: buffer) {
            case .closed: return close(c, "closed by the client")
            case .wouldBlock: return
            case .bytes(let n):
                c.reader.append(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                do {
                    while !c.closed, let frame = try c.reader.next() { pass(frame, from: c, now: now) }
                } catch {
                    return close(c, "a frame of \(error.length) bytes, more than \(rules.maxFrame)")
                }
                if n < buffer.count { return }
            }
        }
    }

    /// One frame from the client: the first says what the connection is; each is one datagram to a worker.
    private func pass(_ frame: [UInt8], from c: Connection, now: Int64) {
        if c.kind == nil {
            guard let kind = StreamKind.classify(frame) else { return close(c, "its first frame is neither a STUN check nor a tunnel frame") }
            if kind == .iceTCP {
                let username = frame.withUnsafeBytes { try? STUNBindingRequest(parsing: $0) }?.username
                guard let username, let port = routes.port(forUsername: username, now: Self.unixMilliseconds()) else {
                    return close(c, "its first STUN check names no answer of this relay")
                }
                c.port = port
            }
            let source = relayHost.isIPv4 ? TCPBridgeRules.loopbackSource(for: c.client) : PeerAddress(high: 0, low: 1, port: 0)
            guard let udp = try? UDPSocket(bindingTo: source, bufferBytes: 256 * 1024) else { return close(c, "no loopback socket") }
            c.udp = udp
            c.kind = kind
            if log.threshold <= .debug { log.write(.debug, "tcp: \(c.client) is \(kind == .iceTCP ? "ICE-TCP" : "a parley tunnel") via \(udp.localAddress?.description ?? "?")") }
        }
        guard let udp = c.udp else { return }
        c.lastFrame = now
        switch c.kind {
        case .iceTCP?:
            try? udp.send(frame, to: relayHost.withPort(c.port))
        case .tunnel?:
            guard let (port, datagram) = RelayTunnel.unwrap(frame), let target = TCPBridgeRules.tunnelTarget(port: port, workerPorts: workerPorts) else {
                return close(c, "a tunnel frame to a port that is not the relay's")
            }
            _ = datagram.withUnsafeBytes { try? udp.send($0, to: relayHost.withPort(target)) }
        case nil:
            break
        }
    }

    /// What the workers sent this connection's socket, framed for the client.
    private func readRelay(_ c: Connection, buffer: UnsafeMutableRawBufferPointer) {
        guard let udp = c.udp, !c.closed else { return }
        for _ in 0..<64 {
            guard let (n, from) = udp.receive(into: buffer) else { break }
            guard from.withPort(0) == relayHost, workerPorts.contains(from.port) else { continue }
            let payload = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
            let frame = c.kind == .tunnel ? StreamFrameReader.frame(RelayTunnel.wrap(port: from.port, payload)) : StreamFrameReader.frame(payload)
            guard c.queuedBytes + frame.count <= rules.maxQueuedBytes else { continue }  // dropped, as UDP would
            if c.queuedStart > 0 && c.queuedStart == c.queued.count {
                c.queued.removeAll(keepingCapacity: true)
                c.queuedStart = 0
            }
            c.queued += frame
        }
        flush(c)
    }

    private func flush(_ c: Connection) {
        while c.queuedBytes > 0 && !c.closed {
            let result = c.queued.withUnsafeBytes { c.tcp.write(UnsafeRawBufferPointer(rebasing: $0[c.queuedStart...])) }
            switch result {
            case .bytes(let n): c.queuedStart += n
            case .wouldBlock: return
            case .closed: return close(c, "write failed")
            }
        }
        if c.queuedStart == c.queued.count {
            c.queued.removeAll(keepingCapacity: true)
            c.queuedStart = 0
        }
    }

    static func unixMilliseconds() -> Int64 { Int64(Clock.unixMilliseconds()) }
}
