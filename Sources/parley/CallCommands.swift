import Foundation
import ParleyClientCore
import ParleyCrypto
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

enum CallCommands {
    static let listenUsage = """
    usage: parley listen --identity NAME [--server HOST:PORT] [--token T] [--auto-answer [--answer-after S] | --auto-reject]
                         [--hangup-after S] [--duration S] [--images-dir DIR] [--no-e2ee] [--no-tui] [audio options]
    \(AudioOptions.usage)

    Stays online for calls. An incoming call rings (bell and a line): a answers, r rejects; in a call h hangs up;
    q quits. Direct texts to you are shown; the images they carry are fetched from the relay's HTTP API (PARLEY_URL,
    default http://127.0.0.1:7480) and saved in DIR (default ./parley-images, made 0700) as ID.png/.jpeg/.webp/.gif:
    "image from alice saved to PATH". --auto-answer/--auto-reject/--hangup-after are for bots and tests.
    Calls are end-to-end encrypted when both clients can: both sides print the same "safety code" to compare by
    voice. --no-e2ee sends no key share (as a client without end-to-end calls; for tests).
    """
    static let callUsage = """
    usage: parley call NAME --identity ME [--server HOST:PORT] [--token T] [--hangup-after S] [--images-dir DIR] [--no-e2ee] [--no-tui]
                       [audio options]
    \(AudioOptions.usage)

    Calls NAME and shows progress (ringing, answered, declined, no answer after 30 s, unavailable). h hangs up.
    The call is end-to-end encrypted when both clients can: both sides print the same "safety code" to compare by
    voice; otherwise both say the call is NOT end-to-end encrypted. --no-e2ee sends no key share (for tests).
    Exit: 0 the call took place, 6 declined, 7 no answer, 8 unavailable, 9 failed, 3 refused, 5 relay unreachable.
    """
    static let messageUsage = """
    usage: parley message NAME [TEXT] [--image FILE] --identity ME [--server HOST:PORT] [--token T] [--images-dir DIR]
                          [--wait SECONDS]

    Sends a direct text to NAME. Prints "delivered" when NAME is online (exit 0); "stored" when the relay keeps it
    for NAME — away, or not yet accepting a chat with you — and delivers it later (exit 0); or "failed: why" (exit
    10: NAME declined your chat request, the relay keeps no texts, …). Texts kept for you while you were away are
    shown too. --image FILE (PNG, JPEG, WebP or GIF) is uploaded first to the relay's HTTP API (PARLEY_URL, default
    http://127.0.0.1:7480) and goes with the text, which may then be left out; NAME's `parley listen` saves it. Exit 1
    the file cannot be read, 3 the relay refused the image (too large, not an image), 5 its API cannot be reached.
    --wait SECONDS: a stored text is followed up to SECONDS more (online as ME meanwhile): "delivered" when NAME takes
    it (exit 0), "failed: why" (exit 10), or "still waiting" when the time runs out (exit 0: the relay keeps it).
    """
    static let chatUsage = """
    usage: parley chat accept|decline NAME --identity ME [--server HOST:PORT] [--token T] [--images-dir DIR]

    Answers the chat NAME asked for with their first text to you (`parley listen` shows it as a chat request).
    Accepted, the texts NAME sent since follow, and later ones come as any other; declined, they fail and NAME is told.
    Exit: 0 answered, 10 no request from NAME is waiting.
    """

    static let common: Set<String> = ["identity", "server", "token", "name", "duration", "hangup-after", "answer-after"]

    static func parse(_ arguments: [String], usage: String, extraSwitches: Set<String> = [], extraValued: Set<String> = ["images-dir"])
        -> (Options, String, PeerAddress, TerminalUI) {
        let o = Options(arguments, valued: AudioOptions.valued.union(common).union(SecurityOptions.valued).union(extraValued),
                        switches: AudioOptions.switches.union(["no-tui", "no-e2ee"]).union(extraSwitches).union(SecurityOptions.switches), usage: usage)
        guard let identity = o["identity"], !identity.isEmpty else { fail("needs --identity\n\(usage)") }
        guard let server = PeerAddress(parsing: o["server"] ?? "127.0.0.1:7400") else { fail("--server must be HOST:PORT") }
        return (o, identity, server, TerminalUI(noTUI: o.has("no-tui")))
    }

