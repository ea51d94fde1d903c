import Foundation
import Testing

/// tshark's reading of a capture of a real relay: forwarding (two speakers in turn, a Parley listener behind the
/// impairment proxy so NACKs go back and forth, a plain-RTP endpoint received by ffmpeg), mixing, and leaves.
/// Cleartext (`--allow-cleartext`, `--cleartext`, `"srtp": false`) so that tshark can read everything.
extension ProcessTests {
    @Suite("tshark reads the relay's RTP and RTCP as standard: compound RTCP, one stream per endpoint, nothing malformed")
    struct WireConformanceTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-tshark-\(UInt32.random(in: 0...UInt32.max))").path

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        /// tshark on the capture with RTP recognised on any UDP port (RTCP is by default), returning its output.
        func tshark(_ pcap: String, _ arguments: [String]) throws -> String {
            let run = try Spawned(.tshark, ["-n", "-r", pcap, "--enable-heuristic", "rtp_udp"] + arguments)
            #expect(run.wait(seconds: 60) == 0, "\(run.stderr)")
            return run.stdout
        }

        @Test("a room with forwarding, mixing, a NACK round trip and leaves: SR, RR, SDES, NACK and BYE in compounds; no malformed packet; the endpoint's and the mix listener's streams have no sequence errors")
        func tsharkReadsTheRelay() throws {
            let (relay, server) = try startRelay(workers: 1, environment: ["PARLEY_ALLOW_CLEARTEXT": "true"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let port = try #require(server.split(separator: ":").last.flatMap { UInt16($0) })
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let pcap = "\(dir)/relay.pcap"
            let dump = try Spawned(.tcpdump, ["-i", "lo", "-n", "-U", "--immediate-mode", "-w", pcap, "udp port \(port)"])
            #expect(dump.waitForStderr(seconds: 10) { $0.contains("listening on") }, "\(dump.stderr)")
            // bob listens through the impairment proxy (moderate: loss in bursts, jitter): he NACKs, the relay answers.
            let proxy = try Spawned("impair-proxy", ["--listen", "127.0.0.2", "--upstream", "127.0.0.1", "--ports", "\(port)",
                                                     "--profile", "moderate", "--seed", "7", "--duration", "30"])
            defer { proxy.signal(SIGKILL); proxy.wait(seconds: 3) }
            Thread.sleep(forTimeInterval: 0.3)

            let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
            let forward = "fwd-\(tag)", mix = "mix-\(tag)"
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"\#(forward)","mode":"forward"}"#).status == 201)
            #expect(try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"\#(mix)","mode":"mix"}"#).status == 201)
            let receive = freeUDPPort()
            let created = try curl("POST", base + "/v1/rooms/\(forward)/rtp-endpoints", token: admin,
                                   body: #"{"identity":"rec","publish":false,"receive_address":"127.0.0.1:\#(receive)","srtp":false}"#)
            #expect(created.status == 201, "\(created.body)")
            let answer = jsonObject(created.body)
            let streamSSRC = try #require(answer["stream_ssrc"] as? Int)
            try #require(answer["sdp"] as? String).write(toFile: "\(dir)/rec.sdp", atomically: true, encoding: .utf8)
            let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "error", "-protocol_whitelist", "file,udp,rtp",
                                               "-i", "\(dir)/rec.sdp", "-t", "9", "-ac", "1", "-y", "\(dir)/rec.wav"])
            #expect(eventually(seconds: 15) { udpPortIsBound(receive) }, "ffmpeg did not bind 127.0.0.1:\(receive): \(ffmpeg.stderr)")

            let clear = ["--cleartext", "--no-playback", "--no-tui"]
            let proxied = server.replacingOccurrences(of: "127.0.0.1:", with: "127.0.0.2:")
            let bob = try Spawned("parley", ["join", forward, "--identity", "bob", "--server", proxied, "--listen-only", "--duration", "9"] + clear)
            let erin = try Spawned("parley", ["join", mix, "--identity", "erin", "--server", server, "--listen-only", "--duration", "9"] + clear)
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined") } && erin.waitFor(seconds: 5) { $0.contains("joined") },
                    "\(bob.stderr)\(erin.stderr)")
            let dave = try Spawned("parley", ["join", mix, "--identity", "dave", "--server", server, "--tone", "500", "--duration", "6"] + clear)
            let alice = try Spawned("parley", ["join", forward, "--identity", "alice", "--server", server, "--tone", "440", "--duration", "3"] + clear)
            #expect(alice.wait(seconds: 8) == 0, "\(alice.stderr)")
            Thread.sleep(forTimeInterval: 0.8)
            let carol = try Spawned("parley", ["join", forward, "--identity", "carol", "--server", server, "--tone", "660", "--duration", "3"] + clear)
            #expect(carol.wait(seconds: 8) == 0, "\(carol.stderr)")
            #expect(dave.wait(seconds: 8) == 0, "\(dave.stderr)")
            #expect(try curl("DELETE", base + "/v1/rooms/\(forward)/rtp-endpoints/rec", token: admin).status == 200)
            #expect(bob.wait(seconds: 8) == 0 && erin.wait(seconds: 8) == 0, "\(bob.stderr)\(erin.stderr)")
            ffmpeg.wait(seconds: 5)
            Thread.sleep(forTimeInterval: 0.5)
            dump.signal(SIGKILL)  // the runner's threads block SIGINT/SIGTERM, which tcpdump inherits (CaptureTests)
            dump.wait(seconds: 5)

