import Foundation
import Testing

extension ProcessTests {
    /// Room texts from the command line without a terminal: each line piped to `parley join` is a text, the end of the
    /// input (after a line) or `/quit` leaves, stdin at /dev/null changes nothing; `parley say` sends one and leaves.
    @Suite("Room texts from the command line: stdin lines, /quit, parley say")
    struct RoomTextProcessTests {
        @Test("each line piped to parley join is a room text; the input's end leaves once answered; /dev/null does not")
        func stdinLines() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "lines-\(UInt32.random(in: 0...UInt32.max))"
            // bob's stdin is /dev/null: he stays for his --duration, as a join run from a script always did.
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--listen-only",
                                             "--no-playback", "--no-tui", "--duration", "8"])
            defer { bob.signal(SIGTERM); bob.wait(seconds: 5) }
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(bob.stdout)\(bob.stderr)")
            let ann = try Spawned("parley", ["join", room, "--identity", "ann", "--server", server, "--listen-only",
                                             "--no-playback", "--no-tui"], input: true)
            defer { ann.signal(SIGTERM); ann.wait(seconds: 5) }
            ann.send("hello from a pipe\n")  // before the welcome: sent once joined
            #expect(ann.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(ann.stdout)\(ann.stderr)")
            #expect(bob.waitFor(seconds: 5) { $0.contains("text from ann: hello from a pipe") }, "\(bob.stdout)")
            ann.send("second line, café\r\n\n")
            #expect(bob.waitFor(seconds: 5) { $0.contains("text from ann: second line, café") }, "\(bob.stdout)")
            #expect(ann.waitFor(seconds: 5) { $0.contains("text 2 delivered") }, "\(ann.stdout)")
            ann.closeInput()
            #expect(ann.wait(seconds: 5) == 0, "\(ann.stdout)\(ann.stderr)")
            #expect(ann.stdout.contains("left \(room)") && !ann.stdout.contains("text 3"), "\(ann.stdout)")
            #expect(bob.waitFor(seconds: 3) { $0.contains("ann left") }, "\(bob.stdout)")

            // A line /quit leaves at once; what follows it is not sent.
            let cy = try Spawned("parley", ["join", room, "--identity", "cy", "--server", server, "--listen-only",
                                            "--no-playback", "--no-tui"], input: true)
            defer { cy.signal(SIGTERM); cy.wait(seconds: 5) }
            #expect(cy.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(cy.stdout)\(cy.stderr)")
            cy.send("last words\n/quit\nnot sent\n")
            #expect(cy.wait(seconds: 5) == 0, "\(cy.stdout)\(cy.stderr)")
            #expect(cy.stdout.contains("text 1 delivered") && cy.stdout.contains("left \(room)"), "\(cy.stdout)")
            #expect(bob.waitFor(seconds: 3) { $0.contains("text from cy: last words") }, "\(bob.stdout)")
            #expect(!bob.stdout.contains("not sent"), "\(bob.stdout)")
            // bob, on /dev/null, was there all along and leaves at his --duration.
            #expect(bob.process.isRunning)
            #expect(bob.wait(seconds: 10) == 0, "\(bob.stdout)\(bob.stderr)")
        }

        @Test("parley say ROOM TEXT joins without a sound device, sends the text, says what became of it and leaves")
        func say() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "say-\(UInt32.random(in: 0...UInt32.max))"
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--listen-only",
                                             "--no-playback", "--no-tui", "--duration", "6"])
            defer { bob.signal(SIGTERM); bob.wait(seconds: 5) }
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(bob.stdout)\(bob.stderr)")
            let said = try Spawned("parley", ["say", room, "hello", "from", "say", "--identity", "sy",
                                              "--server", server])
            #expect(said.wait(seconds: 10) == 0, "\(said.stdout)\(said.stderr)")
            #expect(said.stdout.contains("text 1 delivered") && said.stdout.contains("left \(room)"), "\(said.stdout)")
            #expect(bob.waitFor(seconds: 3) { $0.contains("text from sy: hello from say") }, "\(bob.stdout)")
            // Alone in a room whose texts the relay keeps: kept, and that is no failure (exit 0).
            let alone = try Spawned("parley", ["say", room + "-empty", "anyone?", "--identity", "sy",
                                               "--server", server])
            #expect(alone.wait(seconds: 10) == 0, "\(alone.stdout)\(alone.stderr)")
            #expect(alone.stdout.contains("text 1 kept in the room's history; nobody else is here now"),
                    "\(alone.stdout)")
            // No text: a usage error before anything is sent.
            let empty = try Spawned("parley", ["say", room, "--identity", "sy", "--server", server])
            #expect(empty.wait(seconds: 5) == 2, "\(empty.stderr)")
        }
    }
}
