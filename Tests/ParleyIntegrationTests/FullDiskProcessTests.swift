import Foundation
import Testing

extension ProcessTests {
    /// The relay's state directory on a disk that fills (a 4 MiB tmpfs in a mount namespace of the relay's own,
    /// `Tests/Interop/full-disk-relay.sh`): texts and recordings fail with a clear error, what was written stays
    /// readable, and the relay keeps serving.
    @Suite("A full disk under the relay's state directory")
    struct FullDiskProcessTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-full-\(UInt32.random(in: 0...UInt32.max))").path

        init() throws { try FileManager.default.createDirectory(atPath: dir + "/state", withIntermediateDirectories: true) }

        /// The relay on a state directory that fills `when` ("start", "track" or "never"), with `environment`; its UDP
        /// address and API base.
        func relay(filling when: String, environment: [String: String] = [:]) throws -> (Spawned, String, String) {
            let script = ExternalProgram.packageRoot + "/Tests/Interop/full-disk-relay.sh"
            let relay = try Spawned(.unshare, ["-m", "--propagation", "private", script, dir + "/state", Spawned.binary("parley-relay").path, when],
                                    environment: environment)
            guard relay.waitFor(seconds: 10, { $0.contains("ready on udp") }),
                  let line = relay.lines.first(where: { $0.contains("ready on udp") }),
                  let address = line.split(separator: " ").drop(while: { $0 != "udp" }).dropFirst().first,
                  let base = httpBase(of: relay) else { throw RelayDidNotStart(output: relay.stdout + relay.stderr) }
            return (relay, String(address), base)
        }

        func parley(_ arguments: [String], _ env: [String: String] = [:], expect code: Int32 = 0) throws -> Spawned {
            let p = try Spawned("parley", arguments, environment: env)
            #expect(p.wait(seconds: 15) == code, "parley \(arguments.joined(separator: " ")): \(p.stdout) \(p.stderr)")
            return p
        }

