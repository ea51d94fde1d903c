import Foundation
import ParleyAudioIO
import Testing

/// The tones one speaker after another sends into a forward room, and the share of each in a recording: which tone
/// dominates each half second, in order, repeats collapsed.
func dominantTones(_ samples: [Int16], among tones: [Double]) -> [Double] {
    var order: [Double] = []
    for k in stride(from: 0, through: samples.count - 24_000, by: 24_000) {
        let window = samples[k..<k + 24_000]
        let shares = tones.map { goertzelShare(window, frequency: $0) }
        guard let best = shares.indices.max(by: { shares[$0] < shares[$1] }), shares[best] > 0.5 else { continue }
        if order.last != tones[best] { order.append(tones[best]) }
    }
    return order
}

extension ProcessTests {
    @Suite("Standard tools on the relay's streams: one stream per endpoint across speaker changes (ffmpeg, GStreamer)")
    struct StreamInteropTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-interop-\(UInt32.random(in: 0...UInt32.max))").path
        /// Speaker turns: 440 Hz, 660 Hz, 880 Hz, then 440 Hz again (three changes), 2.4 s each, 0.9 s apart.
        static let turns: [Double] = [440, 660, 880, 440]

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        /// A forward room and a subscribe-only SRTP endpoint receiving at a fresh port: the API's answer.
        func endpoint(_ base: String, _ admin: String, room: String) throws -> (answer: [String: Any], port: UInt16) {
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"\#(room)","mode":"forward"}"#).status == 201)
            let port = freeUDPPort()
            let created = try curl("POST", base + "/v1/rooms/\(room)/rtp-endpoints", token: admin,
                                   body: #"{"identity":"tool","publish":false,"subscribe":true,"receive_address":"127.0.0.1:\#(port)"}"#)
            #expect(created.status == 201, "\(created.body)")
            return (jsonObject(created.body), port)
        }

        /// Parley clients speaking the turns one after another (each leaves before the next joins).
        /// The last turn lasts 12 s, so that a recorder stopping at 20 s of stream stops while it still flows, however
        /// slowly the clients start (the stream's timeline runs through the pauses between turns).
        func speakTurns(room: String, server: String) throws {
            for (i, tone) in Self.turns.enumerated() {
                let seconds = i == Self.turns.count - 1 ? "12" : "2.4"
                let speaker = try Spawned("parley", ["join", room, "--identity", "s\(i)", "--server", server, "--tone", "\(Int(tone))",
                                                     "--no-playback", "--no-tui", "--duration", seconds])
                #expect(speaker.wait(seconds: 16) == 0, "\(speaker.stderr)")
                Thread.sleep(forTimeInterval: 0.9)
            }
        }

        func expectTurns(_ samples: [Int16], _ tool: String) {
            let order = dominantTones(samples, among: Array(Set(Self.turns)).sorted())
            #expect(order == Self.turns, "\(tool): dominant tones per half second \(order) in \(samples.count) samples")
        }

        @Test("ffmpeg receives a forward room through the API's SDP while the speaker changes three times: every turn, in order")
        func ffmpegFollowsSpeakerChanges() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "turns-\(UInt32.random(in: 0...UInt32.max))"
            let (answer, port) = try endpoint(base, admin, room: room)
            try #require(answer["sdp"] as? String).write(toFile: "\(dir)/endpoint.sdp", atomically: true, encoding: .utf8)
            let receiveArgs = try #require(answer["ffmpeg_receive_args"] as? [String]).map { $0 == "endpoint.sdp" ? "\(dir)/endpoint.sdp" : $0 }
            let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "warning"] + receiveArgs
                                     // 20 s of stream: it ends inside the last turn, which starts 10–13 s into the stream
                                     // (three turns of 2.4 s, 0.9 s apart, and each client's start-up; up to 16 s when
                                     // the machine is busy) and lasts 12 s:
                                     // ffmpeg stops while packets flow (waiting for packets that never come, it would
                                     // ignore SIGTERM).
                                     + ["-t", "20", "-ac", "1", "-ar", "48000", "-y", "\(dir)/turns.wav"])
            #expect(eventually(seconds: 15) { udpPortIsBound(port) }, "ffmpeg did not bind 127.0.0.1:\(port): \(ffmpeg.stderr)")
            try speakTurns(room: room, server: server)
            #expect(ffmpeg.wait(seconds: 8) == 0, "\(ffmpeg.stderr)")
            // Before, ffmpeg dropped every packet after the first change ("dropping old packet received too late").
            #expect(!ffmpeg.stderr.contains("too late"), "\(ffmpeg.stderr)")
            expectTurns(try WAVReader(path: "\(dir)/turns.wav").readAllMono48k(), "ffmpeg")
        }

        @Test("GStreamer (udpsrc, srtpdec, rtpjitterbuffer, rtpopusdepay) receives the same stream with the API's key: every turn, in order")
        func gstreamerFollowsSpeakerChanges() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "turns-gst-\(UInt32.random(in: 0...UInt32.max))"
            let (answer, port) = try endpoint(base, admin, room: room)
            let keys = try #require(answer["srtp"] as? [String: Any])
            let relayKey = try #require(keys["relay_key"] as? String)
            let key = try #require(Data(base64Encoded: relayKey))  // 16-byte key ‖ 14-byte salt
            let hex = key.map { String(format: "%02x", $0) }.joined()
            // srtpdec is keyed per SSRC in its caps: one SSRC for the whole session works only because the stream keeps it.
            let ssrc = try #require(answer["stream_ssrc"] as? Int)
            let caps = "application/x-srtp,media=audio,clock-rate=48000,encoding-name=OPUS,payload=111,ssrc=(uint)\(ssrc),srtp-key=(buffer)\(hex),"
                + "srtp-cipher=aes-128-icm,srtp-auth=hmac-sha1-80,srtcp-cipher=aes-128-icm,srtcp-auth=hmac-sha1-80"
            // Raw PCM to a file: the pipeline ends by being killed (no EOS to finish a WAV header).
            let raw = "\(dir)/turns.raw"
            // The relay's SRTCP (sender reports) arrives muxed on the RTP port: srtpdec sends it out of rtcp_src, which
            // must be linked (to a fakesink here) or the pipeline stops with "not-linked" at the first report.
            let gst = try Spawned(.gstLaunch, ["-q", "udpsrc", "address=127.0.0.1", "port=\(port)", "caps=\(caps)", "!",
                                              "srtpdec", "name=d", "d.rtp_src", "!",
                                              "rtpjitterbuffer", "latency=100", "!", "rtpopusdepay", "!", "opusdec", "!", "audioconvert", "!",
                                              "audioresample", "!", "audio/x-raw,format=S16LE,rate=48000,channels=1", "!",
                                              "filesink", "location=\(raw)", "buffer-mode=unbuffered", "sync=false",
                                              "d.rtcp_src", "!", "fakesink", "sync=false", "async=false"])
            #expect(eventually(seconds: 15) { udpPortIsBound(port) }, "gst-launch did not bind 127.0.0.1:\(port): \(gst.stderr)")
            try speakTurns(room: room, server: server)
            Thread.sleep(forTimeInterval: 0.5)
            gst.signal(SIGKILL)
            gst.wait(seconds: 3)
            let data = try Data(contentsOf: URL(fileURLWithPath: raw))
            let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
            #expect(samples.count >= 48_000 * 8, "\(samples.count) samples: \(gst.stderr)")
            expectTurns(samples, "GStreamer")
        }
    }
}
