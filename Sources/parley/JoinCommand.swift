import Foundation
import ParleyClientCore
import ParleyNet
import ParleyWire
import Synchronization

/// Set by SIGINT/SIGTERM; the loop leaves the room and exits.
let interrupted = Atomic<Bool>(false)

/// A nonisolated home for the C signal handler (it runs on whatever thread the signal lands on).
enum SignalHandlers {
    static let stop: @convention(c) (Int32) -> Void = { _ in interrupted.store(true, ordering: .relaxed) }
}

/// `parley join`: the minimal test client of the relay issue — joins, prints one line per event, optionally
/// sends an Opus tone, counts what it receives per SSRC, leaves.
enum JoinCommand {
    static let usage = """
    usage: parley join ROOM --identity NAME [--server HOST:PORT] [--token T] [--name N] [--duration SECONDS]
                       [--mute] [--listen-only] [--tone HZ] [--amplitude 0..1] [--mode forward|mix] [--say TEXT]

    Joins ROOM on the relay (default 127.0.0.1:7400) and prints one line per event. Without --token it mints
    one from PARLEY_API_KEY / PARLEY_API_SECRET (dev defaults when unset). --tone sends a sine tone as Opus
    (20 ms frames, RFC 6464 levels); --listen-only joins without the publish grant. --say sends a text to the
    room once joined. Ctrl-C leaves. On exit it prints one "received" line per SSRC heard.
    """

    struct StreamCount { var packets = 0; var bytes = 0 }

    static func run(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: ["identity", "server", "token", "name", "duration", "tone", "amplitude", "mode", "say"],
                        switches: ["mute", "listen-only", "no-tui"], usage: usage)
        guard let room = o.positional.first else { fail("join needs a ROOM\n\(usage)") }
        guard let identity = o["identity"], !identity.isEmpty else { fail("join needs --identity\n\(usage)") }
        guard let server = PeerAddress(parsing: o["server"] ?? "127.0.0.1:7400") else { fail("--server must be HOST:PORT") }
        let duration = o["duration"].map { Double($0) ?? -1 } ?? 0
        guard duration >= 0 else { fail("--duration must be a number of seconds") }
        let tone = o["tone"].map { Double($0) ?? -1 }
        if let tone, !(20...20_000).contains(tone) { fail("--tone must be a frequency in 20...20000 Hz") }
        let amplitude = Double(o["amplitude"] ?? "0.3") ?? -1
        guard (0...1).contains(amplitude) else { fail("--amplitude must be in 0...1") }
        let token = o["token"] ?? mintToken(identity: identity, name: o["name"], room: room, ttlSeconds: 3600,
                                            publish: !o.has("listen-only"), admin: false, mode: o["mode"])

        let socket: UDPSocket
        do {
            socket = try UDPSocket(bindingTo: server.isIPv4 ? PeerAddress(ipv4: 0, port: 0) : PeerAddress(high: 0, low: 0, port: 0))
        } catch {
            fail("cannot open a UDP socket: \(error)", code: 1)
        }
        signal(SIGINT, SignalHandlers.stop)
        signal(SIGTERM, SignalHandlers.stop)

        let start = Clock.monotonicNanoseconds()
        let session = ClientSession(server: server, token: token, room: room, muted: o.has("mute"), now: start,
                                    unixMilliseconds: { Int64(Clock.unixMilliseconds()) })
        var names: [UInt32: String] = [:]  // ssrc → identity
        var received: [UInt32: StreamCount] = [:]
        var rtcpReceived = 0
        let source = tone.map { ToneSource(frequency: $0, amplitude: amplitude) }
        var sequence = UInt16.random(in: 0...UInt16.max)
        var timestamp = UInt32.random(in: 0...UInt32.max)
        var nextFrame: Int64 = 0
        var said = false
        var exitCode: Int32 = 0
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
        defer { buffer.deallocate(); packet.deallocate() }

        func flush() {
            for d in session.drainOutgoing() { socket.send(d, to: session.destination) }
        }
        func say(_ line: String) { writeLine(line) }

