// `parley listen`: online for calls — rings, answers (by key or by itself), talks, shows direct texts.

import ParleyClientCore
import ParleyCrypto
import ParleyNet
import ParleyWire

extension CallCommands {
    static let listenUsage = """
    usage: parley listen --identity NAME [--server HOST:PORT] [--token T] [--auto-answer [--answer-after S] | --auto-reject]
                         [--hangup-after S] [--duration S] [--images-dir DIR] [--no-e2ee] [--no-tui] [--verbose]
                         [audio options]
    \(AudioOptions.usage)

    Stays online for calls. An incoming call rings (bell and a line): a answers, r rejects; in a call h hangs up;
    q quits. Direct texts to you are shown; the images they carry are fetched from the relay's HTTP API (PARLEY_URL,
    default http://127.0.0.1:7480) and saved in DIR (default ./parley-images, made 0700) as ID.png/.jpeg/.webp/.gif:
    "image from alice saved to PATH". --auto-answer/--auto-reject/--hangup-after are for bots and tests.
    Calls are end-to-end encrypted when both clients can: both sides print the same "safety code" to compare by
    voice. --no-e2ee sends no key share (as a client without end-to-end calls; for tests). --verbose also shows the
    relay's key when a call's room is joined.
    """

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
}
