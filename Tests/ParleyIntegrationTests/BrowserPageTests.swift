import Foundation
import ParleyAuth
import Testing

/// What a person sees on the sample page when the relay ends its session or refuses it. The page, opened with
/// `&observe=1`, logs `PARLEY STATE {json}` (its `parleyState()`: the status line, the buttons, its open
/// PeerConnections and live microphone tracks, whether any raw JSON is on the page) each time that changes; the tests
/// read those lines from Chromium's stderr.
extension ProcessTests.BrowserTests {
    /// The page states in Chromium's stderr `text`, oldest first.
    static func states(in text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { line in
            guard line.contains("PARLEY STATE "), let start = line.firstIndex(of: "{"),
                  let end = line.lastIndex(of: "}") else { return nil }
            let state = jsonObject(String(line[start...end]))
            return state.isEmpty ? nil : state
        }
    }

    /// Waits up to `seconds` for a logged state after the first `after` that satisfies `predicate`; returns the first
    /// that does, and how many states came before it.
    static func waitForState(_ browser: Browser, seconds: Double, after: Int = 0,
                             _ predicate: @escaping ([String: Any]) -> Bool) -> (index: Int, state: [String: Any])? {
        // The predicate reads the text it is given: `waitForStderr` holds the lock `stderr` takes.
        let found = { (text: String) in states(in: text).enumerated().dropFirst(after).first { predicate($0.element) } }
        _ = browser.process.waitForStderr(seconds: max(0, seconds)) { found($0) != nil }
        return found(browser.process.stderr).map { (index: $0.offset, state: $0.element) }
    }

    /// The page for `room` with `token`, joining at once and logging its states.
    func observedPage(_ base: String, room: String, token: String, profile: String = "chromium") throws -> Browser {
        try Browser(base: base, room: room, token: token, listen: false, seconds: 0,
                    fakeAudio: try toneFile(440, seconds: 30), profile: "\(dir)/\(profile)", query: "&join=1&observe=1",
                    join: false)
    }

    /// Waits for the page to be in the room with its audio connected: one PeerConnection, its microphone live, Leave
    /// on.
    func connected(_ page: Browser, room: String) -> [String: Any]? {
        Self.waitForState(page, seconds: 20) {
            ($0["status"] as? String ?? "").hasPrefix("Connected to \(room)") && $0["leaveEnabled"] as? Bool == true
                && $0["openPeerConnections"] as? Int == 1 && $0["liveMicrophones"] as? Int == 1
        }?.state
    }

