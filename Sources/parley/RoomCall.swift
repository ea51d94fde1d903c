import ParleyAuth
import ParleyClientCore
import ParleyNet
import ParleyWire

/// Opens a UDP socket for talking to `server`, or exits with a one-line error.
func openSocket(for server: PeerAddress) -> UDPSocket {
    do {
        return try UDPSocket(bindingTo: server.isIPv4 ? PeerAddress(ipv4: 0, port: 0) : PeerAddress(high: 0, low: 0, port: 0))
    } catch {
        fail("cannot open a UDP socket: \(error)", code: 1)
    }
}

/// One stay in a room (a `join`, or the room of an answered call): the socket, the devices and the view around a
/// `ClientEngine`, which holds the session, the media paths and the rejoin schedule.
final class RoomCall {
    let room: String
    let identity: String
    let server: PeerAddress
    let devices: DeviceAudio
    let ui: TerminalUI
    let duration: Double
    let say: String?
    /// UDP, or the relay's TCP port (`RelayLink`).
    let link: RelayLink
    /// Over TCP from the start (`--tcp`), not only when UDP gets no answer.
    var tcpFirst = false
    /// How long UDP may go unanswered before a join tries TCP.
    static let udpPatience = Interval.milliseconds(2_000)
    /// The engine (its counters and streams make the summary).
    let engine: ClientEngine
    /// SSRC → identity, from the member list and events.
    var names: [UInt32: String] = [:]
    /// Who is in the room, one entry per identity (a member moving between nodes is listed once).
    var members: MemberListing
    var speaking: [SpeakerEntry] = []
    var lastSpeaking = ""
    var myMemberID: UInt32 = 0
    /// The message being typed after `t` (UTF-8 bytes from the terminal → text), or nil when not typing.
    var typing: LineEditor?
    /// Set from outside (a call hung up by the other side) to leave at the next tick.
    var leaveRequested = false
    /// Called every tick with the time (calls use it to drive their presence session).
    var onTick: ((Instant) -> Void)?
    /// What the header calls this stay: "room NAME" for a join; "call with PEER" for a call, whose room's name is
    /// internal (`call-…`) and means nothing to the person.
    var title: String
    /// Appended to the live view's header line (a call's safety code, or that it is not end-to-end encrypted).
    var headerNote = ""
    /// Extra key handling (calls: `h` hangs up); returns true when the key was used.
    var onKey: ((UInt8) -> Bool)?
    /// Image ids to send with `say` (uploaded before the join).
    var sayAttachments: [String] = []
    /// Where the images of the room's texts are fetched to (nil: not fetched).
    var images: ImageDownloads?
    /// `--verbose`: also the relay key line after each welcome (a cleartext session is said always).
    var verbose = false
    /// `join` without its live view: the lines on stdin, each a room text (nil: stdin is not read for texts).
    var stdinTexts: StdinTexts?
    /// `parley say`: leave once the `say` text has its status (or `statusWait` after it was sent without one).
    var leaveOnceSaid = false
    /// The `say` text's status once it came (the first, when a second follows).
    var sayStatus: (delivered: Bool, reason: String)?
    var sayID: UInt32?
    /// Whether `say` was sent (or tried).
    var said = false
    /// Texts sent whose status has not come yet, and when the last one was sent: a leave asked for on stdin waits for
    /// them (at most `statusWait`), so the person sees what became of the texts.
    var unanswered: Set<UInt32> = []
    var lastSent = Instant.origin
    /// How long a leave waits for the statuses of the texts just sent.
    static let statusWait = Interval.seconds(3)

    /// Opens the socket and the engine (which sends its join at once); exits with a one-line error when the encoder
    /// cannot start.
    init(identity: String, server: PeerAddress, token: @escaping () -> String, configuration: ClientEngine.Configuration,
         devices: DeviceAudio, ui: TerminalUI, duration: Double, say: String?) {
        self.room = configuration.room
        self.title = "room \(configuration.room)"
        self.identity = identity
        self.members = MemberListing(me: identity)
        self.server = server
        self.devices = devices
        self.ui = ui
        self.duration = duration
        self.say = say
        let link = RelayLink(server: server)
        self.link = link
        do {
            engine = try ClientEngine(server: server, token: token, configuration: configuration, now: Clock.monotonic(),
                                      unixMilliseconds: { Int64(Clock.unixMilliseconds()) }, random: SystemRandomNumberGenerator(),
                                      transmit: { bytes, to in link.send(bytes, to: to) })
        } catch {
            fail("cannot start the Opus encoder: \(error.message)", code: 1)
        }
    }

