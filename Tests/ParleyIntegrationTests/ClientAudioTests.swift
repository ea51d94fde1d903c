import Foundation
import ParleyAudioIO
import Testing

extension ProcessTests {
    @Suite("The client's audio end to end through a real relay")
    struct ClientAudioTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-it-\(UInt32.random(in: 0...UInt32.max))").path

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        @Test("bob's recording holds alice's speech", arguments: ["forward", "mix", "hybrid"])
        func speechThroughRelay(mode: String) throws {
            let speech = try makeSpeech("Hello Bob. This is Alice, speaking through the Parley relay. One, two, three, four, five.",
                                        path: "\(dir)/speech.wav")
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "audio-\(mode)"
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--mode", mode, "--listen-only",
                                             "--output", "\(dir)/bob-\(mode).wav", "--duration", "9"])
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            let alice = try Spawned("parley", ["join", room, "--identity", "alice", "--server", server, "--mode", mode,
                                               "--input", "\(dir)/speech.wav", "--no-playback"])
            #expect(alice.wait(seconds: 15) == 0, "alice: \(alice.stderr)")  // leaves when the file ends
            #expect(bob.wait(seconds: 15) == 0, "bob: \(bob.stderr)")
            let heard = try WAVReader(path: "\(dir)/bob-\(mode).wav").readAllMono48k()
            let c = AudioComparison(reference: speech, recording: heard)
            // Measured here: forward 0.86 / 0.95, mix (a second Opus generation) 0.78 / 0.86 — before a lone speaker's
            // packets passed through the mix; hybrid (bob listens, so he hears the mix) as mix.
            #expect(c.envelopeCorrelation > 0.7, "\(c)")
            #expect(c.sampleCorrelation > 0.8, "\(c)")
            #expect(abs(c.energyRatioDB) < 6, "\(c)")
            #expect(c.longestGapMilliseconds <= 100, "\(c)")
        }

        @Test("the ALSA path: capture from a raw file and playback to a raw file through the shipped asoundrc")
        func alsaFilePlugins() throws {
            // A 700 Hz tone, long enough that the capture never reads past its end.
            var tone = [Int16](repeating: 0, count: 48_000 * 12)
            for i in tone.indices { tone[i] = Int16(9_000 * sin(2 * Double.pi * 700 * Double(i) / 48_000)) }
            let input = "\(dir)/mic.raw", output = "\(dir)/speaker.raw"
            try tone.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: input)) }
            let asoundrc = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent("Samples/asoundrc").path
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let env = ["ALSA_CONFIG_PATH": asoundrc, "PARLEY_ALSA_IN": input, "PARLEY_ALSA_OUT": output]
            let bob = try Spawned("parley", ["join", "alsa", "--identity", "bob", "--server", server, "--listen-only",
                                             "--playback-device", "parley_out", "--duration", "5"], environment: env)
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined alsa") })
            let alice = try Spawned("parley", ["join", "alsa", "--identity", "alice", "--server", server,
                                               "--capture-device", "parley_in", "--no-playback", "--no-denoise", "--duration", "3"],
                                    environment: env)
            #expect(alice.wait(seconds: 10) == 0, "\(alice.stderr)")
            #expect(bob.wait(seconds: 10) == 0, "\(bob.stderr)")
            // A microphone join with noise suppression (libspeexdsp's preprocessor) says nothing about speex's VAD.
            let carol = try Spawned("parley", ["join", "alsa", "--identity", "carol", "--server", server,
                                               "--capture-device", "parley_in", "--no-playback", "--duration", "1"], environment: env)
            #expect(carol.wait(seconds: 10) == 0, "\(carol.stderr)")
            #expect(!carol.stderr.contains("VAD"), "\(carol.stderr)")
            let raw = try Data(contentsOf: URL(fileURLWithPath: output))
            let heard = raw.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
            #expect(heard.count >= 48_000 * 4)
            // Goertzel at 700 Hz over the loudest second.
            let env10 = AudioComparison.envelope(heard)
            let loudest = env10.indices.max { env10[$0] < env10[$1] } ?? 0
            let window = Array(heard[(max(0, loudest * 480 - 24_000))..<min(heard.count, max(0, loudest * 480 - 24_000) + 48_000)])
            let w = 2 * Double.pi * 700 / 48_000, k = 2 * cos(w)
            var s1 = 0.0, s2 = 0.0, energy = 0.0
            for x in window { let s0 = Double(x) + k * s1 - s2; s2 = s1; s1 = s0; energy += Double(x) * Double(x) }
            let share = 2 * (s1 * s1 + s2 * s2 - k * s1 * s2) / (Double(window.count) * energy)
            #expect(share > 0.5, "700 Hz share of bob's playback: \(share)")
        }

        @Test("an unreadable input, an unknown device and an unwritable output each give one clear line and exit 1")
        func badAudioArguments() throws {
            let missing = try Spawned("parley", ["join", "x", "--identity", "a", "--input", "\(dir)/nope.wav", "--no-playback"])
            #expect(missing.wait(seconds: 5) == 1)
            #expect(missing.stderr.contains("cannot read \(dir)/nope.wav"))
            let device = try Spawned("parley", ["join", "x", "--identity", "a", "--capture-device", "no_such_pcm", "--no-playback"])
            #expect(device.wait(seconds: 5) == 1)
            #expect(device.stderr.contains("cannot open ALSA device no_such_pcm"))
            // alsa-lib's own printer is silenced: the error and one line saying what to use instead, nothing else.
            #expect(!device.stderr.contains("ALSA lib"), "\(device.stderr)")
            // To talk without one, and to only listen.
            #expect(device.stderr.contains("--tone") && device.stderr.contains("--listen-only --output FILE.wav")
                    && device.stderr.contains("Samples/asoundrc"), "\(device.stderr)")
            #expect(device.stderr.split(separator: "\n").count == 2, "\(device.stderr)")
            let speaker = try Spawned("parley", ["join", "x", "--identity", "a", "--tone", "440",
                                                 "--playback-device", "no_such_pcm"])
            #expect(speaker.wait(seconds: 5) == 1)
            #expect(speaker.stderr.contains("--output FILE.wav") && speaker.stderr.contains("--no-playback")
                    && speaker.stderr.contains("--listen-only --output FILE.wav"), "\(speaker.stderr)")
            let full = try Spawned("parley", ["join", "x", "--identity", "a", "--listen-only", "--output", "/dev/full", "--server", "127.0.0.1:9"])
            #expect(full.wait(seconds: 10) != 0)
            #expect(!full.stderr.contains("Fatal error"))
        }
    }
}
