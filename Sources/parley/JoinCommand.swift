import Foundation
import ParleyClientCore
import ParleyNet
import ParleyWire
import Synchronization

/// Set by SIGINT/SIGTERM; the loop leaves and exits.
let interrupted = Atomic<Bool>(false)

/// A nonisolated home for the C signal handler (it runs on whatever thread the signal lands on).
enum SignalHandlers {
    static let stop: @convention(c) (Int32) -> Void = { _ in interrupted.store(true, ordering: .relaxed) }

    /// Installs the handler and unblocks both signals: a blocked mask is inherited across exec (a parent that blocks
    /// them, as some test runners and supervisors do, would otherwise leave Ctrl-C and `kill` pending forever).
    static func install() {
        signal(SIGINT, stop)
        signal(SIGTERM, stop)
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }
}

/// Opens a UDP socket for talking to `server`, or exits with a one-line error.
func openSocket(for server: PeerAddress) -> UDPSocket {
    do {
        return try UDPSocket(bindingTo: server.isIPv4 ? PeerAddress(ipv4: 0, port: 0) : PeerAddress(high: 0, low: 0, port: 0))
    } catch {
        fail("cannot open a UDP socket: \(error)", code: 1)
    }
}

/// `parley join`: talk in a room. Captures and plays through ALSA (or WAV files / a tone when headless), shows who is
/// in the room and who is speaking, sends texts, mutes, reconnects by itself when the relay restarts or the network drops.
enum JoinCommand {
    static let usage = """
    usage: parley join ROOM --identity NAME [--server HOST:PORT] [--token T] [--name N] [--duration SECONDS]
                       [--mute] [--listen-only] [--mode forward|mix] [--say TEXT] [--no-tui] [audio options]
    \(AudioOptions.usage)

    Joins ROOM on the relay (default 127.0.0.1:7400). Without --token it mints one from PARLEY_API_KEY /
    PARLEY_API_SECRET (dev defaults when unset). Keys in the live view: m mute/unmute, t type a message to the room,
    q leave. Without a terminal (or with --no-tui) it prints one line per event. Ctrl-C leaves (and finalises --output).
    Exit: 0 left, 1 local error (device, file), 2 usage, 3 refused by the relay, 4 removed by the relay, 5 relay unreachable.
    """

    static func run(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: AudioOptions.valued.union(["identity", "server", "token", "name", "duration", "mode", "say"]),
                        switches: AudioOptions.switches.union(["mute", "listen-only", "no-tui"]), usage: usage)
        guard let room = o.positional.first else { fail("join needs a ROOM\n\(usage)") }
        guard let identity = o["identity"], !identity.isEmpty else { fail("join needs --identity\n\(usage)") }
        guard let server = PeerAddress(parsing: o["server"] ?? "127.0.0.1:7400") else { fail("--server must be HOST:PORT") }
        let duration = o["duration"].map { Double($0) ?? -1 } ?? 0
        guard duration >= 0 else { fail("--duration must be a number of seconds") }
        if let mode = o["mode"], mode != "forward", mode != "mix" { fail("--mode must be forward or mix") }
        let listenOnly = o.has("listen-only")
        let audio = AudioOptions(o)
        let media = MediaEngine(audio: audio, listenOnly: listenOnly, muted: o.has("mute"))
        let ui = TerminalUI(noTUI: o.has("no-tui"))
        SignalHandlers.install()
        let token = { o["token"] ?? mintToken(identity: identity, name: o["name"], room: room, ttlSeconds: 3600,
                                                publish: !listenOnly, admin: false, mode: o["mode"]) }
        let call = RoomCall(room: room, identity: identity, server: server, token: token, media: media, ui: ui,
                            duration: duration, say: o["say"], reconnect: true)
        let code = call.run()
        media.finish()
        ui.close()
        for (ssrc, count) in media.receivedBySSRC.sorted(by: { $0.key < $1.key }) {
            var line = "received ssrc \(ssrc) from \(call.names[ssrc] ?? (call.mode == "mix" ? "the room mix" : "unknown")): \(count) packets"
            if let s = media.receiver.streams[ssrc]?.audio.jitter.stats {
                line += String(format: "; played %d, concealed %d (%d events), FEC %d, late %d, accelerated %d, expanded %d, delay %.0f ms (target %.0f)",
                               s.played, s.concealedFrames, s.concealmentEvents, s.fecRecovered, s.lateDropped, s.accelerated, s.expanded,
                               s.currentDelayMilliseconds, s.targetDelayMilliseconds)
            }
            if let n = media.receiver.streams[ssrc]?.nacks, n.requested > 0 {
                line += "; NACKed \(n.requested), recovered \(n.recovered)"
            }
            writeLine(line)
        }
        return code
    }
}