        _ = session.tick(now: start)
        flush()
        loop: while true {
            let now = Clock.monotonicNanoseconds()
            if interrupted.load(ordering: .relaxed) || (duration > 0 && Double(now - start) / 1e9 >= duration) {
                session.leave(now: now)
                flush()
                say("left \(room)")
                break
            }
            let wait = nextFrame > 0 ? max(0, (nextFrame - now) / 1_000_000) : 20
            _ = Poll.readable([socket.fd], timeoutMilliseconds: Int32(min(wait, 20)))
            while let (n, from) = socket.receive(into: buffer) {
                guard n > 0, from.high == server.high, from.low == server.low else { continue }
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                if bytes[0] == Signalling.magic {
                    for event in session.handle(bytes, now: Clock.monotonicNanoseconds()) {
                        switch event {
                        case .welcomed(let w):
                            say("joined \(w.room) as \(w.identity) (member \(w.memberID), ssrc \(w.ssrc), port \(w.port), mode \(w.mode), \(w.memberCount) others)")
                            nextFrame = Clock.monotonicNanoseconds()
                        case .memberList(let list):
                            for m in list { names[m.ssrc] = m.identity }
                            say("members: " + (list.isEmpty ? "(nobody else)" : list.map { $0.identity + ($0.flags.contains(.muted) ? " (muted)" : "") }.joined(separator: ", ")))
                        case .member(let kind, let m, let reason):
                            names[m.ssrc] = m.identity
                            switch kind {
                            case .joined: say("\(m.identity) joined")
                            case .left: say("\(m.identity) left" + (reason.isEmpty ? "" : ": \(reason)"))
                            case .muted: say("\(m.identity) muted")
                            case .unmuted: say("\(m.identity) unmuted")
                            }
                        case .speakers(let list):
                            let me = session.welcome?.memberID
                            say("speaking: " + (list.isEmpty ? "(nobody)" : list.map { s in
                                let who = s.memberID == me ? identity : (session.members[s.memberID]?.identity ?? "member \(s.memberID)")
                                return "\(who) (-\(s.level) dBov)"
                            }.joined(separator: ", ")))
                        case .text(let from, let direct, let text):
                            say("\(direct ? "direct text" : "text") from \(from): \(text)")
                        case .textStatus(let id, let delivered, let reason):
                            say("text \(id) " + (delivered ? "delivered" : "failed: \(reason)"))
                        case .refused(let code, let reason):
                            writeLine("parley: the relay refused to let us join: \(reason) (code \(code.rawValue))", fd: 2)
                            exitCode = 3
                            break loop
                        case .goodbye(_, let reason):
                            say("the relay ended the session: \(reason)")
                            exitCode = 4
                            break loop
                        case .resumed:
                            say("resumed from a new address")
                        case .roundTrip:
                            break
                        }
                    }
                } else if isRTCP(bytes) {
                    rtcpReceived += 1
                } else if let rtp = try? RTPPacketView(parsing: bytes) {
                    received[rtp.ssrc, default: StreamCount()].packets += 1
                    received[rtp.ssrc, default: StreamCount()].bytes += n
                }
            }
            let now2 = Clock.monotonicNanoseconds()
            _ = session.tick(now: now2)
            if case .ended(let reason) = session.state {
                writeLine("parley: \(reason)", fd: 2)
                exitCode = 5
                break
            }
            if session.state == .joined, !said, let text = o["say"] {
                said = true
                if let id = session.sendText(text, now: now2) { say("sent text \(id)") }
            }
            if let source, session.state == .joined, let w = session.welcome, w.flags.contains(.publisher), nextFrame > 0 {
                while now2 >= nextFrame {
                    let header = RTPHeader(marker: false, payloadType: 111, sequenceNumber: sequence, timestamp: timestamp, ssrc: w.ssrc,
                                           extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: 0))])
                    let headerSize = header.serializedSize
                    let (count, level) = source.next(into: UnsafeMutableRawBufferPointer(rebasing: packet[headerSize...]))
                    var leveled = header
                    leveled.extensions = [.audioLevel(id: 1, AudioLevel(voice: level < 127, level: level))]
                    if count > 0, let written = try? leveled.serialize(into: packet) {
                        socket.send(UnsafeRawBufferPointer(rebasing: packet[0..<(written + count)]), to: session.destination)
                    }
                    sequence &+= 1
                    timestamp &+= 960
                    nextFrame += 20_000_000
                }
            }
            flush()
        }
        for (ssrc, count) in received.sorted(by: { $0.key < $1.key }) {
            say("received ssrc \(ssrc) from \(names[ssrc] ?? (session.welcome?.mode == "mix" ? "the room mix" : "unknown")): \(count.packets) packets, \(count.bytes) bytes")
        }
        if rtcpReceived > 0 { say("received \(rtcpReceived) RTCP packets") }
        return exitCode
    }
}
