import Foundation
import ParleyAudioIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Whether some process has bound UDP `port` on 127.0.0.1 (binding it here fails with EADDRINUSE).
func udpPortIsBound(_ port: UInt16) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = port.bigEndian
    let rc = withUnsafePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    return rc != 0 && errno == EADDRINUSE
}

/// Checks `condition` every 20 ms until it holds or `seconds` pass; returns whether it held. For facts only a
/// question can reveal (an API answer, a bound port); output of a spawned process has `Spawned.waitFor`.
func eventually(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return try condition()
}

/// A UDP port nobody is bound to right now on 127.0.0.1.
func freeUDPPort() -> UInt16 { freePort(Int32(SOCK_DGRAM.rawValue)) }

/// A TCP port nobody listens on right now on 127.0.0.1 (a receiver or server binds it later).
func freeTCPPort() -> UInt16 { freePort(Int32(SOCK_STREAM.rawValue)) }

/// A port of `type` (SOCK_DGRAM, SOCK_STREAM) the kernel hands out on 127.0.0.1: bound, read, closed.
private func freePort(_ type: Int32) -> UInt16 {
    let fd = socket(AF_INET, type, 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) }
    }
    _ = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return UInt16(bigEndian: addr.sin_port)
}

/// Share of the signal at `frequency` (Goertzel power over energy), as in the mix-mode core tests.
func goertzelShare(_ samples: ArraySlice<Int16>, frequency: Double, rate: Double = 48_000) -> Double {
    let coefficient = 2 * cos(2 * Double.pi * frequency / rate)
    var s1 = 0.0, s2 = 0.0, energy = 0.0
    for x in samples {
        let v = Double(x)
        let s0 = v + coefficient * s1 - s2
        s2 = s1
        s1 = s0
        energy += v * v
    }
    let power = s1 * s1 + s2 * s2 - coefficient * s1 * s2
    return energy > 0 ? 2 * power / (Double(samples.count) * energy) : 0
}

/// The loudest one-second window (half-second steps) of a 48 kHz recording.
func loudestSecond(_ samples: [Int16]) -> ArraySlice<Int16> {
    guard samples.count > 48_000 else { return samples[...] }
    var best = 0, bestEnergy = -1.0
    for start in stride(from: 0, through: samples.count - 48_000, by: 24_000) {
        let e = samples[start..<start + 48_000].reduce(0.0) { $0 + Double($1) * Double($1) }
        if e > bestEnergy { bestEnergy = e; best = start }
    }
    return samples[best..<best + 48_000]
}

/// The tone's share in each one-second window (half-second steps) that carries sound (at least a tenth of the loudest
/// window's level), their median, and how many are clearly the tone (share ≥ 0.9). What a test of reachability asks
/// is whether the tone came through, which two clear seconds show; neither the loudest second nor the median says it
/// alone: a browser's audio processing (gain control, noise suppression) shapes the first seconds of a tone, so the
/// loudest second is often its distorted onset (CI read 0.285 there), and in one full `make test` several seconds were
/// garbled (medians 0.28-0.69; 0.94-1.0 run alone). How a browser's speech sounds through stalls is asserted every run
/// by the PESQ tests, not here. Second by second also keeps one stretch or concealed frame, which shifts a tone's
/// phase, from reading as the tone's absence, as a single transform over seconds would.
func toneShares(_ samples: [Int16], frequency: Double) -> (clear: Int, median: Double, windows: [Double]) {
    guard samples.count >= 48_000 else {
        let share = goertzelShare(samples[...], frequency: frequency)
        return (share >= 0.9 ? 1 : 0, share, [share])
    }
    let starts = Array(stride(from: 0, through: samples.count - 48_000, by: 24_000))
    let levels = starts.map { start in samples[start..<start + 48_000].reduce(0.0) { $0 + Double($1) * Double($1) } }
    let floor = (levels.max() ?? 0) / 100  // a tenth of the loudest window's RMS
    var shares: [Double] = []
    for (start, level) in zip(starts, levels) where level > 0 && level >= floor {
        let share = goertzelShare(samples[start..<start + 48_000], frequency: frequency)
        shares.append((share * 100).rounded() / 100)
    }
    let sorted = shares.sorted()
    return (shares.filter { $0 >= 0.9 }.count, sorted.isEmpty ? 0 : sorted[sorted.count / 2], shares)
}

