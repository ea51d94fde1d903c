import Foundation
import ParleyAudioIO
import Testing

/// Headless Chromium (Debian's `chromium`) as a WebRTC member through the relay's sample page (`Samples/web`, served
/// at the relay's HTTP address): the page posts its offer to `/v1/rooms/{room}/webrtc` and, driven by `?report=`,
/// logs its `getStats` to the console and then `PARLEY RESULT {json}`, which Chromium prints on stderr.
struct Browser {
    let process: Spawned

    /// The sample page for `room` with `token`, joined at once (`join`; else `query` says what the page does);
    /// `listen`: without a microphone; `fakeAudio`: the WAV Chromium's fake microphone plays (48 kHz mono 16-bit).
    init(base: String, room: String, token: String, listen: Bool, seconds: Int, fakeAudio: String?, profile: String, query: String = "",
         join: Bool = true) throws {
        var args = ["--headless=new", "--no-sandbox", "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                    "--allow-loopback-in-peer-connection", "--autoplay-policy=no-user-gesture-required", "--no-first-run",
                    "--user-data-dir=\(profile)", "--enable-logging=stderr", "--v=0"]
        if let fakeAudio { args.append("--use-file-for-fake-audio-capture=\(fakeAudio)") }
        let query = "room=\(room)&token=\(token)" + (join ? "&join=1&report=\(seconds)" : "") + (listen ? "&listen=1" : "") + query
        process = try Spawned(.chromium, args + ["\(base)/?\(query)"])
    }

    /// The page's result line, once it wrote it (nil after `seconds`).
    func result(seconds: Double) -> [String: Any]? {
        guard process.waitForStderr(seconds: seconds, { $0.contains("PARLEY RESULT") }) else { return nil }
        guard let line = process.stderr.split(separator: "\n").first(where: { $0.contains("PARLEY RESULT") }),
              let start = line.firstIndex(of: "{"), let end = line.lastIndex(of: "}") else { return nil }
        return jsonObject(String(line[start...end]))
    }

    /// The page's log lines (for failure messages; not its recording).
    var log: String {
        process.stderr.split(separator: "\n").filter { $0.contains("PARLEY") && !$0.contains("PARLEY PCM") }
            .joined(separator: "\n")
    }

    /// What the page recorded (`&record=1`): its `PARLEY PCM {"index": k, "count": n} BASE64` lines in order, as
    /// 48 kHz mono samples.
    func recording() throws -> [Int16] {
        var blocks: [Int: Data] = [:], count = 0
        for line in process.stderr.split(separator: "\n") {
            guard let marker = line.range(of: "PARLEY PCM "), let close = line[marker.upperBound...].firstIndex(of: "}")
            else { continue }
            let header = jsonObject(String(line[marker.upperBound...close]))
            let text = line[line.index(after: close)...].drop(while: { $0 == " " }).prefix(while: { $0 != "\"" })
            guard let index = header["index"] as? Int, let data = Data(base64Encoded: String(text)) else {
                throw NoRecording(reason: "an unreadable PCM line: \(line.prefix(200))… (\(line.count) characters)")
            }
            blocks[index] = data
            count = header["count"] as? Int ?? 0
        }
        guard count > 0, blocks.count == count else {
            throw NoRecording(reason: "\(blocks.count) of \(count) PCM lines; the page said:\n\(log)")
        }
        return (0..<count).flatMap { k in
            blocks[k]!.withUnsafeBytes { raw in
                (0..<raw.count / 2).map { Int16(littleEndian: raw.load(fromByteOffset: 2 * $0, as: Int16.self)) }
            }
        }
    }

    /// The page's recording was missing or unreadable.
    struct NoRecording: Error, CustomStringConvertible { let reason: String; var description: String { reason } }

    func stop() {
        process.signal(SIGTERM)
        process.wait(seconds: 5)
    }
}