    static func presenceToken(_ o: Options, identity: String) -> String {
        // A token id of its own: two devices of one identity starting in the same second present different tokens
        // (the relay drops a token already online from another address as a replay).
        givenToken(o, identity: identity) ?? mintToken(identity: identity, name: o["name"], room: nil, ttlSeconds: 86_400, publish: true, admin: false, mode: nil,
                                tokenID: String(UInt64.random(in: 1...UInt64.max), radix: 16))
    }

    /// Waits for the registration; exits on refusal or no answer.
    static func register(_ p: PresenceClient) {
        p.flush()
        while true {
            p.wait(milliseconds: 50)
            let events = p.poll(now: Clock.monotonic())
            for (k, e) in events.enumerated() {
                switch e {
                case .registered:
                    p.leftover = Array(events[(k + 1)...])
                    return
                case .refused(let code, let reason):
                    p.ui.close()
                    fail("the relay refused to register us: \(reason) (code \(code.rawValue))", code: 3)
                case .relayUnproven(let reason):
                    p.ui.close()
                    fail("refusing the relay at \(p.server): \(reason)", code: 11)
                case .ended(let reason):
                    p.ui.close()
                    fail("cannot reach the relay at \(p.server): \(reason)", code: 5)
                default: break
                }
            }
            if interrupted.load(ordering: .relaxed) { p.ui.close(); exit(0) }
        }
    }

    /// Finishes a call's end-to-end key agreement once it is answered and says how the call is protected: the safety
    /// code both sides print (to compare by voice), or that the call is NOT end-to-end encrypted because the other
    /// client sent no share (or an unusable one). Returns the frame cipher and code, or nil for a call the relay can hear.
    static func endToEnd(_ p: PresenceClient, agreement: CallKeyAgreement, callID: UInt32, callerIdentity: String,
                         calleeIdentity: String, room: String, sentNoShare: Bool) -> (cipher: FrameCipher, code: SafetyCode)? {
        let peer = agreement.role == .caller ? calleeIdentity : callerIdentity
        guard !sentNoShare else {
            p.ui.event("this call is NOT end-to-end encrypted: --no-e2ee (the relay can hear it)")
            return nil
        }
        let share = p.session.calls[callID]?.peerKeyShare ?? []
        guard !share.isEmpty else {
            p.ui.event("this call is NOT end-to-end encrypted: \(peer)'s client sent no key share (the relay can hear it)")
            return nil
        }
        guard let keys = try? agreement.agree(peerShare: share, callerIdentity: callerIdentity, calleeIdentity: calleeIdentity, room: room) else {
            p.ui.event("this call is NOT end-to-end encrypted: \(peer)'s key share is unusable (the relay can hear it)")
            return nil
        }
        p.ui.event("end-to-end encrypted; safety code: \(keys.safetyCode) — compare it with \(peer) by voice")
        return (keys.frameCipher(), keys.safetyCode)
    }

