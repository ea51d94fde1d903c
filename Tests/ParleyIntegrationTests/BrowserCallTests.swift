import Foundation
import ParleyAudioIO
import Testing

/// One-to-one calls between the sample page (reachable through its presence stream, `?online=1`) and the CLI:
/// `parley call` rings the page, the page calls `parley listen`; answer, reject and hang up either way.
extension ProcessTests.BrowserTests {
    /// The page reachable as `identity` (a dev token: no token given), with `query` saying what it does.
    func reachablePage(_ base: String, identity: String, query: String, fakeAudio: String? = nil) throws -> Browser {
        try Browser(base: base, room: "lobby", token: "", listen: false, seconds: 0, fakeAudio: fakeAudio, profile: "\(dir)/chromium",
                    query: "&identity=\(identity)&online=1" + query, join: false)
    }

    /// The states the page's call went through (its `calls` log).
    func callStates(_ result: [String: Any]) -> [String] { (result["calls"] as? [[String]] ?? []).map { $0[0] } }

    @Test("parley call rings the page, the page answers: each hears the other (660 Hz from the CLI, 440 Hz from the page); the CLI says the call is not end-to-end encrypted and hangs up")
    func cliCallsPage() throws {
        let (relay, server, base) = try relay()
        defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
        let ann = "ann-\(UInt16.random(in: 0...UInt16.max))"
        // &raw=1: with its echo canceller on, Chromium takes a steady tone captured while another plays for echo and
        // removes most of it (bob's recording kept 8 % 440 Hz); the test measures the path, not the canceller.
        let browser = try reachablePage(base, identity: ann, query: "&answer=1&raw=1&callreport=20", fakeAudio: try toneFile(440, seconds: 30))
        defer { browser.stop() }
        #expect(browser.process.waitForStderr(seconds: 15) { $0.contains("reachable for calls as \(ann)") }, "\(browser.log)")
        let caller = try Spawned("parley", ["call", ann, "--identity", "bob", "--server", server, "--tone", "660", "--output", "\(dir)/bob.wav",
                                            "--hangup-after", "8", "--no-tui"])
        #expect(caller.wait(seconds: 25) == 0, "\(caller.stdout)\(caller.stderr)\n\(browser.log)")
        #expect(caller.stdout.contains("answered"), "\(caller.stdout)")
        #expect(caller.stdout.contains("this call is NOT end-to-end encrypted: \(ann)'s client sent no key share"), "\(caller.stdout)")
        let result = try #require(browser.result(seconds: 10), "no result from the page:\n\(browser.log)\n\(relay.stderr)")
        #expect(callStates(result) == ["incoming", "answered", "ended"], "\(result)")
        #expect((result["calls"] as? [[String]])?.last?.last == "hung up by bob", "\(result)")
        #expect((result["maxAudioLevel"] as? Double ?? 0) > 0.01, "the page did not hear bob: \(result)")
        let heard = try WAVReader(path: "\(dir)/bob.wav").readAllMono48k()
        let tone = toneShares(heard, frequency: 440)
        print("bob heard the page's 440 Hz tone at shares \(tone.windows) by second")
        #expect(tone.clear >= 2, "440 Hz shares of what bob heard, by second \(tone.windows); page: \(browser.log)")
    }

    @Test("the page calls a parley listen that answers, and hangs up: the CLI is told who hung up")
    func pageCallsCLI() throws {
        let (relay, server, base) = try relay()
        defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
        let bob = "bob-\(UInt16.random(in: 0...UInt16.max))"
        let listener = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--auto-answer", "--tone", "660",
                                              "--no-playback", "--no-tui", "--duration", "30"])
        defer { listener.signal(SIGTERM); listener.wait(seconds: 5) }
        #expect(listener.waitFor(seconds: 5) { $0.contains("waiting for calls") }, "\(listener.stdout)\(listener.stderr)")
        let browser = try reachablePage(base, identity: "ann", query: "&call=\(bob)&hangup=5&callreport=20", fakeAudio: try toneFile(440, seconds: 30))
        defer { browser.stop() }
        let result = try #require(browser.result(seconds: 30), "no result from the page:\n\(browser.log)\n\(listener.stdout)")
        #expect(callStates(result) == ["ringing", "answered", "hung_up"], "\(result)")
        #expect((result["maxAudioLevel"] as? Double ?? 0) > 0.01, "the page did not hear \(bob): \(result)")
        #expect(listener.waitFor(seconds: 5) { $0.contains("call ended: hung up by ann") }, "\(listener.stdout)")
        #expect(listener.stdout.contains("incoming call from ann"), "\(listener.stdout)")
    }

    @Test("the page rejects a parley call, and a parley listen rejects the page's call: each side is told")
    func rejections() throws {
        let (relay, server, base) = try relay()
        defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
        let ann = "ann-\(UInt16.random(in: 0...UInt16.max))", bob = "bob-\(UInt16.random(in: 0...UInt16.max))"
        let listener = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--auto-reject", "--no-playback", "--no-tui",
                                              "--duration", "30"])
        defer { listener.signal(SIGTERM); listener.wait(seconds: 5) }
        #expect(listener.waitFor(seconds: 5) { $0.contains("waiting for calls") }, "\(listener.stdout)\(listener.stderr)")
        let browser = try reachablePage(base, identity: ann, query: "&reject=1")
        defer { browser.stop() }
        #expect(browser.process.waitForStderr(seconds: 15) { $0.contains("reachable for calls as \(ann)") }, "\(browser.log)")
        let caller = try Spawned("parley", ["call", ann, "--identity", "carol", "--server", server, "--no-playback", "--no-tui"])
        #expect(caller.wait(seconds: 10) == 6, "declined is exit 6: \(caller.stdout)\(caller.stderr)")
        #expect(caller.stdout.contains("declined: declined by \(ann)"), "\(caller.stdout)")
        #expect(browser.process.waitForStderr(seconds: 5) { $0.contains("call ended: you rejected the call") }, "\(browser.log)")

        let other = try Browser(base: base, room: "lobby", token: "", listen: true, seconds: 0, fakeAudio: nil, profile: "\(dir)/chromium-2",
                                query: "&identity=dan&online=1&call=\(bob)&callreport=5", join: false)
        defer { other.stop() }
        let result = try #require(other.result(seconds: 20), "no result from the page:\n\(other.log)")
        #expect(callStates(result) == ["ringing", "declined"], "\(result)")
        #expect(listener.stdout.contains("rejected the call from dan"), "\(listener.stdout)")
    }
}
