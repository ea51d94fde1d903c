// `parley call NAME`: rings NAME, talks once answered, says how the call ended.

import ParleyClientCore
import ParleyCrypto
import ParleyNet
import ParleyWire

extension CallCommands {
    static let callUsage = """
    usage: parley call NAME --identity ME [--server HOST:PORT] [--token T] [--hangup-after S] [--images-dir DIR] [--no-e2ee] [--no-tui]
                       [--verbose] [audio options]
    \(AudioOptions.usage)

    Calls NAME and shows progress (ringing, answered, declined, no answer after 30 s, unavailable). h hangs up.
    NAME may be a phone: sip:USER@HOST[:PORT] (a numeric host) is called through the relay's SIP gateway and the
    trunk that lets it out (docs/sip.md); such calls are not end-to-end encrypted.
    The call is end-to-end encrypted when both clients can: both sides print the same "safety code" to compare by
    voice; otherwise both say the call is NOT end-to-end encrypted. --no-e2ee sends no key share (for tests).
    --verbose also shows the relay's key when the call's room is joined.
    Exit: 0 the call took place, 6 declined, 7 no answer, 8 unavailable, 9 failed, 3 refused, 5 relay unreachable.
    """

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
}