    /// Talks in an answered call's room until either side hangs up; returns when it is over.
    static func talk(_ p: PresenceClient, callID: UInt32, peer: String, room: String, token: String, o: Options, identity: String,
                     server: PeerAddress, endToEnd: (cipher: FrameCipher, code: SafetyCode)?, images: ImageDownloads) {
        let audio = AudioOptions(o)
        let devices = DeviceAudio(audio: audio, listenOnly: false)
        let roomCall = RoomCall(identity: identity, server: server, token: { token },
                                configuration: DeviceAudio.configuration(room: room, audio: audio, listenOnly: false, muted: false, reconnect: false,
                                                                         security: SecurityOptions.security(o, token: token)),
                                devices: devices, ui: p.ui, duration: 0, say: nil)
        // The live view keeps the code in its header, where it stays while the event lines scroll.
        roomCall.title = "call with \(peer)"
        roomCall.headerNote = endToEnd.map { " · safety code \($0.code)" } ?? " · NOT end-to-end encrypted"
        roomCall.engine.endToEnd = endToEnd?.cipher
        roomCall.images = images
        let hangupAfter = o["hangup-after"].flatMap(Double.init)
        let start = Clock.monotonic()
        var over = false
        p.ui.keys = "h hang up · m mute/unmute · t type a message"
        roomCall.onKey = { key in
            guard key == UInt8(ascii: "h") else { return false }
            p.session.hangUp(callID, now: Clock.monotonic())
            p.flush()
            p.ui.event("you hung up")
            roomCall.leaveRequested = true
            return true
        }
        roomCall.onTick = { now in
            if let after = hangupAfter, !over, (now - start).seconds >= after {
                over = true
                p.session.hangUp(callID, now: now)
                p.flush()
                p.ui.event("you hung up")
                roomCall.leaveRequested = true
            }
            for e in p.poll(now: now) {
                if case .callStatus(let id, let state, let reason, _, _) = e, id == callID, state == .ended || state == .failed {
                    p.ui.event("call ended: \(reason)")
                    over = true
                    roomCall.leaveRequested = true
                }
                if case .text(let from, let text, let ids) = e { showDirectText(from: from, text, ids, ui: p.ui, images: images) }
            }
        }
        _ = roomCall.run()
        devices.finish()
        let engine = roomCall.engine
        let played = engine.receiver.streams.values.reduce(0) { $0 + $1.audio.jitter.stats.played }
        p.ui.event("call audio: received \(engine.packetsReceived) packets, played \(played) frames"
                   + (endToEnd == nil ? " (not end-to-end encrypted)" : ", \(engine.framesRefusedEndToEnd) refused by end-to-end decryption"))
        if !over {  // we left the room some other way (q, Ctrl-C, lost contact): end the call for the other side too
            p.session.hangUp(callID, now: Clock.monotonic())
            p.flush()
        }
        p.ui.keys = "a answer · r reject · q quit"
    }

