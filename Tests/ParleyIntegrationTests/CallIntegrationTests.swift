import Foundation
import Testing

/// One-to-one calls between real `parley listen` and `parley call` processes through a real relay.
extension ProcessTests {
    @Suite("Calls between real processes: every outcome")
    struct CallIntegrationTests {
        func relay() throws -> (Spawned, String) { try startRelay(environment: ["PARLEY_RING_TIMEOUT_S": "2"]) }
        func name() -> String { "u\(UInt32.random(in: 0...UInt32.max))" }
        let bot = ["--tone", "500", "--no-playback"]

        @Test("answered, then the caller hangs up: both sides see it end")
        func answeredCallerHangsUp() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let bob = name(), alice = name()
            let callee = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--auto-answer", "--duration", "10"] + bot)
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", server, "--hangup-after", "2"] + bot)
            #expect(caller.wait(seconds: 10) == 0, "\(caller.stdout)\(caller.stderr)")
            #expect(caller.stdout.contains("ringing") && caller.stdout.contains("answered") && caller.stdout.contains("you hung up"))
            #expect(caller.stdout.contains("\(bob) joined") || caller.stdout.contains("members: \(bob)"))
            #expect(callee.waitFor(seconds: 5) { $0.contains("call ended: hung up by \(alice)") }, "\(callee.stdout)")
            #expect(callee.stdout.contains("incoming call from \(alice)"))
            // Each side names the other person, never the call room's internal name.
            #expect(callee.stdout.contains("joined the call with \(alice) as \(bob)"), "\(callee.stdout)")
            #expect(caller.stdout.contains("joined the call with \(bob) as \(alice)"), "\(caller.stdout)")
            #expect(!callee.stdout.contains("joined call-") && !caller.stdout.contains("joined call-"))
            callee.signal(SIGINT)
            #expect(callee.wait(seconds: 5) == 0)
        }

