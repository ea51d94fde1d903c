// `parley chat accept|decline NAME`: answers a chat request.

import ParleyClientCore
import ParleyNet
import ParleyWire

extension CallCommands {
    static let chatUsage = """
    usage: parley chat accept|decline NAME --identity ME [--server HOST:PORT] [--token T] [--images-dir DIR]

    Answers the chat NAME asked for with their first text to you (`parley listen` shows it as a chat request).
    Accepted, the texts NAME sent since follow, and later ones come as any other; declined, they fail and NAME is told.
    Exit: 0 answered, 10 no request from NAME is waiting.
    """

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
}