    static func listen(_ arguments: [String]) -> Int32 {
        let (o, identity, server, ui) = parse(arguments, usage: listenUsage, extraSwitches: ["auto-answer", "auto-reject"])
        SignalHandlers.install()
        let p = PresenceClient(server: server, token: { presenceToken(o, identity: identity) },
                               security: SecurityOptions.security(o, token: o["token"]), ui: ui)
        let images = ImageDownloads(o, token: { presenceToken(o, identity: identity) })
        register(p)
        ui.keys = "a answer · r reject · q quit"
        ui.status = ["parley · \(identity) · online, waiting for calls"]
        ui.event("online as \(identity); waiting for calls")
        let duration = o["duration"].flatMap(Double.init) ?? 0
        let answerAfter = o["answer-after"].flatMap(Double.init) ?? 0
        let start = Clock.monotonic()
        var ringing: (id: UInt32, from: String, since: Instant)?
        /// This side's end-to-end key agreement, drawn when we accept a call.
        var agreements: [UInt32: CallKeyAgreement] = [:]
        func accept(_ r: (id: UInt32, from: String, since: Instant), now: Instant) {
            let agreement = CallKeyAgreement(role: .callee)
            agreements = [r.id: agreement]
            p.session.answer(r.id, accept: true, keyShare: o.has("no-e2ee") ? [] : agreement.share, now: now)
        }
        while true {
            let now = Clock.monotonic()
            if interrupted.load(ordering: .relaxed) || (duration > 0 && (now - start).seconds >= duration) { break }
            p.wait(milliseconds: 20)
            for e in p.poll(now: Clock.monotonic()) {
                switch e {
                case .registered:
                    ui.event("online as \(identity); waiting for calls")
                case .incomingCall(let id, let from, let name):
                    ringing = (id, from, Clock.monotonic())
                    ui.bell()
                    ui.event("incoming call from \(from)\(name.isEmpty ? "" : " (\(name))")"
                             + (p.session.isCallRequest(id) ? " — a call request: you have no chat with \(from)" : "")
                             + (ui.interactive ? " — a answers, r rejects" : ""))
                    if o.has("auto-reject") {
                        p.session.answer(id, accept: false, now: Clock.monotonic())
                        ui.event("rejected the call from \(from)")
                        ringing = nil
                    }
                case .callStatus(let id, let state, let reason, let room, let token):
                    if state == .answered, let room, let token {
                        let peer = p.session.calls[id]?.peer ?? ringing?.from ?? "?"
                        ringing = nil
                        ui.event("in a call with \(peer)")
                        let cipher = agreements.removeValue(forKey: id).flatMap {
                            endToEnd(p, agreement: $0, callID: id, callerIdentity: peer,
                                     calleeIdentity: p.session.welcome?.identity ?? identity, room: room, sentNoShare: o.has("no-e2ee"))
                        }
                        talk(p, callID: id, peer: peer, room: room, token: token, o: o, identity: identity, server: server, endToEnd: cipher,
                             images: images)
                        ui.status = ["parley · \(identity) · online, waiting for calls"]  // not the call's room or speakers
                        ui.event("waiting for calls")
                    } else if state == .ended, ringing?.id == id {
                        ui.event("missed call from \(ringing!.from): \(reason)")
                        ringing = nil
                    }
                case .text(let from, let text, let ids): showDirectText(from: from, text, ids, ui: ui, images: images)
                case .keptText(let from, let text, let sentAt, let request, let ids):
                    showKept(ui, from: from, text: text, sentAt: sentAt, request: request, attachments: ids, images: images)
                case .chat(let status): ui.event(chatLine(status))
                default: break
                }
            }
            for change in p.engine.takeRelayChanges() {
                switch change {
                case .silent(let quiet):
                    ui.notice("the relay at \(server) stopped answering (nothing for \(quiet.wholeSeconds) s); still trying")
                    ui.status = ["parley · \(identity) · relay silent, retrying"]
                case .back(let after):
                    ui.notice("the relay at \(server) answers again (silent for \(after.wholeSeconds) s)")
                    ui.status = ["parley · \(identity) · online, waiting for calls"]
                }
            }
            // The session ended (here or while a call's room loop polled it): register afresh when the relay went
            // away or forgot us, as `join` rejoins; a refusal or a removal is final.
            switch p.engine.renewal(now: Clock.monotonic()) {
            case .refused(let code, let reason):
                ui.close()
                fail("the relay refused to register us: \(reason) (code \(code.rawValue))", code: 3)
            case .registerAgain(let reason, let wait):
                ui.event("offline: \(reason); registering again in \(wait.wholeSeconds) s")
                ringing = nil
            case .removed(_, let reason):
                ui.close()
                fail("offline: \(reason)", code: 5)
            case nil:
                break
            }
            if let r = ringing, o.has("auto-answer"), (Clock.monotonic() - r.since).seconds >= answerAfter {
                accept(r, now: Clock.monotonic())
                ui.event("answered the call from \(r.from)")
                ringing = nil
            }
            while let key = ui.key() {
                switch key {
                case UInt8(ascii: "a"): if let r = ringing { accept(r, now: now); ui.event("answering \(r.from)"); ringing = nil }
                case UInt8(ascii: "r"): if let r = ringing { p.session.answer(r.id, accept: false, now: now); ui.event("rejected the call from \(r.from)"); ringing = nil }
                case UInt8(ascii: "q"): interrupted.store(true, ordering: .relaxed)
                default: break
                }
            }
            images.report(ui)
            p.flush()
            ui.draw(now: Clock.monotonic())
        }
        p.session.leave(now: Clock.monotonic())
        p.flush()
        images.finish(ui)
        ui.close()
        return 0
    }

    /// A direct text as `listen` and `call` show it, its images fetched and saved (`ImageDownloads`).
    static func showDirectText(from: String, _ text: String, _ ids: [String], ui: TerminalUI, images: ImageDownloads) {
        ui.event("direct text from \(from): " + ImageDownloads.line(text, ids))
        images.fetch(ids, from: from)
    }

