// A `ClientEngine` on a manual clock against a scripted relay: what the engine transmits is collected here, what
// the relay says is built here (`ScriptedRelay`), and time moves only when a test moves it.
import ParleyClientCore
import ParleyMedia
import ParleyWire

/// The manual clock's origin: test times read `t0 + 20 * ms`.
let t0 = Instant.origin

/// One datagram the engine handed to `transmit`.
struct Transmitted {
    var bytes: [UInt8]
    var to: PeerAddress
    /// The signalling message it carries, if it is signalling.
    var signal: SignalMessage? { bytes.first == Signalling.magic ? (try? SignalDatagram(parsing: bytes))?.message : nil }
    /// Whether it is RTCP.
    var isRTCP: Bool { bytes.withUnsafeBytes { ParleyWire.isRTCP($0) } }
    /// The RTCP packet types it carries, in order.
    var rtcpTypes: [UInt8] {
        bytes.withUnsafeBytes { raw in
            var it = rtcpPackets(in: raw)
            var types: [UInt8] = []
            while let p = try? it.next() { types.append(p.packetType) }
            return types
        }
    }
    /// The generic NACK it carries, if any.
    var nack: GenericNACK? {
        bytes.withUnsafeBytes { raw in
            var it = rtcpPackets(in: raw)
            while let p = try? it.next() { if p.packetType == 205, let n = try? GenericNACK(parsing: p) { return n } }
            return nil
        }
    }
}

/// What the engine sends, in order, with the time it was sent.
final class Outbox {
    var now = Instant.origin
    var sent: [(at: Instant, datagram: Transmitted)] = [] {
        didSet { if sent.count > oldValue.count { everything += sent[oldValue.count...].map(\.datagram) } }
    }
    /// Everything ever sent (`take` does not clear it).
    private(set) var everything: [Transmitted] = []

    /// Everything sent since the last call.
    func take() -> [Transmitted] {
        defer { sent.removeAll() }
        return sent.map(\.datagram)
    }
}

/// The engine, its outbox and the manual clock.
final class EngineHarness {
    static let ms = Interval.milliseconds(1)
    let outbox = Outbox()
    let engine: ClientEngine
    /// Everything the engine said, in order.
    private(set) var events: [ClientEngine.Event] = []
    var now: Instant { outbox.now }
    /// Time since the clock's origin.
    var elapsed: Interval { outbox.now - .origin }

    /// - Parameter jitterMinimumDelay: the receive buffers' floor (none by default, as the client's).
    init(listenOnly: Bool = true, reconnect: Bool = true, seed: UInt64 = 1, jitterMinimumDelay: Interval = .zero) throws {
        var configuration = ClientEngine.Configuration(room: "lobby")
        configuration.jitter.minimumDelay = jitterMinimumDelay
        configuration.security = .cleartext  // ScriptedRelay speaks protocol version 1
        configuration.listenOnly = listenOnly
        configuration.reconnect = reconnect
        let outbox = outbox
        let counter = TokenCounter()
        engine = try ClientEngine(server: ScriptedRelay.publicAddress, token: { counter.next() }, configuration: configuration, now: .origin,
                                  unixMilliseconds: { ScriptedRelay.unixMilliseconds + (outbox.now - .origin).milliseconds }, random: SeededRandomNumberGenerator(seed: seed),
                                  transmit: { bytes, to in outbox.sent.append((outbox.now, Transmitted(bytes: Array(bytes), to: to))) })
        tokenCounter = counter
    }

    private let tokenCounter: TokenCounter
    /// Sessions opened so far (each asks for a token).
    var sessionsOpened: Int { tokenCounter.count }

    /// Moves the clock to `time`.
    func advance(to time: Instant) { outbox.now = time }
    /// Moves the clock to `elapsed` after its origin.
    func advance(to elapsed: Interval) { outbox.now = .origin + elapsed }

    /// Delivers `bytes` from `from` at the current time.
    @discardableResult
    func deliver(_ bytes: [UInt8], from: PeerAddress = ScriptedRelay.workerAddress) -> [ClientEngine.Event] {
        let e = bytes.withUnsafeBytes { engine.receive($0, from: from, now: now) }
        events += e
        return e
    }

    /// Runs the engine's timers at the current time.
    @discardableResult
    func tick() -> [ClientEngine.Event] {
        let e = engine.tick(now: now)
        events += e
        return e
    }

    /// One 20 ms media step with nothing captured; returns the played frame (nil while no session is open).
    @discardableResult
    func media(captured: [Int16]? = nil, level: UInt8 = 127) -> [Int16]? {
        var out = [Int16](repeating: 0, count: 960)
        let played = out.withUnsafeMutableBufferPointer { o in
            if let captured {
                return captured.withUnsafeBufferPointer { engine.media(now: now, captured: $0, level: level, into: o.baseAddress!) }
            }
            return engine.media(now: now, captured: nil, level: level, into: o.baseAddress!)
        }
        return played ? out : nil
    }

    /// Answers the last join with a welcome from the public port naming the worker's port.
    func welcome() {
        let joins = outbox.everything.map(\.bytes).filter { if case .join = (try? SignalDatagram(parsing: $0))?.message { true } else { false } }
        deliver(ScriptedRelay.welcome(answering: joins.suffix(1), port: ScriptedRelay.workerAddress.port), from: ScriptedRelay.publicAddress)
    }
}

/// Hands out "t1", "t2", … and counts them.
final class TokenCounter {
    private(set) var count = 0
    func next() -> String {
        count += 1
        return "t\(count)"
    }
}
