// `parley listen`, `call`, `message` and `chat` (one file each, `CallCommands+…`): what they share — their
// options, the presence session's registration, an answered call's key agreement and room, texts as shown.

import Foundation
import ParleyClientCore
import ParleyCrypto
import ParleyNet
import ParleyWire

enum CallCommands {
    static let common: Set<String> = ["identity", "server", "token", "name", "duration", "hangup-after", "answer-after"]

    static func parse(_ arguments: [String], usage: String, extraSwitches: Set<String> = [], extraValued: Set<String> = ["images-dir"])
        -> (Options, String, PeerAddress, TerminalUI) {
        let o = Options(arguments, valued: AudioOptions.valued.union(common).union(SecurityOptions.valued).union(extraValued),
                        switches: AudioOptions.switches.union(["no-tui", "no-e2ee", "verbose"]).union(extraSwitches)
                            .union(SecurityOptions.switches), usage: usage)
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
        roomCall.verbose = o.has("verbose")
        // Online over TCP (UDP got no answer): the call's room goes over TCP from the start too.
        roomCall.tcpFirst = p.link.overTCP
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
        if roomCall.verbose { JoinCommand.summary(roomCall) }  // per stream: how its jitter buffer played it
        if !over {  // we left the room some other way (q, Ctrl-C, lost contact): end the call for the other side too
            p.session.hangUp(callID, now: Clock.monotonic())
            p.flush()
        }
        p.ui.keys = "a answer · r reject · q quit"
    }

    /// A direct text as `listen` and `call` show it, its images fetched and saved (`ImageDownloads`).
    static func showDirectText(from: String, _ text: String, _ ids: [String], ui: TerminalUI, images: ImageDownloads) {
        ui.event("direct text from \(from): " + ImageDownloads.line(text, ids))
        images.fetch(ids, from: from)
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
}
