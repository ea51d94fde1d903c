// `parley message NAME TEXT`: one direct text (with an image), delivered, stored or failed.

import ParleyClientCore
import ParleyNet
import ParleyWire

extension CallCommands {
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
