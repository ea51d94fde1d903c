import ParleyAuth
import ParleyClientCore
import ParleyNet
import ParleyWire

// What a stay in a room shows and takes: engine and session events as lines, the speaking line, texts typed or piped
// in, keys, and the live view's status line (`RoomCall` holds the state; its run loop calls these).
extension RoomCall {
    /// Shows an engine event; returns an exit code when the stay is over.
    func show(_ event: ClientEngine.Event) -> Int32? {
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
    func show(_ event: ClientSession.Event) {
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
    func sendLines(_ texts: StdinTexts, now: Instant) {
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
    func doneSaying(now: Instant) -> Bool {
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
    func showSpeakers(_ heard: [SpeakingTracker.Speaker]) {
        speaking = heard.map { s in
            SpeakerEntry(memberID: members.member(ssrc: s.ssrc)?.memberID ?? 0, ssrc: s.ssrc, level: s.level)
        }
        showSpeaking(heard.map { (names[$0.ssrc] ?? "ssrc \($0.ssrc)", $0.level) })
    }

    /// The "speaking:" line, each person once (a member moving between nodes is heard through two streams for a
    /// moment), and only when it says something new.
    func showSpeaking(_ heard: [(name: String, level: UInt8)]) {
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

    func who(_ memberID: UInt32) -> String {
        memberID == myMemberID ? identity : (members[id: memberID]?.identity ?? "member \(memberID)")
    }

    /// Live-view keys; returns true to leave.
    func handleKey(_ key: UInt8) -> Bool {
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
    func connection(now: Instant) -> String {
        if let quiet = engine.relaySilence(now: now) { return "relay silent for \(quiet.wholeSeconds) s, retrying" }
        return engine.session.state == .joined ? "connected" : "connecting"
    }

    func updateStatus() {
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
