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
    private(set) var names: [UInt32: String] = [:]
    /// Who is in the room, one entry per identity (a member moving between nodes is listed once).
    private var members: MemberListing
    private var speaking: [SpeakerEntry] = []
    private var lastSpeaking = ""
    private var myMemberID: UInt32 = 0
    /// The message being typed after `t` (UTF-8 bytes from the terminal → text), or nil when not typing.
    private var typing: LineEditor?
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
    private(set) var sayStatus: (delivered: Bool, reason: String)?
    private var sayID: UInt32?
    /// Whether `say` was sent (or tried).
    private var said = false
    /// Texts sent whose status has not come yet, and when the last one was sent: a leave asked for on stdin waits for
    /// them (at most `statusWait`), so the person sees what became of the texts.
    private var unanswered: Set<UInt32> = []
    private var lastSent = Instant.origin
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

    /// Shows an engine event; returns an exit code when the stay is over.
    private func show(_ event: ClientEngine.Event) -> Int32? {
        switch event {
        case .session(let e): show(e)
        case .speakersHeard(let heard): showSpeakers(heard)
        case .connectionLost(let reason): ui.event("connection lost: \(reason)")
        case .rejoining(let wait): ui.event("reconnecting in \(wait.wholeSeconds) s")
        case .redirected(let node): ui.event("the room is on another node of the cluster: joining it at \(node)")
        case .moving(let node, let draining):
            ui.event("moving to the node at \(node) because the node at \(draining) is draining")
        case .failingOver(let node): ui.event("the relay is lost; rejoining through another node of the cluster at \(node)")
        case .relaySilent(let quiet): ui.notice("the relay at \(server) stopped answering (nothing for \(quiet.wholeSeconds) s); still trying")
        case .relayBack(let after): ui.notice("the relay at \(server) answers again (silent for \(after.wholeSeconds) s)")
        case .over(let ending):
            switch ending {
            case .refused(let code, let reason):
                ui.close()
                writeLine("parley: the relay refused to let us join: \(reason) (code \(code.rawValue))", fd: 2)
                return 3
            case .left: return 0
            case .removed(let code, let reason):
                ui.close()
                // A `moved` this stay does not follow (a call's room) names the next node: said as a sentence.
                let next = code == .moved ? try? NodePointer(parsing: reason) : nil
                let why = next.map { "the room went on at the node at \($0.address)" } ?? reason
                writeLine("parley: \(Self.removal(code, room: room)): \(why.isEmpty ? "no reason given" : why)", fd: 2)
                return 4
            case .unreachable(let reason):
                ui.close()
                fail("cannot reach the relay at \(server): \(reason)", code: 5)
            case .lost: return 5
            case .relayUnproven(let reason):
                ui.close()
                fail("refusing the relay at \(server): \(reason)", code: 11)
            }
        }
        return nil
    }

    /// How the session is protected, for the line after "joined": encrypted with which relay key, and whether that key
    /// was insisted on (`--relay-key` or the token's `relay_key`) or taken as the relay presented it.
    static func protection(_ signalling: SignallingSession) -> String {
        switch signalling.security {
        case .cleartext:
            return "NOT encrypted (--cleartext): everything, the token included, is readable on the path"
        case .encrypted(let pinned):
            let key = signalling.presentedRelayKey.map { Base64URL.encode($0) } ?? "?"
            return pinned == nil
                ? "encrypted; relay key \(key) (as presented: compare it with the relay's ready line, or pass --relay-key)"
                : "encrypted; relay key \(key) (proven, as expected)"
        }
    }

    /// Shows what the session said.
    private func show(_ event: ClientSession.Event) {
        switch event {
        case .welcomed(let w):
            myMemberID = w.memberID
            members.reset()  // the welcome's own list follows, with this node's ids
            names[w.ssrc] = identity
            ui.event("joined \(title == "room \(w.room)" ? w.room : "the \(title)") as \(w.identity) (member \(w.memberID), ssrc \(w.ssrc), port \(w.port), mode \(w.mode), \(w.memberCount) others)")
            let signalling = engine.session.signalling
            if verbose || signalling.security == .cleartext { ui.event(Self.protection(signalling)) }
        case .memberList(let list):
            for m in list { names[m.ssrc] = m.identity }
            members.add(list)
            // A member moving between nodes (this one too) may be in it: named once, or not at all.
            var named: Set = [identity]
            let unique = list.filter { named.insert($0.identity).inserted }
            let shown = unique.map { $0.identity + ($0.flags.contains(.muted) ? " (muted)" : "") }
            ui.event("members: " + (shown.isEmpty ? "(nobody else)" : shown.joined(separator: ", ")))
        case .member(let kind, let m, let reason):
            names[m.ssrc] = m.identity
            switch kind {
            case .joined:
                if members.joined(m) { ui.event("\(m.identity) joined") }
            case .left:
                if members.left(m) { ui.event("\(m.identity) left" + (reason.isEmpty ? "" : ": \(reason)")) }
            case .muted where m.memberID == myMemberID && m.flags.contains(.mutedByRoom):
                ui.event("you are muted by the room" + (reason.isEmpty ? " (only the room can unmute you)" : ": \(reason)"))
            case .unmuted where m.memberID == myMemberID:
                ui.event("you are unmuted")
            case .muted:
                if m.memberID != myMemberID { members.update(m) }
                ui.event("\(m.identity) muted" + (m.flags.contains(.mutedByRoom) ? " by the room" : ""))
            case .unmuted:
                if m.memberID != myMemberID { members.update(m) }
                ui.event("\(m.identity) unmuted")
            }
        case .audience(let count):
            ui.event("\(count) listening")
        case .speakers(let list):  // mix rooms (forward rooms: `showSpeakers`, from the streams themselves)
            speaking = list
            showSpeaking(list.map { (who($0.memberID), $0.level) })
        case .text(let from, let direct, let text, let ids):
            ui.event("\(direct ? "direct text" : "text") from \(from): " + ImageDownloads.line(text, ids))
            images?.fetch(ids, from: from)
        case .recording(let active, let id):
            ui.event(active ? "this room is being recorded (recording \(id))" : "the recording of this room stopped")
        case .textStatus(let id, let delivered, let reason):
            ui.event(Self.statusLine(id, delivered: delivered, reason: reason))
            unanswered.remove(id)
            if id == sayID, sayStatus == nil { sayStatus = (delivered, reason) }
        case .refused, .relayUnproven:
            break  // the engine ends with `.over(.refused)` / `.over(.relayUnproven)`
        case .roomKey:
            break  // the engine's media crypto takes it (a member left: the room's key changed)
        case .forgotten(let reason):
            // The relay restarted (or dropped us while we were away): the engine joins afresh after the backoff, as
            // after a shutdown.
            ui.event("the relay no longer knows this session (\(reason)); joining afresh")
        case .goodbye(.moved, _):
            break  // its reason is the next node for the engine ("HOST:PORT KEY"); `.moving` says it in a sentence
        case .goodbye(_, let reason):
            ui.event("the relay ended the session: \(reason)")
        case .resumed:
            ui.event("resumed from a new address")
        case .roundTrip:
            break
        }
    }

    /// Sends the lines read from stdin, in order; one that cannot go yet (the signalling channel is full) waits with
    /// those after it for the next tick.
    private func sendLines(_ texts: StdinTexts, now: Instant) {
        var lines = texts.takeWaiting()[...]
        while let line = lines.first {
            let tooLong = { (bytes: Int) in
                "a line of \(bytes) bytes was not sent: a text must be at most \(Signalling.maxTextBytes) bytes"
            }
            switch line {
            case .tooLong(let bytes):
                ui.notice(tooLong(bytes))
            case .text(let text) where text.utf8.count > Signalling.maxTextBytes:
                ui.notice(tooLong(text.utf8.count))
            case .text(let text):
                guard let id = engine.sendText(text, now: now) else {
                    texts.putBack(Array(lines))
                    return
                }
                ui.event("sent text \(id)")
                unanswered.insert(id)
                lastSent = now
            }
            lines = lines.dropFirst()
        }
    }

    /// Whether it is time to leave because the person is done: `/quit` or the end of stdin (`stdinTexts`), or `parley
    /// say`'s text answered — once every line read is sent and the texts sent have their status (or `statusWait`
    /// passed).
    private func doneSaying(now: Instant) -> Bool {
        let asked = stdinTexts?.wantsToLeave == true || (leaveOnceSaid && said)
        guard asked, stdinTexts?.waiting.isEmpty != false else { return false }
        return unanswered.isEmpty || now - lastSent >= Self.statusWait
    }

    /// A room text's status for people: delivered (naming who was not keeping up), kept in the room's history for later
    /// joiners when nobody else was there (`RoomTextKept`: not a failure), or failed and why.
    static func statusLine(_ id: UInt32, delivered: Bool, reason: String) -> String {
        if delivered { return "text \(id) " + (reason.isEmpty ? "delivered" : "delivered, but \(reason)") }
        return reason == RoomTextKept.reason ? "text \(id) \(reason)" : "text \(id) failed: \(reason)"
    }

    /// A forward room's speakers as this client hears them (`SpeakingTracker`), shown as the relay's list would be.
    private func showSpeakers(_ heard: [SpeakingTracker.Speaker]) {
        speaking = heard.map { s in
            SpeakerEntry(memberID: members.member(ssrc: s.ssrc)?.memberID ?? 0, ssrc: s.ssrc, level: s.level)
        }
        showSpeaking(heard.map { (names[$0.ssrc] ?? "ssrc \($0.ssrc)", $0.level) })
    }

    /// The "speaking:" line, each person once (a member moving between nodes is heard through two streams for a
    /// moment), and only when it says something new.
    private func showSpeaking(_ heard: [(name: String, level: UInt8)]) {
        var named = Set<String>()
        let unique = heard.filter { named.insert($0.name).inserted }
        let names = unique.map { "\($0.name) (-\($0.level) dBov)" }
        let line = "speaking: " + (names.isEmpty ? "(nobody)" : names.joined(separator: ", "))
        guard line != lastSpeaking else { return }
        lastSpeaking = line
        ui.event(line)
    }

    /// What happened, for the line that says why the relay removed us.
    static func removal(_ code: GoodbyeCode, room: String) -> String {
        switch code {
        case .kicked: "removed from the room \(room)"
        case .roomClosed: "the room \(room) was closed"
        case .replaced: "this session was replaced by a newer one"
        case .moved: "the relay's node is draining"
        default: "the relay ended the session"
        }
    }

    private func who(_ memberID: UInt32) -> String {
        memberID == myMemberID ? identity : (members[id: memberID]?.identity ?? "member \(memberID)")
    }

    /// Live-view keys; returns true to leave.
    private func handleKey(_ key: UInt8) -> Bool {
        let now = Clock.monotonic()
        if var editor = typing {
            switch editor.feed(key) {
            case .editing:
                typing = editor
                ui.typing = editor.text
            case .finished(let text):
                if !text.isEmpty, let id = engine.sendText(text, now: now) { ui.event("you: \(text) (text \(id))") }
                typing = nil
                ui.typing = nil
            case .cancelled:
                typing = nil
                ui.typing = nil
            }
            ui.touch()
            return false
        }
        if onKey?(key) == true { return false }
        switch key {
        case UInt8(ascii: "q"): return true
        case UInt8(ascii: "m"):
            if engine.setMuted(!engine.muted, now: now) {
                ui.event(engine.muted ? "you are muted" : "you are unmuted")
            } else {
                ui.event("you cannot unmute: you are muted by the room until it lifts the mute")
            }
        case UInt8(ascii: "t"): typing = LineEditor(); ui.typing = ""; ui.touch()
        default: break
        }
        return false
    }

    /// The header's word on the link: connected, connecting, or how long the relay has been silent.
    private func connection(now: Instant) -> String {
        if let quiet = engine.relaySilence(now: now) { return "relay silent for \(quiet.wholeSeconds) s, retrying" }
        return engine.session.state == .joined ? "connected" : "connecting"
    }

    private func updateStatus() {
        guard ui.interactive else { return }
        let audible = Set(engine.audibleSSRCs)
        let mute = engine.mutedByRoom ? " (muted by the room)" : engine.muted ? " (muted)" : ""
        let recording = engine.session.recording ? " · ● REC" : ""
        var lines = ["parley · \(title)\(recording) · \(identity)\(headerNote)\(mute) · mic \(devices.listenOnly ? "off" : "-\(engine.inputLevel) dBov")"
                     + " · \(connection(now: Clock.monotonic()))"]
        let speaking = Set(speaking.compactMap { members[id: $0.memberID]?.identity })
        let audibleNames = Set(members.byID.values.filter { audible.contains($0.ssrc) }.map(\.identity))
        for m in members.entries {
            let talking = speaking.contains(m.identity) || audibleNames.contains(m.identity)
            let muted = m.flags.contains(.mutedByRoom) ? " (muted by the room)" : m.flags.contains(.muted) ? " (muted)" : ""
            lines.append("  \(talking ? "🔊" : "  ") \(m.identity)\(muted)")
        }
        let x = devices.xruns
        lines.append("  sent \(engine.packetsSent) · received \(engine.packetsReceived) · concealed \(engine.concealedFrames) · NACKs \(engine.nacksSent) · xruns \(x.over)/\(x.under)"
                     + (engine.mediaRoundTrip.map { " · RTT \($0.milliseconds) ms" } ?? ""))
        ui.status = lines
    }
}
