import Foundation
import Testing

extension ProcessTests {
    @Suite("The live view on a real terminal (a pty): typed text, the header")
    struct LiveViewTests {
        @Test("`t café ☕⏎` in alice's live view reaches bob as café ☕, UTF-8 end to end")
        func utf8RoundTrip() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "pty-\(UInt32.random(in: 0...UInt32.max))"
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--listen-only", "--no-playback",
                                             "--duration", "15", "--no-tui"])
            defer { bob.signal(SIGINT); bob.wait(seconds: 5) }
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            let alice = try OnTerminal("parley", ["join", room, "--identity", "alice", "--server", server, "--listen-only",
                                                  "--no-playback", "--duration", "15"])
            defer { alice.stop() }
            #expect(bob.waitFor(seconds: 5) { $0.contains("alice joined") }, "\(bob.stdout)")
            alice.type(Array("t".utf8))
            alice.type(Array("café ☕".utf8))  // C3 A9 and E2 98 95: several bytes a character
            alice.type([0x0D])                 // Enter
            #expect(bob.waitFor(seconds: 5) { $0.contains("text from alice: café ☕") }, "bob: \(bob.stdout)")
            #expect(!bob.stdout.contains("Ã"))
            #expect(alice.waitFor(seconds: 5) { $0.contains("you: café ☕") }, "\(alice.output)")  // her own log says it too
            alice.type(Array("q".utf8))
            alice.process.waitUntilExit()
            #expect(alice.process.terminationStatus == 0)
        }

        @Test("`parley listen`'s header names the caller during a call, and goes back to waiting after it")
        func listenHeader() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let bob = "b\(UInt32.random(in: 0...UInt32.max))", alice = "a\(UInt32.random(in: 0...UInt32.max))"
            let callee = try OnTerminal("parley", ["listen", "--identity", bob, "--server", server, "--auto-answer", "--tone", "500",
                                                   "--no-playback", "--duration", "15"])
            defer { callee.stop() }
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", server, "--hangup-after", "2",
                                                "--tone", "400", "--no-playback", "--no-tui"])
            #expect(callee.waitFor(seconds: 5) { _ in callee.lastScreen.contains("parley · call with \(alice) · \(bob)") }, "\(callee.lastScreen)")
            #expect(caller.wait(seconds: 10) == 0, "\(caller.stdout)\(caller.stderr)")
            // The header (the lines above the rule) is back to waiting: no call room, no member, no last speaker.
            #expect(callee.waitFor(seconds: 5) { _ in callee.header == ["parley · \(bob) · online, waiting for calls"] }, "\(callee.header)")
        }
    }
}