/// One stay in a room (a `join`, or the room of an answered call): the signalling session, the media loop, the view.
final class RoomCall {
    let room: String
    let identity: String
    let server: PeerAddress
    let token: () -> String
    let media: MediaEngine
    let ui: TerminalUI
    let duration: Double
    let say: String?
    let reconnect: Bool
    /// SSRC → identity, from the member list and events.
    private(set) var names: [UInt32: String] = [:]
    private(set) var mode = "forward"
    private var members: [UInt32: MemberEntry] = [:]
    private var speaking: [SpeakerEntry] = []
    private var myMemberID: UInt32 = 0
    /// Set from outside (a call hung up by the other side) to leave at the next tick.
    var leaveRequested = false
    /// Called every tick with the time (calls use it to drive their presence session).
    var onTick: ((Int64) -> Void)?
    /// Extra key handling (calls: `h` hangs up); returns true when the key was used.
    var onKey: ((UInt8) -> Bool)?

    init(room: String, identity: String, server: PeerAddress, token: @escaping () -> String, media: MediaEngine, ui: TerminalUI,
         duration: Double, say: String?, reconnect: Bool) {
        self.room = room
        self.identity = identity
        self.server = server
        self.token = token
        self.media = media
        self.ui = ui
        self.duration = duration
        self.say = say
        self.reconnect = reconnect
    }