    /// Runs until leaving; returns the exit code.
    func run() -> Int32 {
        let start = Clock.monotonic()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2048, alignment: 16)
        defer { buffer.deallocate() }
        if tcpFirst { switchToTCP(because: nil) }
        // Stdin is polled for the live view's keys, or for texts while `stdinTexts` watches it.
        var readingStdin = ui.interactive || stdinTexts?.watched == true
        var poller = Poller(readingStdin ? [link.fd, 0] : [link.fd])
        var heardRelay = false
        var nextTick = Clock.monotonic()
        while true {
            let now = Clock.monotonic()
            if let texts = stdinTexts, !ui.interactive, texts.watched != readingStdin {
                readingStdin = texts.watched
                poller = Poller(readingStdin ? [link.fd, 0] : [link.fd])
            }
            if doneSaying(now: now) { leaveRequested = true }
            if interrupted.load(ordering: .relaxed), case .waitingToRejoin = engine.phase { return 0 }  // nothing to leave
            if interrupted.load(ordering: .relaxed) || leaveRequested || (duration > 0 && (now - start).seconds >= duration)
                || (devices.inputEnded && !devices.listenOnly && duration == 0) {
                if !engine.everWelcomed && !interrupted.load(ordering: .relaxed) && !leaveRequested {
                    // The stay ran out before any relay (or the node a cluster sent us to) welcomed us: never in the room.
                    ui.close()
                    fail("cannot reach the relay at \(engine.server): no welcome before the stay ended", code: 5)
                }
                engine.leave(now: now)
                ui.event("left \(room)")
                return 0
            }
            poller.wait(timeoutMilliseconds: Int32(max(0, min(20, (nextTick - now).milliseconds))))
            if !heardRelay, !link.overTCP, !engine.everWelcomed, now - start >= Self.udpPatience {
                // Nothing came back over UDP: a network that drops it. The engine's handshake goes on over TCP.
                switchToTCP(because: "no answer over UDP from \(engine.server) in \(Self.udpPatience.wholeSeconds) s")
                if link.overTCP { poller = Poller(readingStdin ? [link.fd, 0] : [link.fd]) }
                heardRelay = true  // tried once
            }
            while let (n, from) = link.receive(into: buffer) {
                heardRelay = true
                // Only the relay's public port and the welcome's port speak for the session (the engine drops the
                // rest): another port on the relay's host included, is not the room.
                for event in engine.receive(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), from: from, now: Clock.monotonic()) {
                    if let code = show(event) { return code }
                }
            }
            while let key = ui.key() {
                if handleKey(key) { engine.leave(now: now); return 0 }
            }
            if let texts = stdinTexts, !ui.interactive, readingStdin, poller.isReadable(1) { texts.read() }
            let tickNow = Clock.monotonic()
            if tickNow >= nextTick {
                do {
                    try devices.tick(now: tickNow, engine: engine)
                } catch {
                    ui.close()
                    fail(error.message, code: 1)
                }
                nextTick += .milliseconds(20)
                if tickNow - nextTick > .milliseconds(200) { nextTick = tickNow + .milliseconds(20) }  // stalled: don't catch up
                let joined = engine.inRoom
                for event in engine.tick(now: tickNow) {
                    if let code = show(event) { return code }
                }
                onTick?(tickNow)
                images?.report(ui)
                if joined, !said, let say {
                    said = true
                    sayID = engine.sendText(say, attachments: sayAttachments, now: tickNow)
                    if let id = sayID {
                        ui.event("sent text \(id)")
                        unanswered.insert(id)
                        lastSent = tickNow
                    }
                }
                if joined, let texts = stdinTexts { sendLines(texts, now: tickNow) }
                updateStatus()
            }
            ui.draw(now: tickNow)
        }
    }

    /// Moves to the relay's TCP port and says so (or that TCP failed too, leaving UDP to the handshake's last tries).
    private func switchToTCP(because reason: String?) {
        do {
            try link.useTCP(engine.server)
            ui.event((reason.map { "\($0): " } ?? "") + "joining over TCP (\(engine.server))")
        } catch {
            ui.event((reason.map { "\($0); " } ?? "") + "TCP to \(engine.server) failed too: \(error)")
        }
    }
}
