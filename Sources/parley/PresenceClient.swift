import ParleyClientCore
import ParleyNet
import ParleyWire

/// `parley listen` and `parley call`: stay online for one-to-one calls (presence), ring, answer, place calls, hang
/// up. An answered call is a private two-member room joined with the token the relay minted; presence stays alive
/// during the call so hang-ups from the other side arrive at once.
final class PresenceClient {
    let server: PeerAddress
    let socket: UDPSocket
    let ui: TerminalUI
    /// The session and its renewal.
    let engine: PresenceEngine
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)

    init(server: PeerAddress, token: @escaping () -> String, security: SignallingSession.Security, ui: TerminalUI) {
        self.server = server
        self.ui = ui
        let socket = openSocket(for: server)
        self.socket = socket
        engine = PresenceEngine(server: server, token: token, security: security, now: Clock.monotonic(),
                                unixMilliseconds: { Int64(Clock.unixMilliseconds()) }, random: SystemRandomNumberGenerator(),
                                transmit: { bytes, to in try? socket.send(bytes, to: to) })
    }

    deinit { buffer.deallocate() }

    /// The current presence session.
    var session: PresenceSession { engine.session }

    /// Sends what the session queued.
    func flush() { engine.flush() }

    /// Events received with the registration, for the next `poll`.
    var leftover: [PresenceSession.Event] = []

    /// Receives what is waiting and runs the session's timers; returns the events.
    func poll(now: Instant) -> [PresenceSession.Event] {
        var events: [PresenceSession.Event] = leftover
        leftover = []
        while let (n, from) = socket.receive(into: buffer) {
            guard n > 0 else { continue }
            events += engine.receive(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), from: from, now: now)
        }
        return events + engine.tick(now: now)
    }

    /// Waits up to `milliseconds` for a datagram.
    func wait(milliseconds: Int32) {
        _ = Poll.readable(ui.interactive ? [socket.fd, 0] : [socket.fd], timeoutMilliseconds: milliseconds)
    }
}
