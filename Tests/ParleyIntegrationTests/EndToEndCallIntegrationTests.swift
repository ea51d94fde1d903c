import Foundation
import Testing

/// End-to-end encrypted calls between real `parley listen` and `parley call` processes through a real relay.
extension ProcessTests {
    @Suite("End-to-end calls between real processes: one safety code, audio that opens")
    struct EndToEndCallIntegrationTests {
        func relay() throws -> (Spawned, String) { try startRelay(environment: ["PARLEY_RING_TIMEOUT_S": "2"]) }
        func name() -> String { "u\(UInt32.random(in: 0...UInt32.max))" }
        let bot = ["--tone", "500", "--no-playback"]

        /// The safety code a process printed ("… safety code: 12345 67890 … — compare …"), if any.
        static func safetyCode(_ output: String) -> String? {
            guard let line = output.split(separator: "\n").first(where: { $0.contains("safety code: ") }),
                  let start = line.range(of: "safety code: ")?.upperBound else { return nil }
            return String(line[start...].prefix(35))
        }

        /// (received packets, played frames, refused frames) from the "call audio:" line.
        static func audio(_ output: String) -> (received: Int, played: Int, refused: Int?)? {
            guard let line = output.split(separator: "\n").first(where: { $0.contains("call audio: received ") }) else { return nil }
            let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
            guard numbers.count >= 2 else { return nil }
            return (numbers[0], numbers[1], numbers.count >= 3 ? numbers[2] : nil)
        }

        @Test("both sides print the same safety code, six groups of five digits, and hear each other through the encryption")
        func sameSafetyCode() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let bob = name(), alice = name()
            let callee = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--auto-answer", "--duration", "10"] + bot)
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", server, "--hangup-after", "3"] + bot)
            #expect(caller.wait(seconds: 12) == 0, "\(caller.stdout)\(caller.stderr)")
            #expect(callee.waitFor(seconds: 5) { $0.contains("call audio:") }, "\(callee.stdout)")
            callee.signal(SIGINT)
            callee.wait(seconds: 5)
            let callerCode = try #require(Self.safetyCode(caller.stdout), "\(caller.stdout)")
            let calleeCode = try #require(Self.safetyCode(callee.stdout), "\(callee.stdout)")
            #expect(callerCode == calleeCode)
            let groups = callerCode.split(separator: " ")
            #expect(groups.count == 6 && groups.allSatisfy { $0.count == 5 && $0.allSatisfy(\.isNumber) }, "\(callerCode)")
            #expect(caller.stdout.contains("end-to-end encrypted; safety code") && !caller.stdout.contains("NOT end-to-end"))
            // Audio flowed both ways and every received frame opened (a wrong key would refuse them all).
            for (who, out) in [("caller", caller.stdout), ("callee", callee.stdout)] {
                let a = try #require(Self.audio(out), "\(who): \(out)")
                #expect(a.received > 20 && a.played > 20 && a.refused == 0, "\(who): \(out)")
            }
        }

        @Test("a peer that sends no key share: both sides say the call is NOT end-to-end encrypted, and it still works")
        func noShare() throws {
            let (r, server) = try relay()
            defer { r.signal(SIGTERM); r.wait(seconds: 5) }
            let bob = name(), alice = name()
            let callee = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--auto-answer", "--duration", "10"] + bot)
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let caller = try Spawned("parley", ["call", bob, "--identity", alice, "--server", server, "--hangup-after", "2", "--no-e2ee"] + bot)
            #expect(caller.wait(seconds: 12) == 0, "\(caller.stdout)\(caller.stderr)")
            #expect(callee.waitFor(seconds: 5) { $0.contains("call audio:") }, "\(callee.stdout)")
            callee.signal(SIGINT)
            callee.wait(seconds: 5)
            #expect(callee.stdout.contains("this call is NOT end-to-end encrypted: \(alice)'s client sent no key share"), "\(callee.stdout)")
            #expect(caller.stdout.contains("this call is NOT end-to-end encrypted"), "\(caller.stdout)")
            #expect(Self.safetyCode(caller.stdout) == nil && Self.safetyCode(callee.stdout) == nil)
            let a = try #require(Self.audio(callee.stdout), "\(callee.stdout)")
            #expect(a.received > 10 && a.played > 10)
        }
    }
}