    static func call(_ arguments: [String]) -> Int32 {
        let (o, identity, server, ui) = parse(arguments, usage: callUsage)
        guard let callee = o.positional.first else { fail("call needs the NAME to call\n\(callUsage)") }
        SignalHandlers.install()
        let p = PresenceClient(server: server, token: { presenceToken(o, identity: identity) },
                               security: SecurityOptions.security(o, token: o["token"]), ui: ui)
        let images = ImageDownloads(o, token: { presenceToken(o, identity: identity) })
        register(p)
        ui.keys = "h hang up"
        ui.status = ["parley · \(identity) · calling \(callee)"]
        let agreement = CallKeyAgreement(role: .caller)
        guard let callID = p.session.call(callee, keyShare: o.has("no-e2ee") ? [] : agreement.share, now: Clock.monotonic()) else {
            fail("cannot call \(callee)")
        }
        p.flush()
        ui.event("calling \(callee)")
        var code: Int32 = 9
        loop: while true {
            if interrupted.load(ordering: .relaxed) {
                p.session.hangUp(callID, now: Clock.monotonic())
                p.flush()
                ui.event("cancelled")
                code = 0
                break
            }
            p.wait(milliseconds: 20)
            for e in p.poll(now: Clock.monotonic()) {
                guard case .callStatus(let id, let state, let reason, let room, let token) = e, id == callID else {
                    if case .ended(let reason) = e { ui.event("offline: \(reason)"); code = 5; break loop }
                    continue
                }
                switch state {
                case .ringing: ui.event("ringing \(callee)…")
                case .answered:
                    guard let room, let token else { continue }
                    ui.event("answered")
                    let cipher = endToEnd(p, agreement: agreement, callID: callID, callerIdentity: p.session.welcome?.identity ?? identity,
                                          calleeIdentity: callee, room: room, sentNoShare: o.has("no-e2ee"))
                    talk(p, callID: callID, peer: callee, room: room, token: token, o: o, identity: identity, server: server, endToEnd: cipher,
                         images: images)
                    code = 0
                    break loop
                case .declined: ui.event("declined" + (reason.isEmpty ? "" : ": \(reason)")); code = 6; break loop
                case .noAnswer: ui.event("no answer"); code = 7; break loop
                case .unavailable: ui.event("unavailable: \(reason)"); code = 8; break loop
                case .ended: ui.event("call ended: \(reason)"); code = 0; break loop
                case .failed: ui.event("call failed: \(reason)"); code = 9; break loop
                }
            }
            while let key = ui.key() {
                guard key == UInt8(ascii: "h") else { continue }
                p.session.hangUp(callID, now: Clock.monotonic())
                p.flush()
                ui.event("cancelled")
                code = 0
                break loop
            }
            ui.draw(now: Clock.monotonic())
        }
        p.session.leave(now: Clock.monotonic())
        p.flush()
        images.finish(ui)
        ui.close()
        return code
    }

    /// A text kept for us while we were away, or a chat request; its images fetched and saved.
    static func showKept(_ ui: TerminalUI, from: String, text: String, sentAt: UInt64, request: Bool, attachments: [String],
                         images: ImageDownloads) {
        var when = ""
        if sentAt > 0 {
            let f = DateFormatter()
            f.dateFormat = "yyyy-MM-dd HH:mm:ss"
            when = " (sent \(f.string(from: Date(timeIntervalSince1970: Double(sentAt) / 1000))))"
        }
        ui.event("direct text from \(from)\(when): " + ImageDownloads.line(text, attachments))
        images.fetch(attachments, from: from)
        if request { ui.event("\(from) asks to chat with you: parley chat accept \(from) (or decline); their next texts wait until you do") }
    }

    static func chatLine(_ s: ChatStatus) -> String {
        switch s.state {
        case .requested: "\(s.identity) asks to chat with you"
        case .accepted: "chat with \(s.identity): accepted"
        case .declined: "chat with \(s.identity): declined"
        }
    }

    static func chat(_ arguments: [String]) -> Int32 {
        let (o, identity, server, ui) = parse(arguments, usage: chatUsage)
        guard o.positional.count == 2, ["accept", "decline"].contains(o.positional[0]) else { fail("chat needs accept|decline and NAME\n\(chatUsage)") }
        let accept = o.positional[0] == "accept", peer = o.positional[1]
        let p = PresenceClient(server: server, token: { presenceToken(o, identity: identity) },
                               security: SecurityOptions.security(o, token: o["token"]), ui: ui)
        let images = ImageDownloads(o, token: { presenceToken(o, identity: identity) })
        register(p)
        p.session.answerChat(peer, accept: accept, now: Clock.monotonic())
        p.flush()
        let deadline = Clock.monotonic() + .seconds(2)
        var code: Int32 = 10
        loop: while Clock.monotonic() < deadline {
            p.wait(milliseconds: 20)
            for e in p.poll(now: Clock.monotonic()) {
                switch e {
                case .chat(let s) where s.identity == peer:
                    ui.event(chatLine(s))
                    code = 0
                    if !accept { break loop }
                case .keptText(let from, let text, let sentAt, let request, let ids):
                    showKept(ui, from: from, text: text, sentAt: sentAt, request: request, attachments: ids, images: images)
                case .text(let from, let text, let ids): showDirectText(from: from, text, ids, ui: ui, images: images)
                default: break
                }
            }
            images.report(ui)
        }
        if code != 0 { ui.event("no chat request from \(peer) is waiting") }
        p.session.leave(now: Clock.monotonic())
        p.flush()
        images.finish(ui)
        return code
    }

