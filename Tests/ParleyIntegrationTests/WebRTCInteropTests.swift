import Foundation
import ParleyAudioIO
import Testing

/// WebRTC clients that are not browsers: aiortc (PyPI, `Tests/Interop/aiortc_client.py`) publishing with WHIP and
/// listening with WHEP, against a real relay.
extension ProcessTests {
    @Suite("WHIP and WHEP with a WebRTC client that is not a browser (aiortc)")
    struct WebRTCInteropTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-aiortc-\(UInt32.random(in: 0...UInt32.max))").path
        static let client = ExternalProgram.packageRoot + "/Tests/Interop/aiortc_client.py"

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        /// Runs the client and returns its JSON line.
        func aiortc(_ args: [String], seconds: Double) throws -> (status: Int32, result: [String: Any], stderr: String) {
            let p = try Spawned(.interopPython, [Self.client] + args)
            let status = p.wait(seconds: seconds)
            let line = p.stdout.split(separator: "\n").last.map(String.init) ?? ""
            return (status, jsonObject(line), p.stderr)
        }

        @Test("aiortc publishes a 523 Hz tone with WHIP (201, Location): a parley join records it; DELETE ends the session")
        func whipPublishes() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let room = "whip-\(UInt32.random(in: 0...UInt32.max))"
            // Long enough for aiortc's start (its Python imports take seconds on a busy machine) and its 5 s of tone.
            let recorder = try Spawned("parley", ["join", room, "--identity", "rec", "--server", server, "--listen-only", "--mode", "forward",
                                                  "--output", "\(dir)/heard.wav", "--no-tui", "--duration", "16"])
            #expect(recorder.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(recorder.stdout)\(recorder.stderr)")
            let token = try mint(["--identity", "aio", "--room", room])
            let run = try aiortc(["--url", "\(base)/v1/rooms/\(room)/whip", "--token", token, "--seconds", "5", "--tone", "523"], seconds: 20)
            #expect(run.status == 0, "\(run.result) \(run.stderr)")
            #expect(run.result["status"] as? Int == 201 && run.result["location"] as? String == "/v1/rooms/\(room)/webrtc/aio", "\(run.result)")
            #expect(recorder.waitFor(seconds: 3) { $0.contains("aio left") }, "the DELETE did not end the session: \(recorder.stdout)")
            #expect(recorder.wait(seconds: 18) == 0, "\(recorder.stderr)")
            let heard = try WAVReader(path: "\(dir)/heard.wav").readAllMono48k()
            let share = goertzelShare(loudestSecond(heard), frequency: 523)
            #expect(share > 0.5, "523 Hz share \(share) of \(heard.count) samples")
        }

        @Test("aiortc listens with WHEP: it hears a parley join's 700 Hz tone, 20 ms frames without a break")
        func whepListens() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let room = "whep-\(UInt32.random(in: 0...UInt32.max))"
            let speaker = try Spawned("parley", ["join", room, "--identity", "tone", "--server", server, "--tone", "700", "--mode", "forward",
                                                 "--no-playback", "--no-tui", "--duration", "12"])
            #expect(speaker.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(speaker.stdout)\(speaker.stderr)")
            let token = try mint(["--identity", "aio", "--room", room])
            let run = try aiortc(["--url", "\(base)/v1/rooms/\(room)/whep", "--token", token, "--seconds", "6", "--record", "\(dir)/aio.wav"],
                                 seconds: 20)
            #expect(run.status == 0, "\(run.result) \(run.stderr)")
            // 6 s of 20 ms frames is 300: allow for ICE and DTLS at the start.
            #expect((run.result["frames"] as? Int ?? 0) >= 250, "\(run.result)")
            let heard = try WAVReader(path: "\(dir)/aio.wav").readAllMono48k()
            let share = goertzelShare(loudestSecond(heard), frequency: 700)
            #expect(share > 0.5, "700 Hz share \(share) of \(heard.count) samples")
            speaker.signal(SIGINT)
            speaker.wait(seconds: 5)
        }
    }
}
