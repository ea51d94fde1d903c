import Foundation
import ParleyClientCore
import ParleyNet
import ParleyWire

/// `parley join`: talk in a room. Captures and plays through ALSA (or WAV files / a tone when headless), shows who is
/// in the room and who is speaking, sends texts, mutes, reconnects by itself when the relay restarts or the network drops.
enum JoinCommand {
    static let usage = """
    usage: parley join ROOM --identity NAME [--server HOST:PORT] [--token T] [--name N] [--duration SECONDS]
                       [--mute] [--listen-only] [--mode forward|mix|hybrid] [--audience] [--say TEXT] [--image FILE]
                       [--images-dir DIR] [--history N] [--no-tui] [--tcp] [--verbose] [audio options]
    \(AudioOptions.usage)

    Joins ROOM on the relay (default 127.0.0.1:7400). Without --token it mints one from PARLEY_API_KEY /
    PARLEY_API_SECRET (dev defaults when unset). Keys in the live view: m mute/unmute (not while muted by the room),
    t type a message to the room, q leave. --audience: the room this join opens is an audience room (with --listen-only
    this member is counted, not announced). Without a terminal (or with --no-tui) it prints one line per event, and each
    line typed or piped to it is sent to the room as a text; a line /quit, or the end of the input after a line was read
    (Ctrl-D on a terminal), leaves once the texts are answered (stdin at /dev/null changes nothing: the join stays).
    Ctrl-C leaves (and finalises --output). One text without staying: parley say ROOM TEXT.
    --say TEXT sends a text to the room once joined; --image FILE (PNG, JPEG, WebP or GIF) is uploaded to the relay's HTTP
    API (PARLEY_URL, default http://127.0.0.1:7480) before joining and goes with it (--say may then be left out). Images
    in the room's texts are saved in --images-dir DIR (default ./parley-images, made 0700): "image from bob saved to PATH".
    When UDP gets no answer for 2 s it joins over TCP (the relay's TCP port, the same number) and says so; --tcp
    joins over TCP from the start. IPv6 servers in brackets: --server '[2001:db8::1]:7400'.
    --history N shows the room's last N texts (1–200) first, as the relay kept them (its HTTP API, PARLEY_URL).
    --verbose also shows the relay's key after each join and, at exit, what each stream received and how its jitter
    buffer played it, the round trips measured at the join and the longest gap between received packets.
    Exit: 0 left, 1 local error (device, file), 2 usage, 3 refused by the relay, 4 removed by the relay, 5 relay unreachable,
    11 the relay did not prove it holds the expected key.
    """