func jsonObject(_ text: String) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
}

extension ProcessTests {
    @Suite("Plain-RTP endpoints with ffmpeg and a real relay")
    struct RTPEndpointProcessTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-rtp-\(UInt32.random(in: 0...UInt32.max))").path

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        @Test("ffmpeg publishes a 600 Hz Opus tone into a forward-mode room over SRTP with only the API's answer; a Parley client records it")
        func ffmpegPublishes() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "rtp-fwd-\(UInt32.random(in: 0...UInt32.max))"
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"\#(room)","mode":"forward"}"#).status == 201)
            // Long enough for ffmpeg's start and its 4 s of tone on a busy machine.
            let recorder = try Spawned("parley", ["join", room, "--identity", "rec", "--server", server, "--listen-only",
                                                  "--output", "\(dir)/heard.wav", "--no-tui", "--duration", "11"])
            #expect(recorder.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(recorder.stdout)\(recorder.stderr)")
            // The endpoint accepts RTP only from the address named here: ffmpeg sends from `localport`.
            let source = freeUDPPort()
            let created = try curl("POST", base + "/v1/rooms/\(room)/rtp-endpoints", token: admin,
                                   body: #"{"identity":"ffmpeg","publish":true,"subscribe":false,"source_address":"127.0.0.1:\#(source)"}"#)
            #expect(created.status == 201, "\(created.body)")
            let answer = jsonObject(created.body)
            #expect(answer["payload_type"] as? Int == 111)
            // SRTP by default: ffmpeg is given only the options the API returned (keys, suite, SSRC, the srtp:// URL).
            let sendArgs = try #require(answer["ffmpeg_send_args"] as? [String])
            #expect(sendArgs.contains("-srtp_out_params") && sendArgs.last?.hasPrefix("srtp://127.0.0.1:") == true, "\(sendArgs)")
            #expect(recorder.waitFor(seconds: 3) { $0.contains("ffmpeg joined") }, "\(recorder.stdout)")
            let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=600:duration=4",
                                           "-ac", "1", "-ar", "48000", "-c:a", "libopus", "-b:a", "32k"] + sendArgs)
            #expect(ffmpeg.wait(seconds: 10) == 0, "\(ffmpeg.stderr)")
            // The endpoint latched ffmpeg's address: the member list shows it (API snapshots are up to 200 ms old).
            var members = (status: 0, body: "")
            let latched = try eventually(seconds: 3) {
                members = try curl("GET", base + "/v1/rooms/\(room)/members", token: admin)
                return members.body.contains(#""identity":"ffmpeg""#) && members.body.contains("127.0.0.1:")
            }
            #expect(latched, "\(members.body)")
            // ffmpeg sent with the SSRC it was given, and its RTCP (sender reports, from its RTP port + 1 to the relay's
            // RTP port, as the API's options say) reached the relay and was taken as the endpoint's.
            let listed = (jsonObject(members.body)["members"] as? [[String: Any]] ?? []).first { $0["identity"] as? String == "ffmpeg" }
            #expect(listed?["ssrc"] as? Int == answer["ssrc"] as? Int, "\(members.body)")
            #expect(((listed?["stats"] as? [String: Any])?["sender_reports"] as? Int ?? 0) >= 1, "\(members.body)")
            #expect(recorder.wait(seconds: 11) == 0, "\(recorder.stderr)")
            let heard = try WAVReader(path: "\(dir)/heard.wav").readAllMono48k()
            let loud = loudestSecond(heard)
            let share = goertzelShare(loud, frequency: 600)
            #expect(share > 0.5, "600 Hz share \(share) of \(heard.count) samples")
            // Every SRTP packet verified: nothing counted as forged or replayed.
            let metrics = try curl("GET", base + "/metrics", token: admin).body
            #expect(metrics.contains(#"parley_drops_total{reason="srtp_rejected"} 0"#), "\(metrics.split(separator: "\n").filter { $0.contains("srtp") })")
            #expect(metrics.contains(#"parley_drops_total{reason="srtp_replayed"} 0"#))
            #expect(try curl("DELETE", base + "/v1/rooms/\(room)/rtp-endpoints/ffmpeg", token: admin).status == 200)
        }

        @Test("a relay that does not allow cleartext refuses a cleartext endpoint with 403 cleartext_refused")
        func cleartextRefused() throws {
            let (relay, _) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "rtp-clear-\(UInt32.random(in: 0...UInt32.max))"
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"\#(room)"}"#).status == 201)
            let refused = try curl("POST", base + "/v1/rooms/\(room)/rtp-endpoints", token: admin,
                                   body: #"{"identity":"ffmpeg","subscribe":false,"source_address":"127.0.0.1:40000","srtp":false}"#)
            #expect(refused.status == 403 && refused.body.contains("cleartext_refused"), "\(refused.body)")
        }

        @Test("a subscribe-only endpoint receives a mix-mode room's mix of two tones over SRTP; ffmpeg decodes it with the API's SDP and options")
        func ffmpegSubscribesToMix() throws {
            let (relay, server) = try startRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "rtp-mix-\(UInt32.random(in: 0...UInt32.max))"
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"\#(room)","mode":"mix"}"#).status == 201)
            let receivePort = freeUDPPort()
            let created = try curl("POST", base + "/v1/rooms/\(room)/rtp-endpoints", token: admin,
                                   body: #"{"identity":"listener","publish":false,"subscribe":true,"receive_address":"127.0.0.1:\#(receivePort)"}"#)
            #expect(created.status == 201, "\(created.body)")
            let answer = jsonObject(created.body)
            let sdp = try #require(answer["sdp"] as? String)
            #expect(sdp.contains("m=audio \(receivePort) RTP/SAVP 111") && sdp.contains("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:")
                    && sdp.contains("a=recvonly"), "\(sdp)")
            try sdp.write(toFile: "\(dir)/endpoint.sdp", atomically: true, encoding: .utf8)
            // The API's input options, with the SDP where it says: ffmpeg decrypts with the SDP's a=crypto key.
            let receiveArgs = try #require(answer["ffmpeg_receive_args"] as? [String]).map { $0 == "endpoint.sdp" ? "\(dir)/endpoint.sdp" : $0 }
            let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "error"] + receiveArgs + ["-t", "4", "-ac", "1", "-y", "\(dir)/mix.wav"])
            #expect(eventually(seconds: 15) { udpPortIsBound(receivePort) }, "ffmpeg did not bind 127.0.0.1:\(receivePort): \(ffmpeg.stderr)")
            let a = try Spawned("parley", ["join", room, "--identity", "a", "--server", server, "--tone", "440", "--no-playback", "--no-tui", "--duration", "8"])
            let b = try Spawned("parley", ["join", room, "--identity", "b", "--server", server, "--tone", "900", "--no-playback", "--no-tui", "--duration", "8"])
            defer { a.signal(SIGTERM); b.signal(SIGTERM) }
            #expect(ffmpeg.wait(seconds: 11) == 0, "\(ffmpeg.stderr)")
            let mixed = try WAVReader(path: "\(dir)/mix.wav").readAllMono48k()
            #expect(mixed.count >= 48_000 * 3, "\(mixed.count) samples")
            // The mix's limiter keeps the level flat, so the loudest second says little: count the one-second windows
            // (half-second steps) that hold both tones, each about half of the signal (a join's start can blur one window).
            var both = 0, windows = 0, shares: [String] = []
            for k in stride(from: 0, through: mixed.count - 48_000, by: 24_000) {
                let w = mixed[k..<k + 48_000]
                let low = goertzelShare(w, frequency: 440), high = goertzelShare(w, frequency: 900)
                windows += 1
                if low > 0.3 && high > 0.3 && low + high > 0.8 { both += 1 }
                shares.append("\((low * 100).rounded())/\((high * 100).rounded())")
            }
            // Measured here: 5 of 6 windows about 50/50 (%), the sixth 7/50 where the second client's stream began.
            #expect(both >= windows / 2 && both >= 3, "440/900 Hz shares per window (%): \(shares)")
            a.wait(seconds: 5)
            b.wait(seconds: 5)
        }
    }
}
