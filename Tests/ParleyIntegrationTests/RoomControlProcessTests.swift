import Foundation
import Testing

extension ProcessTests {
    /// What a person in a room is told when the relay refuses a name, or the backend mutes, kicks or closes.
    @Suite("Room control as people meet it: refusals, mutes, kicks and closes with their reasons")
    struct RoomControlProcessTests {
        @Test("a room name over 128 bytes is refused at once with the reason, exit 3 (not an unreachable relay after 5 s)")
        func longRoomName() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let started = Date()
            let join = try Spawned("parley", ["join", String(repeating: "r", count: 200), "--identity", "a", "--server", server,
                                              "--tone", "300", "--no-playback", "--no-tui"])
            #expect(join.wait(seconds: 5) == 3, "\(join.stdout)\(join.stderr)")
            #expect(Date().timeIntervalSince(started) < 3)
            #expect(join.stderr.contains("the room name is too long: 200 bytes (longest allowed: 128 bytes)"), "\(join.stderr)")
            // A name the join cannot even carry is said before anything is sent (usage, exit 2).
            let huge = try Spawned("parley", ["join", String(repeating: "r", count: 2000), "--identity", "a", "--server", server,
                                              "--tone", "300", "--no-playback", "--no-tui"])
            #expect(huge.wait(seconds: 5) == 2)
            #expect(huge.stderr.contains("the room name is too long: 2000 bytes (longest allowed: 128 bytes)"), "\(huge.stderr)")
        }

        @Test("parley mute holds as the room's and is shown; parley kick and rooms delete tell who was removed why, exit 4")
        func muteKickClose() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let env = ["PARLEY_URL": try #require(httpBase(of: relay))]
            let room = "control-\(UInt32.random(in: 0...UInt32.max))"
            let alice = try Spawned("parley", ["join", room, "--identity", "alice", "--server", server, "--tone", "440", "--no-playback",
                                               "--no-tui", "--duration", "15"])
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--listen-only", "--no-playback",
                                             "--no-tui", "--duration", "15"])
            #expect(alice.waitFor(seconds: 5) { $0.contains("bob joined") || $0.contains("members: bob") }, "\(alice.stdout)")
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            // The API reads snapshots up to 200 ms old: retry the mute until the relay knows alice.
            var muted = false
            for _ in 0..<15 where !muted {
                let mute = try Spawned("parley", ["mute", room, "alice"], environment: env)
                muted = mute.wait(seconds: 5) == 0
                if !muted { Thread.sleep(forTimeInterval: 0.2) }
            }
            #expect(muted)
            #expect(alice.waitFor(seconds: 3) { $0.contains("you are muted by the room (only the room can unmute you)") }, "\(alice.stdout)")
            #expect(bob.waitFor(seconds: 3) { $0.contains("alice muted by the room") }, "\(bob.stdout)")
            let admin = try mint(["--admin", "--identity", "ops"])
            var listed = (status: 0, body: "")
            let shown = try eventually(seconds: 3) {
                listed = try curl("GET", env["PARLEY_URL"]! + "/v1/rooms/\(room)/members", token: admin)
                return listed.body.contains(#""muted":true,"muted_by_room":true"#)
            }
            #expect(shown, "\(listed.body)")
            let members = try Spawned("parley", ["members", room], environment: env)
            #expect(members.wait(seconds: 5) == 0)
            #expect(members.stdout.contains("alice\tmuted by the room\t"), "\(members.stdout)")
            let unmute = try Spawned("parley", ["mute", room, "alice", "--unmute"], environment: env)
            #expect(unmute.wait(seconds: 5) == 0)
            #expect(alice.waitFor(seconds: 3) { $0.contains("you are unmuted") }, "\(alice.stdout)")

            let kick = try Spawned("parley", ["kick", room, "alice"], environment: env)
            #expect(kick.wait(seconds: 5) == 0)
            #expect(alice.wait(seconds: 5) == 4)
            #expect(alice.stderr.contains("parley: removed from the room \(room): kicked by the backend"), "\(alice.stderr)")
            let close = try Spawned("parley", ["rooms", "delete", room], environment: env)
            #expect(close.wait(seconds: 5) == 0)
            #expect(bob.wait(seconds: 5) == 4)
            #expect(bob.stderr.contains("parley: the room \(room) was closed: closed by the backend"), "\(bob.stderr)")
        }
    }
}