            // Nothing tshark takes for malformed.
            let malformed = try tshark(pcap, ["-Y", "_ws.malformed", "-T", "fields", "-e", "frame.number"])
            #expect(malformed.split(separator: "\n").isEmpty, "malformed frames: \(malformed.prefix(400))")
            // Every RTCP datagram a compound: SR or RR first, SDES in it; SR, RR, SDES, NACK (RTPFB 1) and BYE all seen.
            let rtcp = try tshark(pcap, ["-Y", "rtcp", "-T", "fields", "-E", "separator=;", "-e", "ip.src", "-e", "udp.srcport", "-e", "rtcp.pt"])
            var types = Set<Int>(), notCompound: [String] = [], fromRelay = 0
            for line in rtcp.split(separator: "\n") {
                let fields = line.split(separator: ";", omittingEmptySubsequences: false)
                guard fields.count == 3 else { continue }
                let pts = fields[2].split(separator: ",").compactMap { Int($0) }
                types.formUnion(pts)
                if fields[0] == "127.0.0.1" && fields[1] == "\(port)" { fromRelay += 1 }
                if !(pts.first == 200 || pts.first == 201) || !pts.contains(202) { notCompound.append(String(line)) }
            }
            #expect(fromRelay > 10, "\(rtcp.prefix(400))")
            #expect(notCompound.isEmpty, "not compound: \(notCompound.prefix(5))")
            #expect(types.isSuperset(of: [200, 201, 202, 203, 205]), "RTCP packet types seen: \(types.sorted())")
            let nacks = try tshark(pcap, ["-Y", "rtcp.rtpfb.fmt == 1", "-T", "fields", "-e", "ip.src"])
            #expect(!nacks.split(separator: "\n").isEmpty)
            // The endpoint's one stream across the speaker change, and erin's mix: one stream each, no loss, no
            // problem flagged (the relay's own legs; bob's leg carries the proxy's loss and the NACK answers).
            let streams = try tshark(pcap, ["-q", "-z", "rtp,streams"])
            let rows = streams.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
                .filter { $0.count >= 11 && $0[2] == "127.0.0.1" && $0[3] == "\(port)" }  // what the relay sent
            // columns: start, end, src, port, dst, port, SSRC, payload, packets, lost, (lost %), …, "X" when tshark saw a problem
            let clean = rows.filter { $0[9] == "0" && $0.last != "X" }
            let toEndpoint = rows.filter { $0[5] == "\(receive)" }
            #expect(toEndpoint.count == 1, "\(streams)")
            #expect(toEndpoint.first?[6] == String(format: "0x%08X", streamSSRC), "\(streams)")
            // alice's 3 s and carol's 3 s in one stream, nothing lost, nothing out of order.
            #expect(toEndpoint.first.map { Int($0[8]) ?? 0 >= 280 && $0[9] == "0" && $0.last != "X" } == true, "\(streams)")
            // The mix to erin is another clean stream (bob's leg carries the NACK answers: duplicates by design).
            #expect(clean.count >= 2, "\(streams)")
        }
    }
}