    static func message(_ arguments: [String]) -> Int32 {
        let (o, identity, server, ui) = parse(arguments, usage: messageUsage, extraValued: ["image", "images-dir", "wait"])
        let wait = o["wait"].map { Double($0) ?? -1 } ?? 0
        guard wait >= 0, wait <= 86_400 else { fail("--wait must be a number of seconds (0–86400)") }
        guard o.positional.count == 2 || (o.positional.count == 1 && o["image"] != nil) else {
            fail("message needs NAME and TEXT (or --image FILE)\n\(messageUsage)")
        }
        let text = o.positional.count == 2 ? o.positional[1] : ""
        guard !text.isEmpty || o["image"] != nil, text.utf8.count <= Signalling.maxTextBytes else {
            fail("the text must be 1–4096 bytes (or empty with --image)")
        }
        // The image first: a refused upload sends nothing, and the relay sees the session only with the id in hand.
        let attachments = o["image"].map { file in [ImageUpload.upload(file, token: presenceToken(o, identity: identity))] } ?? []
        if let file = o["image"] { ui.event("uploaded \(file) as image \(attachments[0])") }
        let p = PresenceClient(server: server, token: { presenceToken(o, identity: identity) },
                               security: SecurityOptions.security(o, token: o["token"]), ui: ui)
        let images = ImageDownloads(o, token: { presenceToken(o, identity: identity) })
        register(p)
        guard let id = p.session.sendText(to: o.positional[0], text, attachments: attachments, now: Clock.monotonic()) else {
            fail("the text must be 1–4096 bytes (or empty with --image)")
        }
        p.flush()
        var deadline = Clock.monotonic() + .seconds(5)
        var outcome: Int32?
        var stored = false
        // After our text's outcome, a moment more for texts kept for us (delivered to this session when it registered).
        var until = deadline
        while Clock.monotonic() < until {
            p.wait(milliseconds: 20)
            for e in p.poll(now: Clock.monotonic()) {
                switch e {
                case .textStatus(let mid, let delivered, let reason) where mid == id && (outcome == nil || stored):
                    ui.event(delivered ? "delivered" : "failed: \(reason)")
                    outcome = delivered ? 0 : 10
                    stored = false
                    until = min(until, Clock.monotonic() + .milliseconds(300))
                case .textStored(let mid) where mid == id && outcome == nil:
                    ui.event("stored: the relay delivers it when \(o.positional[0]) is online (and accepts a chat with you)")
                    outcome = 0
                    if wait > 0 {
                        // Stay online as ME: the relay tells this session when the text is delivered or fails.
                        stored = true
                        deadline = Clock.monotonic() + Interval(seconds: wait)
                        until = deadline
                    }
                case .keptText(let from, let text, let sentAt, let request, let ids):
                    showKept(ui, from: from, text: text, sentAt: sentAt, request: request, attachments: ids, images: images)
                case .text(let from, let text, let ids): showDirectText(from: from, text, ids, ui: ui, images: images)
                case .chat(let s): ui.event(chatLine(s))
                default: break
                }
            }
            images.report(ui)
            if outcome != nil, !stored, until == deadline { until = min(deadline, Clock.monotonic() + .milliseconds(300)) }
        }
        if stored { ui.event("still waiting: the relay keeps it for \(o.positional[0])") }
        p.session.leave(now: Clock.monotonic())
        p.flush()
        images.finish(ui)
        if let outcome { return outcome }
        ui.event("failed: no answer from the relay")
        return 10
    }
}