        @Test("answered, then the callee hangs up: the caller sees it end")
        func answeredCalleeHangsUp() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let bob = name(), alice = name()
            let callee = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--auto-answer", "--hangup-after", "2", "--duration", "10"] + bot)
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", server] + bot)
            #expect(caller.wait(seconds: 10) == 0, "\(caller.stdout)\(caller.stderr)")
            #expect(caller.stdout.contains("call ended: hung up by \(bob)"), "\(caller.stdout)")
            callee.signal(SIGINT)
            callee.wait(seconds: 5)
        }

        @Test("rejected: the caller hears declined")
        func rejected() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let bob = name(), alice = name()
            let callee = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--auto-reject", "--duration", "10"] + bot)
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", server] + bot)
            #expect(caller.wait(seconds: 10) == 6)
            #expect(caller.stdout.contains("declined"))
            #expect(callee.stdout.contains("rejected the call from \(alice)"))
            callee.signal(SIGINT)
            callee.wait(seconds: 5)
        }

        @Test("no answer: the ring times out (2 s here, 30 s by default)")
        func noAnswer() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let bob = name(), alice = name()
            let callee = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--duration", "10"] + bot)
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", server] + bot)
            #expect(caller.wait(seconds: 10) == 7)
            #expect(caller.stdout.contains("no answer"))
            #expect(callee.waitFor(seconds: 3) { $0.contains("missed call from \(alice)") }, "\(callee.stdout)")
            callee.signal(SIGINT)
            callee.wait(seconds: 5)
        }

        @Test("unavailable: nobody of that name is online")
        func unavailable() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let caller = try Spawned("parley", ["call", name(), "--identity", name(), "--server", server] + bot)
            #expect(caller.wait(seconds: 10) == 8)
            #expect(caller.stdout.contains("unavailable"))
        }

        @Test("direct texts: delivered to someone online, stored for someone away")
        func directText() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let bob = name()
            let callee = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--duration", "10"] + bot)
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let sent = try Spawned("parley", ["message", bob, "hello there", "--identity", name(), "--server", server])
            #expect(sent.wait(seconds: 8) == 0)
            #expect(sent.stdout.contains("delivered"))
            #expect(callee.waitFor(seconds: 3) { $0.contains("hello there") })
            // The relay keeps texts (its state directory holds them): one to someone away is stored for later.
            let kept = try Spawned("parley", ["message", name(), "anyone?", "--identity", name(), "--server", server])
            #expect(kept.wait(seconds: 8) == 0)
            #expect(kept.stdout.contains("stored"), "\(kept.stdout)")
            callee.signal(SIGINT)
            callee.wait(seconds: 5)
        }

        @Test("one identity on two devices: a one-shot message leaves the running listen online; texts reach both listens")
        func twoDevicesTexts() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let quinn = name(), pat = name()
            let laptop = try Spawned("parley", ["listen", "--identity", quinn, "--server", server, "--duration", "20"] + bot)
            #expect(laptop.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let phone = try Spawned("parley", ["listen", "--identity", quinn, "--server", server, "--duration", "20"] + bot)
            #expect(phone.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let patListen = try Spawned("parley", ["listen", "--identity", pat, "--server", server, "--duration", "20"] + bot)
            #expect(patListen.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            // quinn sends from a third, one-shot session: registers, sends, leaves.
            let sent = try Spawned("parley", ["message", pat, "hi", "--identity", quinn, "--server", server])
            #expect(sent.wait(seconds: 8) == 0, "\(sent.stdout)\(sent.stderr)")
            #expect(patListen.waitFor(seconds: 3) { $0.contains("direct text from \(quinn): hi") }, "\(patListen.stdout)")
            // Both of quinn's devices get pat's text, and neither went offline.
            let back = try Spawned("parley", ["message", quinn, "hello both", "--identity", pat, "--server", server])
            #expect(back.wait(seconds: 8) == 0, "\(back.stdout)\(back.stderr)")
            #expect(laptop.waitFor(seconds: 3) { $0.contains("direct text from \(pat): hello both") }, "\(laptop.stdout)")
            #expect(phone.waitFor(seconds: 3) { $0.contains("direct text from \(pat): hello both") }, "\(phone.stdout)")
            for l in [laptop, phone] {
                #expect(!l.stdout.contains("offline") && !l.stderr.contains("offline"), "\(l.stdout)\(l.stderr)")
                l.signal(SIGINT)
                #expect(l.wait(seconds: 5) == 0)
            }
            patListen.signal(SIGINT)
            patListen.wait(seconds: 5)
        }

        @Test("one identity on two devices: both ring, the first to answer takes the call, the other is told")
        func twoDevicesRing() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let bob = name(), alice = name()
            let laptop = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--auto-answer", "--answer-after", "0.5",
                                                "--duration", "15"] + bot)
            #expect(laptop.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let phone = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--duration", "15"] + bot)
            #expect(phone.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", server, "--hangup-after", "3"] + bot)
            #expect(phone.waitFor(seconds: 5) { $0.contains("incoming call from \(alice)") }, "\(phone.stdout)")
            #expect(phone.waitFor(seconds: 5) { $0.contains("missed call from \(alice): answered on another device") }, "\(phone.stdout)")
            // A second call from the caller's identity on another device fails and leaves the first call alone.
            #expect(caller.waitFor(seconds: 5) { $0.contains("answered") })
            let second = try Spawned("parley", ["call", name(), "--identity", alice, "--server", server] + bot)
            #expect(second.wait(seconds: 8) == 9, "\(second.stdout)\(second.stderr)")
            #expect(second.stdout.contains("already in a call"), "\(second.stdout)")
            #expect(caller.wait(seconds: 10) == 0, "\(caller.stdout)\(caller.stderr)")
            #expect(caller.stdout.contains("you hung up") && !caller.stdout.contains("connection lost"), "\(caller.stdout)")
            #expect(laptop.waitFor(seconds: 5) { $0.contains("call ended: hung up by \(alice)") }, "\(laptop.stdout)")
            for l in [laptop, phone] {
                l.signal(SIGINT)
                l.wait(seconds: 5)
            }
        }
    }
}