extension ProcessTests {
    @Suite("Browsers join rooms over WebRTC (ICE-lite, DTLS-SRTP): headless Chromium through the sample page")
    struct BrowserTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-web-\(UInt32.random(in: 0...UInt32.max))").path
        /// The sample page the relay serves.
        static let webRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples/web").path

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        func relay() throws -> (Spawned, String, String) {
            let (relay, server) = try startRelay(environment: ["PARLEY_WEB_ROOT": Self.webRoot])
            guard let base = httpBase(of: relay) else { throw RelayDidNotStart(output: relay.stdout) }
            return (relay, server, base)
        }

        /// A WAV of `frequency` Hz at −12 dBFS for Chromium's fake microphone.
        func toneFile(_ frequency: Double, seconds: Int) throws -> String {
            let path = "\(dir)/tone-\(Int(frequency)).wav"
            let writer = try WAVWriter(path: path)
            let samples = (0..<48_000 * seconds).map { Int16(8_000 * sin(2 * Double.pi * frequency * Double($0) / 48_000)) }
            try samples.withUnsafeBufferPointer { try writer.write($0) }
            try writer.finish()
            return path
        }

        @Test("a browser speaks in a forward room (its fake microphone a 440 Hz tone): a parley join records the tone")
        func browserSpeaks() throws {
            let (relay, server, base) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "web-\(UInt32.random(in: 0...UInt32.max))"
            let recorder = try Spawned("parley", ["join", room, "--identity", "rec", "--server", server, "--listen-only", "--mode", "forward",
                                                  "--output", "\(dir)/heard.wav", "--no-tui", "--duration", "10"])
            #expect(recorder.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(recorder.stdout)\(recorder.stderr)")
            let token = try mint(["--identity", "web", "--room", room])
            let browser = try Browser(base: base, room: room, token: token, listen: false, seconds: 6,
                                      fakeAudio: try toneFile(440, seconds: 10), profile: "\(dir)/chromium")
            defer { browser.stop() }
            let result = try #require(browser.result(seconds: 20), "no result from the page:\n\(browser.log)\n\(relay.stderr)")
            #expect(result["state"] as? String == "connected", "\(result)")
            #expect((result["packetsSent"] as? Int ?? 0) > 200, "\(result)")
            #expect(recorder.wait(seconds: 10) == 0, "\(recorder.stderr)")
            let heard = try WAVReader(path: "\(dir)/heard.wav").readAllMono48k()
            let tone = toneShares(heard, frequency: 440)
            print("the browser's 440 Hz tone was heard at shares \(tone.windows) by second")
            #expect(tone.clear >= 2, "440 Hz shares by second \(tone.windows); \(browser.log)")
        }

        @Test("the page follows the room: it lists the members, a parley join reads the page's text, the page reads the backend's; a dev token without pasting one")
        func pageFollowsTheRoom() throws {
            let (relay, server, base) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "web-\(UInt32.random(in: 0...UInt32.max))"
            let cli = try Spawned("parley", ["join", room, "--identity", "cli", "--server", server, "--tone", "500", "--mode", "forward",
                                             "--no-playback", "--no-tui", "--duration", "14"])
            #expect(cli.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(cli.stdout)\(cli.stderr)")
            // No token in the page: it asks POST /v1/dev-token, which a relay with the dev credentials answers.
            let browser = try Browser(base: base, room: room, token: "", listen: false, seconds: 6, fakeAudio: try toneFile(440, seconds: 10),
                                      profile: "\(dir)/chromium", query: "&identity=web&say=hello%20from%20the%20page")
            defer { browser.stop() }
            #expect(cli.waitFor(seconds: 15) { $0.contains("web joined") }, "\(cli.stdout)\n\(browser.log)")
            // The page sends its text 2 s into its report, after its event stream opened: the backend's text follows.
            #expect(cli.waitFor(seconds: 10) { $0.contains("text from web: hello from the page") }, "\(cli.stdout)")
            let admin = try mint(["--admin", "--identity", "ops"])
            #expect(try curl("POST", base + "/v1/rooms/\(room)/messages", token: admin, body: #"{"text":"hello from the backend"}"#).status == 200)
            let result = try #require(browser.result(seconds: 20), "no result from the page:\n\(browser.log)")
            #expect(result["state"] as? String == "connected", "\(result)")
            #expect(Set(result["members"] as? [String] ?? []) == ["cli", "web"], "\(result)")
            let texts = (result["texts"] as? [[String]] ?? []).map { $0.joined(separator: ": ") }
            #expect(texts.contains("backend: hello from the backend"), "\(texts)")
            #expect(cli.waitFor(seconds: 3) { $0.contains("text from web: hello from the page") }, "\(cli.stdout)")
            #expect((result["maxAudioLevel"] as? Double ?? 0) > 0.01, "the page did not hear the CLI's tone: \(result)")
        }