    /// The page is out of the room and shows it: Join on, Leave off, no PeerConnection open, no microphone live.
    func expectTornDown(_ state: [String: Any], _ context: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(state["joinEnabled"] as? Bool == true, "\(state)\n\(context)", sourceLocation: sourceLocation)
        #expect(state["leaveEnabled"] as? Bool == false, "\(state)\n\(context)", sourceLocation: sourceLocation)
        #expect(state["muteEnabled"] as? Bool == false && state["sendEnabled"] as? Bool == false,
                "\(state)\n\(context)", sourceLocation: sourceLocation)
        #expect(state["openPeerConnections"] as? Int == 0, "\(state)\n\(context)", sourceLocation: sourceLocation)
        #expect(state["liveMicrophones"] as? Int == 0, "\(state)\n\(context)", sourceLocation: sourceLocation)
        #expect(state["inRoom"] as? Bool == false, "\(state)\n\(context)", sourceLocation: sourceLocation)
        #expect(state["rawJSONShown"] as? Bool == false, "\(state)\n\(context)", sourceLocation: sourceLocation)
    }

    @Test("""
        a backend kick: within 2 s the page's status line reads the reason, Join is on, Leave off, its PeerConnection \
        and microphone closed
        """)
    func pageShowsKick() throws {
        let (relay, _, base) = try relay()
        defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
        let room = "web-\(UInt32.random(in: 0...UInt32.max))"
        let page = try observedPage(base, room: room, token: try mint(["--identity", "web", "--room", room]))
        defer { page.stop() }
        _ = try #require(connected(page, room: room), "the page never connected:\n\(page.log)\n\(relay.stderr)")
        let admin = try mint(["--admin", "--identity", "ops"])
        let kickedAt = Date()
        #expect(try curl("DELETE", base + "/v1/rooms/\(room)/members/web", token: admin).status == 200)
        let reason = "removed from the room: kicked by the backend"
        let left = 2 - Date().timeIntervalSince(kickedAt)
        let removed = try #require(
            Self.waitForState(page, seconds: left) { ($0["status"] as? String ?? "").contains(reason) },
            "no \"\(reason)\" within 2 s of the kick:\n\(page.log)")
        expectTornDown(removed.state, page.log)
        // The page's event stream stays open a moment for a later reason: once it closed, the status still says why.
        let settled = try #require(
            Self.waitForState(page, seconds: 5, after: removed.index) { $0["eventStreamOpen"] as? Bool == false },
            "\(page.log)").state
        #expect((settled["status"] as? String ?? "").contains(reason), "\(settled)")
        expectTornDown(settled, page.log)
    }

    @Test("the room closes: the page says \"the room was closed: closed by the backend\" and is torn down")
    func pageShowsRoomClosed() throws {
        let (relay, _, base) = try relay()
        defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
        let room = "web-\(UInt32.random(in: 0...UInt32.max))"
        let page = try observedPage(base, room: room, token: try mint(["--identity", "web", "--room", room]))
        defer { page.stop() }
        _ = try #require(connected(page, room: room), "the page never connected:\n\(page.log)\n\(relay.stderr)")
        let closedAt = Date()
        let admin = try mint(["--admin", "--identity", "ops"])
        #expect(try curl("DELETE", base + "/v1/rooms/\(room)", token: admin).status == 200)
        // The page is out at once (its own member_left, or the DTLS close_notify); room_closed names the cause.
        let reason = "the room was closed: closed by the backend"
        let closed = try #require(Self.waitForState(page, seconds: 2 - Date().timeIntervalSince(closedAt)) {
            ($0["status"] as? String ?? "").contains(reason)
        }, "no \"\(reason)\" within 2 s:\n\(page.log)").state
        expectTornDown(closed, page.log)
    }

    /// How a refused join is set up: the token the page holds, and what the room is like.
    enum Refusal: String, CaseIterable, CustomTestStringConvertible {
        case badToken, expiredToken, otherRoomsToken, fullRoom
        var testDescription: String { rawValue }
    }

    /// A member token for `room` that expired an hour ago, signed with the dev credentials the test relays run with.
    static func expiredToken(room: String) -> String {
        let now = Int64(Date().timeIntervalSince1970)
        return TokenSigner(apiKey: DevDefaults.apiKey, apiSecret: DevDefaults.apiSecret)
            .mint(TokenClaims(identity: "web", room: room, expiresAt: now - 3600, notBefore: now - 7200,
                              issuedAt: now - 7200))
    }

    @Test(
        "a refused join: the status line holds a sentence saying why (not JSON, not \"not connected\"), Join on again",
        arguments: Refusal.allCases)
    func pageExplainsRefusal(_ refusal: Refusal) throws {
        let (relay, server, base) = try relay()
        defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
        let room = "web-\(UInt32.random(in: 0...UInt32.max))"
        let token: String, expected: String
        var member: Spawned?
        defer { member?.signal(SIGINT); _ = member?.wait(seconds: 5) }
        switch refusal {
        case .badToken:
            token = "not-a-token"
            expected = "Could not join \(room). That is not a member token"
        case .expiredToken:
            token = Self.expiredToken(room: room)
            expected = "Could not join \(room). Your token has expired: get a new one with parley token"
        case .otherRoomsToken:
            token = try mint(["--identity", "web", "--room", "elsewhere"])
            expected = "Could not join \(room). Your token does not let you into this room: the token is for room"
        case .fullRoom:
            let admin = try mint(["--admin", "--identity", "ops"])
            let create = #"{"name":"\#(room)","max_members":1}"#
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: create).status == 201)
            let m = try Spawned("parley", ["join", room, "--identity", "cli", "--server", server, "--listen-only",
                                           "--no-playback", "--no-tui", "--duration", "30"])
            member = m
            #expect(m.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(m.stdout)\(m.stderr)")
            token = try mint(["--identity", "web", "--room", room])
            expected = "Could not join \(room). The room is full (1 member): try again when someone leaves."
        }
        let page = try observedPage(base, room: room, token: token)
        defer { page.stop() }
        let refused = try #require(
            Self.waitForState(page, seconds: 15) { ($0["status"] as? String ?? "").hasPrefix("Could not join") },
            "the page never said it could not join:\n\(page.log)").state
        let status = refused["status"] as? String ?? ""
        #expect(status.hasPrefix(expected), "\(status)")
        #expect(!status.contains("{") && !status.contains("\"error\""), "\(status)")
        #expect(!status.lowercased().contains("not connected"), "\(status)")
        #expect(status.hasSuffix("."), "not a sentence: \(status)")
        expectTornDown(refused, page.log)
    }
}