        @Test("a full disk: a text to someone away fails with why, a recording is refused with why, rooms and calls go on")
        func fullBeforehand() throws {
            let (relay, server, base) = try relay(filling: "start")
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            #expect(relay.waitFor(seconds: 10) { $0.contains("state disk full") }, "\(relay.stderr)")
            let text = try parley(["message", "bob", "are you there?", "--identity", "alice", "--server", server, "--no-tui"], expect: 10)
            #expect(text.stdout.contains("failed: the relay's disk is full"), "\(text.stdout)")

            let env = ["PARLEY_URL": base]
            _ = try parley(["rooms", "create", "full"], env)
            let refused = try parley(["record", "start", "full"], env, expect: 3)
            #expect((refused.stdout + refused.stderr).contains("the relay's disk is full"), "\(refused.stdout) \(refused.stderr)")
            // Media and signalling need no disk: a member joins and speaks. Its room text reaches the room but cannot be
            // kept: it is told so, as is the backend's text through the API (507, not a silent 200).
            _ = try makeSpeech("Still here.", path: "\(dir)/still.wav")
            let carol = try parley(["join", "full", "--identity", "carol", "--server", server, "--input", "\(dir)/still.wav", "--no-playback",
                                    "--say", "is this kept?", "--no-tui"])
            #expect(carol.stdout.contains("not kept in the room's history: the relay's disk is full"), "\(carol.stdout)")
            let admin = try mint(["--admin", "--identity", "ops"])
            _ = try parley(["rooms", "create", "full-texts"], env)
            let posted = try curl("POST", base + "/v1/rooms/full-texts/messages", token: admin, body: #"{"text":"kept?"}"#)
            #expect(posted.status == 507 && posted.body.contains("text_not_kept") && posted.body.contains("disk is full"), "\(posted.body)")
            #expect(try parley(["rooms"], env).stdout.contains("full"))
        }

        @Test("an upload flood from one member stops at the disk's reserve (507): texts are kept and recordings start after it")
        func uploadFloodLeavesTheReserve() throws {
            // 4 MiB of disk, 2 MiB of it kept from uploads.
            let (relay, server, base) = try relay(filling: "never", environment: ["PARLEY_ATTACHMENT_RESERVE_BYTES": "2097152"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let eve = try mint(["--identity", "eve", "--room", "anywhere"])
            let image = dir + "/flood.png", answer = dir + "/answer.json"
            var statuses: [Int] = []
            for k in 0..<8 {
                // Each upload other bytes: identical ones would share one stored copy.
                try Data(pngOf(size: 512 * 1024, fill: UInt8(k))).write(to: URL(fileURLWithPath: image))
                let status = try curlFile("POST", base + "/v1/attachments", token: eve, headers: ["Content-Type: image/png"], upload: image,
                                          output: answer)
                statuses.append(status)
                if status != 201 { break }
            }
            #expect(statuses.first == 201 && statuses.last == 507, "\(statuses)")
            #expect(try String(contentsOfFile: answer, encoding: .utf8).contains("attachment_reserve_bytes"))
            // After it: a text kept for someone away, a room text kept, a recording started.
            let text = try parley(["message", "bob", "are you there?", "--identity", "alice", "--server", server, "--no-tui"])
            #expect(text.stdout.contains("stored"), "\(text.stdout)")
            let env = ["PARLEY_URL": base]
            _ = try parley(["rooms", "create", "after"], env)
            let admin = try mint(["--admin", "--identity", "ops"])
            #expect(try curl("POST", base + "/v1/rooms/after/messages", token: admin, body: #"{"text":"kept"}"#).status == 200)
            #expect(try curl("GET", base + "/v1/rooms/after/messages", token: admin).body.contains(#""text":"kept""#))
            _ = try parley(["record", "start", "after"], env)
        }

        @Test("the disk fills while a room is recorded: the track says why it stopped, what it holds plays, the relay goes on")
        func fillsWhileRecording() throws {
            let (relay, server, base) = try relay(filling: "track")
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let env = ["PARLEY_URL": base]
            _ = try parley(["rooms", "create", "filling"], env)
            let started = try parley(["record", "start", "filling"], env)
            let id = try #require(started.stdout.split(separator: " ").dropFirst().first.map(String.init), "\(started.stdout)")
            _ = try makeSpeech("One, two, three, four, five, six, seven, eight, nine, ten. The disk fills while this is recorded.",
                               path: "\(dir)/alice.wav")
            let alice = try Spawned("parley", ["join", "filling", "--identity", "alice", "--server", server, "--input", "\(dir)/alice.wav",
                                               "--no-playback"])
            #expect(relay.waitFor(seconds: 10) { $0.contains("state disk full") }, "\(relay.stderr)")
            #expect(alice.wait(seconds: 20) == 0, "alice: \(alice.stderr)")

            // The track is listed with the error that stopped it (its manifest cannot be rewritten on a full disk: the
            // relay adds what it knows).
            let listed = try parley(["record", "list", "--recording", id], env).stdout
            let track = try #require(listed.split(separator: "\n").first { $0.contains("\ttrack\talice\t") }, "\(listed)")
            #expect(track.contains("error: ") && track.contains("No space left on device"), "\(track)")
            // What was written plays: every complete page up to the disk's end.
            let fileID = String(track.split(separator: "\t")[0])
            let opus = "\(dir)/\(fileID).opus"
            _ = try parley(["record", "download", fileID, "--output", opus], env)
            let probe = try Spawned(.ffprobe, ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", opus])
            #expect(probe.wait(seconds: 10) == 0, "\(probe.stderr)")
            let seconds = Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            #expect(seconds >= 1, "ffprobe: \(probe.stdout) \(probe.stderr)")

            // The relay goes on: the recording stops, and members still join.
            _ = try parley(["record", "stop", "filling"], env)
            _ = try parley(["join", "filling", "--identity", "bob", "--server", server, "--input", "\(dir)/alice.wav", "--no-playback",
                            "--duration", "1"])
        }
    }
}
