import ParleyClientCore
import ParleyNet
import ParleyWire

/// `parley listen` and `parley call`: stay online for one-to-one calls (presence), ring, answer, place calls, hang
/// up. An answered call is a private two-member room joined with the token the relay minted; presence stays alive
/// during the call so hang-ups from the other side arrive at once.
final class PresenceClient {
    let server: PeerAddress
    /// UDP, or the relay's TCP port when UDP got no answer (`RelayLink`).
    let link: RelayLink
    let ui: TerminalUI
    /// When the client started, and whether the relay was ever heard (else it tries TCP after `RoomCall.udpPatience`).
    private let started = Clock.monotonic()
    private var heard = false
    /// The session and its renewal.
    let engine: PresenceEngine
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)

    init(server: PeerAddress, token: @escaping () -> String, security: SignallingSession.Security, ui: TerminalUI) {
        self.server = server
        self.ui = ui
        let link = RelayLink(server: server)
        self.link = link
        engine = PresenceEngine(server: server, token: token, security: security, now: Clock.monotonic(),
                                unixMilliseconds: { Int64(Clock.unixMilliseconds()) }, random: SystemRandomNumberGenerator(),
                                transmit: { bytes, to in link.send(bytes, to: to) })
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
        if !heard, !link.overTCP, now - started >= RoomCall.udpPatience {
            heard = true  // tried once
            let reason = "no answer over UDP from \(server) in \(RoomCall.udpPatience.wholeSeconds) s"
            do {
                try link.useTCP(server)
                ui.event("\(reason): going online over TCP (\(server))")
            } catch {
                ui.event("\(reason); TCP to \(server) failed too: \(error)")
            }
        }
        while let (n, from) = link.receive(into: buffer) {
            heard = true
            guard n > 0 else { continue }
            events += engine.receive(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), from: from, now: now)
        }
        return events + engine.tick(now: now)
    }

    /// Waits up to `milliseconds` for a datagram.
    func wait(milliseconds: Int32) {
        _ = Poll.readable(ui.interactive ? [link.fd, 0] : [link.fd], timeoutMilliseconds: milliseconds)
    }
}