        @Test("a browser hears two parley joins speaking at once on two tracks (one per forwarding slot)")
        func browserHearsTwoSlots() throws {
            let (relay, server, base) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "web-\(UInt32.random(in: 0...UInt32.max))"
            let speakers = try [500, 800].map { tone in
                try Spawned("parley", ["join", room, "--identity", "t\(tone)", "--server", server, "--tone", "\(tone)", "--mode", "forward",
                                       "--no-playback", "--no-tui", "--duration", "12"])
            }
            for s in speakers { #expect(s.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(s.stdout)\(s.stderr)") }
            let token = try mint(["--identity", "web", "--room", room])
            let browser = try Browser(base: base, room: room, token: token, listen: true, seconds: 6, fakeAudio: nil, profile: "\(dir)/chromium")
            defer { browser.stop() }
            let result = try #require(browser.result(seconds: 20), "no result from the page:\n\(browser.log)")
            let levels = (result["trackLevels"] as? [String: Double] ?? [:]).values.filter { $0 > 0.01 }
            #expect(levels.count == 2, "tracks with sound: \(result["trackLevels"] ?? "none") \(result)")
            for s in speakers { s.signal(SIGINT); s.wait(seconds: 5) }
        }

        @Test("a browser listens (recvonly): it hears a parley join's 660 Hz tone with no packet lost")
        func browserListens() throws {
            let (relay, server, base) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "web-\(UInt32.random(in: 0...UInt32.max))"
            let token = try mint(["--identity", "web", "--room", room])
            let speaker = try Spawned("parley", ["join", room, "--identity", "tone", "--server", server, "--tone", "660", "--mode", "forward",
                                                 "--no-playback", "--no-tui", "--duration", "12"])
            #expect(speaker.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(speaker.stdout)\(speaker.stderr)")
            let browser = try Browser(base: base, room: room, token: token, listen: true, seconds: 6, fakeAudio: nil, profile: "\(dir)/chromium")
            defer { browser.stop() }
            let result = try #require(browser.result(seconds: 20), "no result from the page:\n\(browser.log)\n\(relay.stderr)")
            #expect(result["state"] as? String == "connected", "\(result)")
            #expect((result["packetsReceived"] as? Int ?? 0) > 200, "\(result)")
            #expect(result["packetsLost"] as? Int == 0, "\(result)")
            #expect((result["maxAudioLevel"] as? Double ?? 0) > 0.01, "\(result)")
            // Join to first audio is a figure for a benchmark (Benchmarks/scripts/webrtc/webrtc-join.sh), not a timed
            // test: here it is only seen.
            #expect(result["firstPacketMs"] as? Int != nil, "\(result)")
            speaker.signal(SIGINT)
            speaker.wait(seconds: 5)
        }

        /// Speech for the fake microphone: espeak-ng's voice at 48 kHz mono (ffmpeg resamples), about 4 s.
        func speechFile() throws -> String {
            let raw = "\(dir)/speech-22k.wav", path = "\(dir)/speech.wav"
            let espeak = try Spawned(.espeakNG, ["-s", "150", "-w", raw, "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."])
            #expect(espeak.wait(seconds: 10) == 0, "\(espeak.stderr)")
            let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "error", "-y", "-i", raw, "-ar", "48000", "-ac", "1", path])
            #expect(ffmpeg.wait(seconds: 10) == 0, "\(ffmpeg.stderr)")
            return path
        }

        @Test("a browser's speech reaches a parley join at PESQ-WB >= 4.0 every run, through capture stalls (issue 37)")
        func browserSpeechQuality() throws {
            // One run, asserted: no retry keeps the best. On this 2-core machine Chromium's fake microphone stalls now
            // and then (its packets arrive in delay steps); the recorder's jitter buffer holds for a late frame and
            // plays it (issue 37), where it used to conceal the steps as loss: holes of up to 1.8 s, PESQ-WB 1.66-2.91.
            let (value, detail) = try speechAttempt(1)
            print("browser speech PESQ-WB: \(detail)")
            #expect(value >= 4.0, "PESQ-WB \(value): \(detail)")
        }

        /// One run of the speech path: the PESQ-WB of a `parley join`'s recording of a browser speaking, and what it saw.
        func speechAttempt(_ attempt: Int) throws -> (Double, String) {
            let (relay, server, base) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "web-\(UInt32.random(in: 0...UInt32.max))"
            let speech = try speechFile()
            let recording = "\(dir)/heard-\(attempt).wav"
            let recorder = try Spawned("parley", ["join", room, "--identity", "rec", "--server", server, "--listen-only", "--mode", "forward",
                                                  "--output", recording, "--no-tui", "--duration", "20", "--verbose"])
            #expect(recorder.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(recorder.stdout)\(recorder.stderr)")
            let token = try mint(["--identity", "web", "--room", room])
            // 20 s of recording: a whole loop of the speech (5.6 s) must start at a loop's start after the 5 s left
            // out, also when a loaded machine delays the browser's join by 3-4 s (a 14 s recording then held none,
            // and the alignment scored a rotated loop: PESQ-WB 1.03).
            let browser = try Browser(base: base, room: room, token: token, listen: false, seconds: 17,
                                      fakeAudio: speech,
                                      profile: "\(dir)/chromium-\(attempt)", query: "&raw=1")
            defer { browser.stop() }
            let result = try #require(browser.result(seconds: 31), "no result from the page:\n\(browser.log)")
            #expect(result["state"] as? String == "connected", "\(result)")
            #expect(recorder.wait(seconds: 10) == 0, "\(recorder.stderr)")
            // The page loops the speech; the first 5 s of the recording (the join, the jitter buffer's start: issue 20's
            // first-talkspurt shift) are left out, a whole loop of the steady state after them is scored.
            let score = try Spawned(.interopPython, [ExternalProgram.packageRoot + "/Tests/Interop/pesq_wb.py", speech, recording,
                                                     "--skip", "5"])
            #expect(score.wait(seconds: 60) == 0, "\(score.stderr)")
            let value = jsonObject(score.stdout)["pesq_wb"] as? Double ?? 0
            let heard = (recorder.stdout + recorder.stderr).split(separator: "\n").last { $0.contains("received ssrc") }.map(String.init) ?? ""
            return (value, "\(score.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) \(heard)")
        }

        @Test("Chromium hears a parley speaker through WHEP: PESQ-WB > 1.2 in every run, ≥ 3.5 unless a stall")
        func browserHearsSpeech() throws {
            // One run, asserted: no retry keeps the best. The speaker loops the speech; the page records from before
            // it starts, and one whole loop after the first 5 s (the join, NetEq's start) is scored, as
            // browserSpeechQuality does. Seven clean loopback runs on this shared 2-core machine (2026-12-03, other
            // builds running) scored 4.107, 4.108, 4.108, 4.108, 4.094, 3.899 and 1.41. In the 1.41 run packets
            // stopped coming for a while (a starved process): NetEq raised its delay to a mean of 881 ms, stretching
            // 680 ms of audio in. What holds in every run is that the page hears the speech (> 1.2); ≥ 3.5 (0.4
            // under the lowest other run) is recorded as a known issue when such a stall hits it, never hidden.
            let (relay, server, base) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "web-\(UInt32.random(in: 0...UInt32.max))"
            let speech = try speechFile()
            let token = try mint(["--identity", "web", "--room", room, "--mode", "forward"])
            let browser = try Browser(base: base, room: room, token: token, listen: true, seconds: 14, fakeAudio: nil,
                                      profile: "\(dir)/chromium", query: "&record=1")
            defer { browser.stop() }
            #expect(browser.process.waitForStderr(seconds: 20) { $0.contains("PARLEY recording") }, "\(browser.log)")
            let speaker = try Spawned("parley", ["join", room, "--identity", "mouth", "--server", server, "--input",
                                                 speech, "--loop", "--duration", "20", "--mode", "forward",
                                                 "--no-playback", "--no-tui"])
            defer { speaker.signal(SIGINT); speaker.wait(seconds: 5) }
            // The page closes itself after its result: waiting for that exit reads the ~2 MB of PCM lines once, where
            // waiting for a line would read all of stderr again at every chunk of them.
            browser.process.wait(seconds: 40)
            let result = try #require(browser.result(seconds: 0),
                                      "no result from the page:\n\(browser.log)\n\(relay.stderr)")
            #expect(result["state"] as? String == "connected", "\(result)")
            let samples = try browser.recording()
            let recording = "\(dir)/heard-by-chromium.wav"
            let writer = try WAVWriter(path: recording)
            try samples.withUnsafeBufferPointer { try writer.write($0) }
            try writer.finish()
            let scorer = ExternalProgram.packageRoot + "/Tests/Interop/pesq_wb.py"
            let score = try Spawned(.interopPython, [scorer, speech, recording, "--skip", "5"])
            #expect(score.wait(seconds: 60) == 0, "\(score.stderr)")
            let value = jsonObject(score.stdout)["pesq_wb"] as? Double ?? 0
            let neteq = ["meanJitterBufferMs", "concealedSamples", "silentConcealedSamples",
                         "insertedSamplesForDeceleration", "removedSamplesForAcceleration", "packetsLost"]
                .map { "\($0) \(result[$0] ?? "none")" }.joined(separator: ", ")
            let scored = score.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            print("Chromium's recording through WHEP: \(scored); \(neteq)")
            #expect(value > 1.2, "the page did not hear the speech: PESQ-WB \(value); \(neteq)\n\(browser.log)")
            withKnownIssue("a starved process's stall becomes NetEq delay on this shared machine",
                           isIntermittent: true) {
                #expect(value >= 3.5, "PESQ-WB \(value) of \(samples.count) samples; \(neteq)\n\(browser.log)")
            }
        }

        @Test("two browsers talk to each other through a forward room and through a mix room", arguments: ["forward", "mix"])
        func twoBrowsers(mode: String) throws {
            let (relay, _, base) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "web2-\(mode)-\(UInt32.random(in: 0...UInt32.max))"
            let a = try Browser(base: base, room: room, token: try mint(["--identity", "ann", "--room", room, "--mode", mode]), listen: false,
                                seconds: 8, fakeAudio: try toneFile(440, seconds: 10), profile: "\(dir)/chromium-a", query: "&raw=1")
            defer { a.stop() }
            let b = try Browser(base: base, room: room, token: try mint(["--identity", "ben", "--room", room, "--mode", mode]), listen: false,
                                seconds: 8, fakeAudio: try toneFile(880, seconds: 10), profile: "\(dir)/chromium-b", query: "&raw=1")
            defer { b.stop() }
            for (name, browser) in [("ann", a), ("ben", b)] {
                let result = try #require(browser.result(seconds: 30), "no result from \(name)'s page:\n\(browser.log)")
                #expect(result["state"] as? String == "connected", "\(name): \(result)")
                #expect((result["packetsReceived"] as? Int ?? 0) > 150, "\(name): \(result)")
                #expect((result["maxAudioLevel"] as? Double ?? 0) > 0.01, "\(name) heard nothing: \(result)")
            }
        }
    }
}
