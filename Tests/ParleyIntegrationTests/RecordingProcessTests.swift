import Foundation
import ParleyAudioIO
import Testing

extension ProcessTests {
    /// Room recordings end to end: two `parley join`s speak in a recorded room, `parley record` starts, stops, lists and
    /// downloads the files through the HTTP API, ffprobe reads each, and each speaker's track decoded by ffmpeg is
    /// that speaker's speech (PESQ-WB against the source), placed where it was said (the tracks line up).
    @Suite("Room recordings through a real relay")
    struct RecordingProcessTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-rec-\(UInt32.random(in: 0...UInt32.max))").path

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        /// Runs `parley` with the relay's API and waits for it.
        func parley(_ arguments: [String], _ env: [String: String]) throws -> Spawned {
            let p = try Spawned("parley", arguments, environment: env)
            #expect(p.wait(seconds: 10) == 0, "parley \(arguments.joined(separator: " ")): \(p.stderr)")
            return p
        }

        @Test("two speakers in a recorded room: a track each (and the mix in a mix room), each the speaker's speech, lined up",
              arguments: ["forward", "mix"])
        func twoSpeakersRecorded(mode: String) throws {
            _ = try makeSpeech("Hello Bob. This is Alice, speaking through the Parley relay. One, two, three, four, five.", path: "\(dir)/alice.wav")
            _ = try makeSpeech("Hi Alice, Bob here. Six, seven, eight, nine, ten. This room is recorded.", path: "\(dir)/bob.wav")
            let (relay, server) = try startRelay(environment: ["PARLEY_STATE_DIR": "\(dir)/state"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let env = ["PARLEY_URL": try #require(httpBase(of: relay))]
            let room = "recorded-\(mode)"
            _ = try parley(["rooms", "create", room, "--mode", mode], env)
            // A forward room's tracks are also mixed into one file (--mixdown); a mix room records its mix anyway.
            let started = try parley(["record", "start", room] + (mode == "forward" ? ["--mixdown"] : []), env)
            let id = try #require(started.stdout.split(separator: " ").dropFirst().first.map(String.init), "\(started.stdout)")

            let timeline = ["PARLEY_TIMELINE": "1"]
            let alice = try Spawned("parley", ["join", room, "--identity", "alice", "--server", server, "--input", "\(dir)/alice.wav",
                                               "--no-playback"], environment: timeline)
            #expect(alice.waitFor(seconds: 5) { $0.contains("this room is being recorded (recording \(id))") }, "alice: \(alice.stdout)")
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--input", "\(dir)/bob.wav",
                                             "--no-playback"], environment: timeline)
            #expect(alice.wait(seconds: 20) == 0, "alice: \(alice.stderr)")
            #expect(bob.wait(seconds: 20) == 0, "bob: \(bob.stderr)")
            _ = try parley(["record", "stop", room], env)

            // The files are written within the reorder window and a flush after the stop.
            var lines: [Substring] = []
            for _ in 0..<20 {
                lines = try parley(["record", "list", "--recording", id], env).stdout.split(separator: "\n").filter { $0.hasSuffix("done") }
                if lines.count == 3 { break }
                Thread.sleep(forTimeInterval: 0.25)
            }
            // Under a header: file, recording, room, kind, member, started, duration, size, state.
            let files = lines.map { $0.split(separator: "\t").map(String.init) }
            #expect(Set(files.compactMap { $0.count > 4 ? $0[3] + ":" + $0[4] : nil })
                    == Set(["track:alice", "track:bob", "mix:-"]), "\(lines)")
            #expect(files.allSatisfy { $0.count == 9 && $0[1] == id && $0[2] == room }, "\(lines)")
            let listed = try parley(["record", "list"], env).stdout
            let header = "FILE\tRECORDING\tROOM\tKIND\tMEMBER\tSTARTED\tDURATION\tSIZE\tSTATE\n"
            #expect(listed.hasPrefix(header), "\(listed)")
            // The id `record start` printed downloads every file of the recording.
            let all = try parley(["record", "download", id, "--output", "\(dir)/all-\(mode)"], env)
            #expect(all.stdout.split(separator: "\n").filter { $0.hasPrefix("saved ") }.count == 3, "\(all.stdout)")

            var lag: [String: Double] = [:]
            var mixLag: Double?
            for f in files where f.count > 4 {
                let opus = "\(dir)/\(f[0]).opus", wav = "\(dir)/\(f[0]).wav"
                _ = try parley(["record", "download", f[0], "--output", opus], env)
                #expect(FileManager.default.contentsEqual(atPath: opus, andPath: "\(dir)/all-\(mode)/\(f[0]).opus"))
                let probe = try Spawned(.ffprobe, ["-v", "error", "-show_entries", "stream=codec_name,sample_rate,channels", "-of", "csv=p=0", opus])
                #expect(probe.wait(seconds: 10) == 0)
                #expect(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "opus,48000,1", "ffprobe \(f[0]): \(probe.stdout) \(probe.stderr)")
                // A second of silence after it: a track ends with its speaker's last packet, and the scorer looks for the
                // speech's place within the recording's length.
                let decode = try Spawned(.ffmpeg, ["-v", "error", "-y", "-i", opus, "-af", "apad=pad_dur=1", "-ar", "48000", "-ac", "1", wav])
                #expect(decode.wait(seconds: 20) == 0, "ffmpeg \(f[0]): \(decode.stderr)")
                guard f[3] == "track" else {
                    // The mix holds both speakers where their tracks have them (alice's speech found at her place).
                    let found = try Spawned(.interopPython, [ExternalProgram.packageRoot + "/Tests/Interop/pesq_wb.py", "\(dir)/alice.wav", wav])
                    #expect(found.wait(seconds: 60) == 0, "\(found.stderr)")
                    mixLag = jsonObject(found.stdout)["lag_ms"] as? Double
                    continue
                }
                let score = try Spawned(.interopPython, [ExternalProgram.packageRoot + "/Tests/Interop/pesq_wb.py",
                                                         "\(dir)/\(f[4]).wav", wav])
                #expect(score.wait(seconds: 60) == 0, "\(score.stderr)")
                let result = jsonObject(score.stdout)
                let pesq = result["pesq_wb"] as? Double ?? 0
                print("recording \(mode) \(f[4]): \(score.stdout.trimmingCharacters(in: .whitespacesAndNewlines))")
                #expect(pesq >= 3.8, "\(f[4])'s track: \(score.stdout)")
                lag[f[4]] = result["lag_ms"] as? Double
            }
            // Where each speech sits in its track, against when each client started sending it: the same offset.
            func captureStart(_ p: Spawned) -> Double? {
                p.stderr.split(separator: "\n").first { $0.hasPrefix("timeline capture_start_ns") }
                    .flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }.map { $0 / 1e6 }
            }
            let a = try #require(captureStart(alice)), b = try #require(captureStart(bob))
            let la = try #require(lag["alice"]), lb = try #require(lag["bob"])
            print("recording \(mode): bob started \(b - a) ms after alice; his track places him \(lb - la) ms after")
            #expect(abs((lb - la) - (b - a)) <= 20, "alice at \(la) ms, bob at \(lb) ms in their tracks; they started \(b - a) ms apart")
            let m = try #require(mixLag)
            print("recording \(mode): alice at \(m) ms in the mix, \(la) ms in her track")
            #expect(abs(m - la) <= 20, "alice at \(m) ms in the mix, \(la) ms in her track")
        }
    
        @Test("kill -9 while recording: the track plays to its last complete page, and the next start closes the recording")
        func killedMidRecording() throws {
            _ = try makeSpeech("One, two, three, four, five, six, seven, eight, nine, ten. And again: one, two, three, four, five.",
                               path: "\(dir)/long.wav")
            let state = "\(dir)/state-kill"
            let (relay, server) = try startRelay(environment: ["PARLEY_STATE_DIR": state])
            let env = ["PARLEY_URL": try #require(httpBase(of: relay))]
            _ = try parley(["rooms", "create", "killed", "--mode", "forward"], env)
            let id = try #require(try parley(["record", "start", "killed"], env).stdout.split(separator: " ").dropFirst().first.map(String.init))
            let alice = try Spawned("parley", ["join", "killed", "--identity", "alice", "--server", server, "--input", "\(dir)/long.wav",
                                               "--no-playback"])
            #expect(alice.waitFor(seconds: 5) { $0.contains("this room is being recorded") })
            // Let a few seconds of speech reach the file (pages are flushed every second), then kill the relay mid-sentence.
            let folder = "\(state)/recordings/\(id)"
            var track: String?
            for _ in 0..<40 {
                track = (try? FileManager.default.contentsOfDirectory(atPath: folder))?.first { $0.hasSuffix(".opus") }
                if let t = track, let size = (try? FileManager.default.attributesOfItem(atPath: "\(folder)/\(t)"))?[.size] as? Int, size > 15_000 { break }
                Thread.sleep(forTimeInterval: 0.1)
            }
            relay.signal(SIGKILL)
            _ = relay.wait(seconds: 5)
            alice.signal(SIGTERM)
            _ = alice.wait(seconds: 5)
            let file = "\(folder)/\(try #require(track))"
            let probe = try Spawned(.ffprobe, ["-v", "error", "-show_entries", "stream=codec_name:format=duration", "-of", "csv=p=0", file])
            #expect(probe.wait(seconds: 10) == 0, "\(probe.stderr)")
            #expect(probe.stdout.contains("opus"), "\(probe.stdout)")
            let decode = try Spawned(.ffmpeg, ["-v", "error", "-y", "-i", file, "\(dir)/killed.wav"])
            #expect(decode.wait(seconds: 20) == 0, "a killed recording must decode without errors: \(decode.stderr)")
            let decoded = try WAVReader(path: "\(dir)/killed.wav").readAllMono48k()
            #expect(decoded.count > 48_000, "\(decoded.count) samples")

            // The next start closes the manifest: stopped, why, the duration the file holds.
            let (again, server2) = try startRelay(environment: ["PARLEY_STATE_DIR": state])
            defer { again.signal(SIGTERM); again.wait(seconds: 5) }
            #expect(again.stderr.contains("recording \(id) was not closed"), "\(again.stderr)")
            let env2 = ["PARLEY_URL": try #require(httpBase(of: again))]
            let list = try parley(["record", "list", "--recording", id], env2).stdout
            let row = { (line: Substring) in line.split(separator: "\t").map(String.init) }
            let fields = list.split(separator: "\n").dropFirst().first.map(row) ?? []
            #expect(fields.last == "done", "\(list)")
            let seconds = fields.count > 6 ? Double(fields[6].split(separator: " ")[0]) ?? 0 : 0
            #expect(abs(seconds - Double(decoded.count) / 48_000) < 0.3, "listed \(seconds) s, decoded \(Double(decoded.count) / 48_000) s")

            // A second recording is listed first (newest first); an id that is no recording is said so (exit 3).
            _ = try parley(["rooms", "create", "later", "--mode", "forward"], env2)
            let started = try parley(["record", "start", "later"], env2).stdout
            let later = try #require(started.split(separator: " ").dropFirst().first.map(String.init))
            let bob = try Spawned("parley", ["join", "later", "--identity", "bob", "--server", server2, "--tone", "440",
                                             "--no-playback", "--no-tui", "--duration", "2"])
            #expect(bob.wait(seconds: 10) == 0, "\(bob.stdout)\(bob.stderr)")
            var rows: [[String]] = []
            for _ in 0..<20 {
                rows = try parley(["record", "list"], env2).stdout.split(separator: "\n").dropFirst().map(row)
                if rows.contains(where: { $0.count > 1 && $0[1] == later }) { break }
                Thread.sleep(forTimeInterval: 0.25)
            }
            #expect(rows.first?[1] == later && rows.last?[1] == id, "\(rows)")
            let unknown = try Spawned("parley", ["record", "download", "0123456789abcdef"], environment: env2)
            #expect(unknown.wait(seconds: 10) == 3 && unknown.stderr.contains("no recording 0123456789abcdef"),
                    "\(unknown.stderr)")
        }
    }
}