    static func run(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: AudioOptions.valued.union(["identity", "server", "token", "name", "duration", "mode", "say", "image",
                                                                      "images-dir", "history"])
                            .union(SecurityOptions.valued),
                        switches: AudioOptions.switches.union(["mute", "listen-only", "no-tui", "audience", "tcp"])
                            .union(["verbose"]).union(SecurityOptions.switches), usage: usage)
        guard let room = o.positional.first else { fail("join needs a ROOM\n\(usage)") }
        guard let identity = o["identity"], !identity.isEmpty else { fail("join needs --identity\n\(usage)") }
        guard let server = PeerAddress(parsing: o["server"] ?? "127.0.0.1:7400") else { fail("--server must be HOST:PORT") }
        let duration = o["duration"].map { Double($0) ?? -1 } ?? 0
        guard duration >= 0 else { fail("--duration must be a number of seconds") }
        if let mode = o["mode"], !RoomMode.isValid(mode) { fail("--mode must be \(RoomMode.choices)") }
        let listenOnly = o.has("listen-only")
        let given = givenToken(o, identity: identity)
        let token = { given ?? mintToken(identity: identity, name: o["name"], room: room, ttlSeconds: 3600,
                                                publish: !listenOnly, admin: false, mode: o["mode"], audience: o.has("audience")) }
        checkRoomName(room, token: token())
        // An image to say goes up before the join: a refused upload joins nothing.
        let image = o["image"].map { ImageUpload.upload($0, token: token()) }
        var audio = AudioOptions(o)
        audio.offersListenOnly = true
        let devices = DeviceAudio(audio: audio, listenOnly: listenOnly)
        let ui = TerminalUI(noTUI: o.has("no-tui"))
        if let n = o["history"] {
            guard let limit = Int(n), (1...200).contains(limit) else { fail("--history must be a number of texts, 1–200") }
            showHistory(room: room, limit: limit, token: token(), ui: ui)
        }
        SignalHandlers.install()
        let call = RoomCall(identity: identity, server: server, token: token,
                            configuration: DeviceAudio.configuration(room: room, audio: audio, listenOnly: listenOnly, muted: o.has("mute"), reconnect: true,
                                                                     security: SecurityOptions.security(o, token: given)),
                            devices: devices, ui: ui, duration: duration, say: image == nil ? o["say"] : o["say"] ?? "")
        call.sayAttachments = image.map { [$0] } ?? []
        call.tcpFirst = o.has("tcp")
        call.images = ImageDownloads(o, token: token)
        call.verbose = o.has("verbose")
        if !ui.interactive { call.stdinTexts = StdinTexts() }
        let code = call.run()
        call.images?.finish(ui)
        devices.finish()
        ui.close()
        if call.verbose { summary(call) }
        return code
    }

    /// `--verbose`'s summary at exit: per stream, what arrived and how its jitter buffer played it; the round trips
    /// measured at the join and where the buffers started; the longest gap between received packets.
    static func summary(_ call: RoomCall) {
        let engine = call.engine
        for (ssrc, count) in engine.receivedBySSRC.sorted(by: { $0.key < $1.key }) {
            var line = "received ssrc \(ssrc) from \(call.names[ssrc] ?? (engine.mode != RoomMode.forward ? "the room mix" : "unknown")): \(count) packets"
            if let s = engine.receiver.streams[ssrc]?.audio.jitter.stats {
                line += String(format: "; played %d, concealed %d (%d events), FEC %d, late %d, accelerated %d, expanded %d, delay %.0f ms (target %.0f)",
                               s.played, s.concealedFrames, s.concealmentEvents, s.fecRecovered, s.lateDropped, s.accelerated, s.expanded,
                               s.currentDelayMilliseconds, s.targetDelayMilliseconds)
            }
            if let n = engine.receiver.streams[ssrc]?.nacks, n.requested > 0 {
                line += "; NACKed \(n.requested), recovered \(n.recovered)"
            }
            writeLine(line)
        }
        if let prior = engine.receiver.startupPrior, let path = JitterPrior.spread(roundTrips: engine.joinRoundTrips) {
            writeLine("path at join: \(engine.joinRoundTrips.count) pongs, round trips vary by \(path.spread.milliseconds) ms " +
                      "(fastest \(path.fastest.milliseconds) ms); jitter buffers started at \(prior.milliseconds) ms")
        }
        if engine.packetsReceived > 1 { writeLine("longest gap between received packets: \(engine.longestReceiveGap.milliseconds) ms") }
    }
}

extension JoinCommand {
    /// Exits 2 when the room name is so long that a join (with `token`) cannot be sent at all; the relay refuses names
    /// over its limit with the reason, but this one would never reach it.
    static func checkRoomName(_ room: String, token: String) {
        let request = JoinRequest(token: token, room: room, cookie: [UInt8](repeating: 0, count: 64),
                                  nonce: [UInt8](repeating: 0, count: 16))
        let probe = SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: .join(request))
        guard (try? probe.serialized()) != nil else {
            fail("the room name is too long: \(room.utf8.count) bytes (longest allowed: \(Signalling.maxNameBytes) bytes)")
        }
    }

    /// The room's last `limit` kept texts, oldest first, through the HTTP API with the member's own token; a relay that
    /// keeps none, or cannot be reached, is one line on stderr and the join goes on.
    static func showHistory(room: String, limit: Int, token: String, ui: TerminalUI) {
        let path = "/v1/rooms/" + (room.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? room)
            + "/messages?limit=\(limit)"
        switch RelayHTTP.exchange("GET", path, token: token) {
        case .success(let answer) where answer.isSuccess:
            let messages = (answer.object["messages"] as? [[String: Any]] ?? []).reversed()
            let f = DateFormatter()
            f.dateFormat = "yyyy-MM-dd HH:mm:ss"
            if messages.isEmpty { ui.event("no earlier texts in \(room)") }
            for m in messages {
                let at = Date(timeIntervalSince1970: Double((m["at"] as? NSNumber)?.int64Value ?? 0) / 1000)
                ui.event("earlier (\(f.string(from: at))) \(m["identity"] ?? ""): \(m["text"] ?? "")")
            }
        case .success(let answer): writeLine("parley: no history: the relay answered \(answer.refusal)", fd: 2)
        case .failure(let why): writeLine("parley: no history: \(why.message)", fd: 2)
        }
    }
}