    /// Runs until leaving; returns the exit code.
    func run() -> Int32 {
        let socket = openSocket(for: server)
        let start = Clock.monotonicNanoseconds()
        var backoff = RejoinBackoff()
        var everJoined = false
        var said = false
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        let poller = Poller(ui.interactive ? [socket.fd, 0] : [socket.fd])
        while true {
            let session = ClientSession(server: server, token: token(), room: room, muted: media.muted, speakersFromMedia: true,
                                        now: Clock.monotonicNanoseconds(),
                                        unixMilliseconds: { Int64(Clock.unixMilliseconds()) })
            var nextTick = Clock.monotonicNanoseconds()
            var rtt: Int64 = 20_000_000
            func flush() { for d in session.drainOutgoing() { try? socket.send(d, to: session.destination) } }
            _ = session.tick(now: nextTick)
            flush()
            var outcome: Int32?
            loop: while true {
                let now = Clock.monotonicNanoseconds()
                if interrupted.load(ordering: .relaxed) || leaveRequested || (duration > 0 && Double(now - start) / 1e9 >= duration)
                    || (media.inputEnded && !media.listenOnly && duration == 0) {
                    session.leave(now: now)
                    flush()
                    ui.event("left \(room)")
                    return 0
                }
                poller.wait(timeoutMilliseconds: Int32(max(0, min(20, (nextTick - now) / 1_000_000))))
                while let (n, from) = socket.receive(into: buffer) {
                    // Only the relay's public port and the welcome's port speak for the session: anything else,
                    // another port on the relay's host included, is not the room.
                    guard n > 0, session.isFromRelay(from) else { continue }
                    let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                    let arrival = Clock.monotonicNanoseconds()
                    if bytes[0] == Signalling.magic {
                        for event in session.handle(bytes, from: from, now: arrival) {
                            if case .roundTrip(let ns) = event { rtt = ns }
                            if let code = handle(event, session: session) { outcome = code; break loop }
                        }
                    } else {
                        media.receive(bytes, now: arrival)
                        session.noteTraffic(now: arrival)
                    }
                }
                while let key = ui.key() { if handleKey(key, session: session) { outcome = 0; session.leave(now: now); flush(); break loop } }
                let tickNow = Clock.monotonicNanoseconds()
                if tickNow >= nextTick {
                    let joined = session.state == .joined || session.state == .resuming
                    do {
                        try media.tick(now: tickNow, joined: joined, roundTrip: rtt) { try? socket.send($0, to: session.destination) }
                    } catch {
                        ui.close()
                        fail(error.message, code: 1)
                    }
                    nextTick += 20_000_000
                    if tickNow - nextTick > 200_000_000 { nextTick = tickNow + 20_000_000 }  // stalled: don't catch up
                    _ = session.tick(now: tickNow)
                    if mode == "forward", let heard = media.speaking.update(now: tickNow) { showSpeakers(heard) }
                    onTick?(tickNow)
                    if joined, !said, let say {
                        said = true
                        if let id = session.sendText(say, now: tickNow) { ui.event("sent text \(id)") }
                    }
                    updateStatus(session)
                }
                flush()
                if case .ended(let reason) = session.state {
                    if !everJoined && session.welcome == nil {
                        ui.close()
                        fail("cannot reach the relay at \(server): \(reason)", code: 5)
                    }
                    ui.event("connection lost: \(reason)")
                    outcome = nil
                    break loop
                }
                if session.state == .joined { everJoined = true; backoff.reset() }
                ui.draw(now: tickNow)
            }
            if let outcome { return outcome }
            guard reconnect else { return 5 }
            let wait = backoff.take()
            ui.event("reconnecting in \(wait / 1_000_000_000) s")
            let until = Clock.monotonicNanoseconds() + wait
            while Clock.monotonicNanoseconds() < until {
                if interrupted.load(ordering: .relaxed) { return 0 }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    /// Reacts to a session event; returns an exit code when the stay is over.
    private func handle(_ event: ClientSession.Event, session: ClientSession) -> Int32? {
        switch event {
        case .welcomed(let w):
            mode = w.mode
            myMemberID = w.memberID
            names[w.ssrc] = identity
            media.start(ssrc: w.ssrc)
            ui.event("joined \(w.room) as \(w.identity) (member \(w.memberID), ssrc \(w.ssrc), port \(w.port), mode \(w.mode), \(w.memberCount) others)")
        case .memberList(let list):
            for m in list { names[m.ssrc] = m.identity; members[m.memberID] = m }
            ui.event("members: " + (list.isEmpty ? "(nobody else)" : list.map { $0.identity + ($0.flags.contains(.muted) ? " (muted)" : "") }.joined(separator: ", ")))
        case .member(let kind, let m, let reason):
            names[m.ssrc] = m.identity
            switch kind {
            case .joined: members[m.memberID] = m; ui.event("\(m.identity) joined")
            case .left: members[m.memberID] = nil; media.speaking.forget(ssrc: m.ssrc); ui.event("\(m.identity) left" + (reason.isEmpty ? "" : ": \(reason)"))
            case .muted:
                if m.memberID != myMemberID { members[m.memberID] = m }
                ui.event("\(m.identity) muted")
            case .unmuted:
                if m.memberID != myMemberID { members[m.memberID] = m }
                ui.event("\(m.identity) unmuted")
            }
        case .speakers(let list):  // mix rooms (forward rooms: `showSpeakers`, from the streams themselves)
            speaking = list
            ui.event("speaking: " + (list.isEmpty ? "(nobody)" : list.map { "\(who($0.memberID)) (-\($0.level) dBov)" }.joined(separator: ", ")))
        case .text(let from, let direct, let text):
            ui.event("\(direct ? "direct text" : "text") from \(from): \(text)")
        case .textStatus(let id, let delivered, let reason):
            ui.event("text \(id) " + (delivered ? (reason.isEmpty ? "delivered" : "delivered, but \(reason)") : "failed: \(reason)"))
        case .refused(let code, let reason):
            ui.close()
            writeLine("parley: the relay refused to let us join: \(reason) (code \(code.rawValue))", fd: 2)
            return 3
        case .forgotten(let reason):
            // The relay restarted (or dropped us while we were away): the run loop sees the session ended and joins
            // afresh after the backoff, as after a shutdown.
            ui.event("the relay no longer knows this session (\(reason)); joining afresh")
        case .goodbye(let code, let reason):
            ui.event("the relay ended the session: \(reason)")
            switch code {
            case .relayShutdown where reconnect, .timedOut where reconnect: return nil
            case .left: return 0
            default: return 4
            }
        case .resumed:
            ui.event("resumed from a new address")
        case .roundTrip:
            break
        }
        return nil
    }

    /// A forward room's speakers as this client hears them (`SpeakingTracker`), shown as the relay's list would be.
    private func showSpeakers(_ heard: [SpeakingTracker.Speaker]) {
        speaking = heard.map { s in
            SpeakerEntry(memberID: members.values.first { $0.ssrc == s.ssrc }?.memberID ?? 0, ssrc: s.ssrc, level: s.level)
        }
        ui.event("speaking: " + (heard.isEmpty ? "(nobody)" : heard.map { "\(names[$0.ssrc] ?? "ssrc \($0.ssrc)") (-\($0.level) dBov)" }.joined(separator: ", ")))
    }

    private func who(_ memberID: UInt32) -> String {
        memberID == myMemberID ? identity : (members[memberID]?.identity ?? "member \(memberID)")
    }

    /// Live-view keys; returns true to leave.
    private func handleKey(_ key: UInt8, session: ClientSession) -> Bool {
        let now = Clock.monotonicNanoseconds()
        if var text = ui.typing {
            switch key {
            case 10, 13:
                if !text.isEmpty, let id = session.sendText(text, now: now) { ui.event("you: \(text) (text \(id))") }
                ui.typing = nil
            case 27: ui.typing = nil
            case 127, 8: if !text.isEmpty { text.removeLast() }; ui.typing = text
            default:
                if key >= 32 { text.unicodeScalars.append(Unicode.Scalar(key)); ui.typing = text }
            }
            ui.touch()
            return false
        }
        if onKey?(key) == true { return false }
        switch key {
        case UInt8(ascii: "q"): return true
        case UInt8(ascii: "m"):
            media.muted.toggle()
            session.setMuted(media.muted, now: now)
            ui.event(media.muted ? "you are muted" : "you are unmuted")
        case UInt8(ascii: "t"): ui.typing = ""; ui.touch()
        default: break
        }
        return false
    }

    private func updateStatus(_ session: ClientSession) {
        guard ui.interactive else { return }
        let audible = Set(media.audibleSSRCs)
        var lines = ["parley · room \(room) · \(identity)\(media.muted ? " (muted)" : "") · mic \(media.listenOnly ? "off" : "-\(media.inputLevel) dBov")"
                     + " · \(session.state == .joined ? "connected" : "connecting")"]
        let speakingIDs = Set(speaking.map(\.memberID))
        for m in members.values.sorted(by: { $0.identity < $1.identity }) {
            let talking = speakingIDs.contains(m.memberID) || audible.contains(m.ssrc)
            lines.append("  \(talking ? "🔊" : "  ") \(m.identity)\(m.flags.contains(.muted) ? " (muted)" : "")")
        }
        let x = media.xruns
        lines.append("  sent \(media.packetsSent) · received \(media.packetsReceived) · concealed \(media.concealedFrames) · NACKs \(media.nacksSent) · xruns \(x.over)/\(x.under)")
        ui.status = lines
    }
}
