import Foundation
import ParleyClientCore
import ParleyNet
import ParleyWire

/// `parley say`: one text to a room without staying. Joins listen-only through the same machinery as `parley join`
/// (no sound device is opened), sends the text once welcomed, waits for its status and leaves.
enum SayCommand {
    static let usage = """
    usage: parley say ROOM TEXT... --identity NAME [--server HOST:PORT] [--token T] [--name N] [--image FILE]
                      [--verbose] [--relay-key KEY | --cleartext]
    \(SecurityOptions.usage)

    Joins ROOM on the relay (default 127.0.0.1:7400) listen-only, with no sound device, sends TEXT (the words after
    ROOM, joined by spaces) to the room, waits for its status and leaves: "text 1 delivered", "text 1 kept in the
    room's history; nobody else is here now" (the relay keeps the room's texts for later joiners), or "text 1 failed:
    …". The room's members see NAME join and leave. --image FILE (PNG, JPEG, WebP or GIF) is uploaded to the relay's
    HTTP API (PARLEY_URL, default http://127.0.0.1:7480) and goes with the text, which may then be left out. Without
    --token it mints one from PARLEY_API_KEY / PARLEY_API_SECRET (dev defaults when unset). Several texts: pipe them
    to parley join ROOM --no-tui, one a line.
    Exit: 0 delivered or kept, 10 not delivered, 2 usage, 3 refused by the relay, 4 removed by the relay, 5 relay
    unreachable, 11 the relay did not prove it holds the expected key.
    """

    static func run(_ arguments: [String]) -> Int32 {
        let valued = SecurityOptions.valued.union(["identity", "server", "token", "name", "image"])
        let o = Options(arguments, valued: valued, switches: SecurityOptions.switches.union(["verbose"]), usage: usage)
        guard let room = o.positional.first else { fail("say needs a ROOM and a TEXT\n\(usage)") }
        let text = o.positional.dropFirst().joined(separator: " ")
        guard !text.isEmpty || o["image"] != nil else { fail("say needs a TEXT (or --image FILE)\n\(usage)") }
        guard text.utf8.count <= Signalling.maxTextBytes else {
            fail("the text is \(text.utf8.count) bytes: a text must be at most \(Signalling.maxTextBytes) bytes")
        }
        guard let identity = o["identity"], !identity.isEmpty else { fail("say needs --identity\n\(usage)") }
        guard let server = PeerAddress(parsing: o["server"] ?? "127.0.0.1:7400") else {
            fail("--server must be HOST:PORT")
        }
        let given = givenToken(o, identity: identity)
        let token = {
            given ?? mintToken(identity: identity, name: o["name"], room: room, ttlSeconds: 3600, publish: false,
                               admin: false, mode: nil)
        }
        JoinCommand.checkRoomName(room, token: token())
        let image = o["image"].map { ImageUpload.upload($0, token: token()) }
        var audio = AudioOptions(Options([], valued: [], switches: [], usage: usage))
        audio.noPlayback = true
        let devices = DeviceAudio(audio: audio, listenOnly: true)
        let ui = TerminalUI(noTUI: true)
        SignalHandlers.install()
        let security = SecurityOptions.security(o, token: given)
        let configuration = DeviceAudio.configuration(room: room, audio: audio, listenOnly: true, muted: false,
                                                      reconnect: true, security: security)
        let call = RoomCall(identity: identity, server: server, token: token, configuration: configuration,
                            devices: devices, ui: ui, duration: 0, say: text)
        call.sayAttachments = image.map { [$0] } ?? []
        call.verbose = o.has("verbose")
        call.leaveOnceSaid = true
        let code = call.run()
        devices.finish()
        guard code == 0 else { return code }
        guard let status = call.sayStatus else {
            writeLine("parley: left before the relay said what became of the text", fd: 2)
            return 10
        }
        return status.delivered || status.reason == RoomTextKept.reason ? 0 : 10
    }
}
