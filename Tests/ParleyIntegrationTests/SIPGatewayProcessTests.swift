import Foundation
import ParleyAudioIO
import Testing

/// baresip's configuration in `dir` (`name`, default `baresip`): its SIP on `sipPort`, `source` (an 8 kHz WAV) as its
/// microphone, what it hears and sends dumped as WAVs into `dumps` (sndfile), G.711 only, ALSA's null device as its
/// speaker. `account`: the accounts line (default an unregistered `sip:phone@127.0.0.1`); `console`: commands from
/// stdin (stdio), so a test can dial once the phone registered; `opus`: Opus only (its source then a 48 kHz stereo
/// WAV); `srtp`: SDES-SRTP required (RTP/SAVP).
func baresipConfig(in dir: String, name: String = "baresip", sipPort: UInt16, source: String, autoAnswer: Bool = false,
                   account: String? = nil, console: Bool = false, opus: Bool = false,
                   srtp: Bool = false) throws -> String {
    let config = dir + "/" + name
    try FileManager.default.createDirectory(atPath: config + "/dumps", withIntermediateDirectories: true)
    let lines = ["poll_method epoll", "sip_listen 127.0.0.1:\(sipPort)", "audio_source aufile,\(source)",
                 "audio_player alsa,null", "audio_alert alsa,null", "module_path /usr/lib/baresip/modules",
                 "module g711.so", "module aufile.so", "module alsa.so", "module sndfile.so",
                 "snd_path \(config)/dumps"] + (console ? ["module stdio.so"] : []) + (opus ? ["module opus.so"] : [])
        + (srtp ? ["module srtp.so"] : [])
        + ["module_app account.so", "module_app menu.so", "rtp_timeout 0"]
    try (lines.joined(separator: "\n") + "\n").write(toFile: config + "/config", atomically: true, encoding: .utf8)
    let line = account ?? "<sip:phone@127.0.0.1>;regint=0;audio_codecs=\(opus ? "opus/48000/2" : "PCMU")"
    try (line + (autoAnswer ? ";answermode=auto" : "") + (srtp ? ";mediaenc=srtp-mand" : "") + "\n")
        .write(toFile: config + "/accounts", atomically: true, encoding: .utf8)
    try "".write(toFile: config + "/contacts", atomically: true, encoding: .utf8)
    return config
}

/// A relay (one worker) whose SIP gateway listens on a free UDP port and lets in `trunk`: the relay, its UDP server,
/// the SIP port and its HTTP API's base URL.
func startSIPRelay(trunk: String = "local=127.0.0.0/8") throws
    -> (relay: Spawned, server: String, sipPort: UInt16, base: String) {
    let sipPort = freeUDPPort()
    let (relay, server) = try startRelay(workers: 1, environment: ["PARLEY_SIP": "127.0.0.1:\(sipPort)",
                                                                  "PARLEY_SIP_TRUNKS": trunk])
    return (relay, server, sipPort, try #require(httpBase(of: relay)))
}

/// `seconds` of a 440 Hz tone at 8 kHz mono in `path`: a phone's microphone where what it says does not matter.
func phoneTone(_ path: String, seconds: Int) throws {
    let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                                       "sine=frequency=440:duration=\(seconds)", "-ar", "8000", "-ac", "1", path])
    #expect(ffmpeg.wait(seconds: 20) == 0, "\(ffmpeg.stderr)")
}

extension ProcessTests {
    /// Issue 40's first part: a SIP phone (baresip, G.711 µ-law) dials `sip:room-NAME@` the relay's gateway and is a
    /// member of the room both ways; calls from outside every trunk, and to rooms that do not exist, are refused.
    @Suite("SIP gateway: baresip dials into a room")
    struct SIPGatewayProcessTests {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-sip-\(UInt32.random(in: 0...UInt32.max))").path
        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        /// A relay whose gateway listens on a free port and lets in `trunk`; the relay and that port.
        func relay(trunk: String) throws -> (Spawned, String, UInt16) {
            let (relay, server, sipPort, _) = try startSIPRelay(trunk: trunk)
            return (relay, server, sipPort)
        }

        func room(_ relay: Spawned) throws -> String {
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "sip-\(UInt32.random(in: 0...UInt32.max))"
            let made = try curl("POST", base + "/v1/rooms", token: admin,
                                body: #"{"name":"\#(room)","mode":"forward"}"#)
            #expect(made.status == 201, "\(made.body)")
            return room
        }

        /// espeak-ng's speech at 48 kHz for the room's member and at 8 kHz for the phone, and the 2-8 s of each that
        /// is scored (a call starts a second or two after the member began).
        func speech() throws -> (speech48: String, speech8: String) {
            let speech48 = dir + "/speech48.wav", speech8 = dir + "/speech8.wav"
            try espeakSpeech(SkewedSenderProcessTests.sentences, path: speech48)
            for (input, output, arguments) in [(speech48, speech8, ["-ar", "8000"]),
                                               (speech48, dir + "/reference48.wav", ["-ss", "2", "-to", "8"]),
                                               (speech8, dir + "/reference8.wav", ["-ss", "2", "-to", "8"])] {
                let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "error", "-y", "-i", input] + arguments
                                         + ["-ac", "1", "-c:a", "pcm_s16le", output])
                #expect(ffmpeg.wait(seconds: 20) == 0, "\(ffmpeg.stderr)")
            }
            return (speech48, speech8)
        }

        /// PESQ-NB of the phone's speech as the room's member recorded it (`member`), and of the member's as the phone
        /// heard it (sndfile's dump of what baresip decoded, in the config directory `phone`): scores and JSON lines.
        func scoreBothWays(member: String, phone: String) throws -> (Double, String, Double, String) {
            let (intoRoom, intoRoomLine) = try pesqWB(reference: dir + "/reference8.wav", recording: member,
                                                      skip: 0, narrowband: true)
            let dumps = try FileManager.default.contentsOfDirectory(atPath: phone + "/dumps")
            let heard = try #require(dumps.first { $0.hasSuffix("-dec.wav") }, "sndfile wrote \(dumps)")
            let (toPhone, toPhoneLine) = try pesqWB(reference: dir + "/reference48.wav",
                                                    recording: phone + "/dumps/" + heard, skip: 0, narrowband: true)
            return (intoRoom, intoRoomLine, toPhone, toPhoneLine)
        }

        @Test("speech both ways through G.711: PESQ-NB ≥ 3.5 each way, every run")
        func speechBothWays() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let (speech48, speech8) = try speech()
            let (relay, server, sipPort) = try relay(trunk: "local=127.0.0.0/8")
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = try room(relay)
            // Everything on loopback but the relay's own port (the member's encrypted session): SIP and both RTP legs.
            let relayPort = try #require(server.split(separator: ":").last.map(String.init))
            let pcap = dir + "/sip.pcap"
            let dump = try Spawned(.tcpdump, ["-i", "lo", "-n", "-U", "--immediate-mode", "-w", pcap,
                                              "udp and not port \(relayPort)"])
            #expect(dump.waitForStderr(seconds: 10) { $0.contains("listening on") }, "\(dump.stderr)")
            let recording = dir + "/member.wav"
            let member = try Spawned("parley", ["join", room, "--identity", "member", "--server", server,
                                                "--mode", "forward", "--input", speech48, "--output", recording,
                                                "--no-tui", "--duration", "17", "--verbose"])
            #expect(member.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(member.stdout)\(member.stderr)")
            let config = try baresipConfig(in: dir, sipPort: freeUDPPort(), source: speech8)
            let phone = try Spawned(.baresip, ["-f", config, "-e", "/dial sip:room-\(room)@127.0.0.1:\(sipPort)",
                                               "-t", "13"])
            #expect(phone.wait(seconds: 25) == 0, "\(phone.stderr)")
            #expect(member.wait(seconds: 15) == 0, "\(member.stderr)")
            let phoneSaid = phone.stdout + phone.stderr
            #expect(phoneSaid.contains("Call established"), "\(phoneSaid.suffix(2_000))")
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("sip: sip-1 left room \(room): BYE") },
                    "\(relay.stdout)\(relay.stderr)")
            // What RTCP said, both ways: baresip's reports on the gateway's stream give a round trip.
            let left = relay.stderr.split(separator: "\n").first { $0.contains("sip: sip-1 left room") } ?? ""
            print(left)
            #expect(left.contains("the phone saw 0 of") && left.contains("round trip"), "\(left)")
            #expect((relay.stdout + relay.stderr).contains("joined room \(room) (PCMU)"))

            let (intoRoom, intoRoomLine, toPhone, toPhoneLine) = try scoreBothWays(member: recording, phone: config)
            let received = (member.stdout + member.stderr).split(separator: "\n")
                .last { $0.contains("received ssrc") }.map(String.init) ?? "no receive summary"
            print("SIP gateway, G.711 µ-law: phone → room PESQ-NB \(intoRoomLine); room → phone \(toPhoneLine); "
                  + received)
            #expect(intoRoom >= 3.5, "phone → room: \(intoRoomLine); \(received)")
            #expect(toPhone >= 3.5, "room → phone: \(toPhoneLine)")

            // tshark reads the SIP dialog and the phone leg's RTP both ways as well-formed.
            dump.signal(SIGKILL)  // the runner's threads block SIGINT/SIGTERM, which tcpdump inherits (CaptureTests)
            dump.wait(seconds: 5)
            let tshark = try Spawned(.tshark, ["-n", "-r", pcap, "--enable-heuristic", "rtp_udp", "-T", "fields",
                                               "-e", "sip.Method", "-e", "sip.Status-Code", "-e", "rtp.p_type",
                                               "-e", "_ws.malformed", "-e", "rtcp.pt", "-e", "rtcp.sdes.text",
                                               "-Y", "sip or rtp or rtcp or _ws.malformed"])
            #expect(tshark.wait(seconds: 60) == 0, "\(tshark.stderr)")
            let rows = tshark.stdout.split(separator: "\n")
                .map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
            let methods = rows.compactMap { $0.first.map(String.init) }.filter { !$0.isEmpty }
            let statuses = rows.compactMap { $0.count > 1 ? String($0[1]) : nil }.filter { !$0.isEmpty }
            let pcmu = rows.filter { $0.count > 2 && $0[2] == "0" }.count
            let malformed = rows.filter { $0.count > 3 && !$0[3].isEmpty }.count
            // RTCP both ways (RFC 3550): the gateway's compounds carry its CNAME, IDENTITY@parley.
            let rtcp = rows.filter { $0.count > 4 && !$0[4].isEmpty }
            let gatewayRTCP = rtcp.filter { $0.count > 5 && $0[5].contains("@parley") }.count
            print("tshark: SIP \(methods) answered \(statuses); \(pcmu) PCMU packets; \(malformed) malformed; RTCP "
                  + "compounds \(rtcp.count), the gateway's \(gatewayRTCP)")
            #expect(gatewayRTCP >= 1 && rtcp.count > gatewayRTCP, "RTCP: \(rtcp)")
            #expect(methods.contains("INVITE") && methods.contains("ACK") && methods.contains("BYE"), "\(methods)")
            #expect(statuses.filter { $0 == "200" }.count >= 2, "\(statuses)")  // the INVITE's and the BYE's
            #expect(pcmu >= 800, "PCMU packets both ways over 11 s: \(pcmu)")
            #expect(malformed == 0)
        }

        @Test("Opus straight through (baresip offering only Opus): PESQ-NB ≥ 4.0 each way")
        func opusStraightThrough() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let (speech48, _) = try speech()
            let stereo = dir + "/speech48-stereo.wav"
            let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "error", "-y", "-i", speech48, "-ac", "2",
                                               stereo])
            #expect(ffmpeg.wait(seconds: 20) == 0, "\(ffmpeg.stderr)")
            let (relay, server, sipPort) = try relay(trunk: "local=127.0.0.0/8")
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = try room(relay)
            // The member holds 40 ms: what is scored is the gateway passing Opus through, not how the member's adaptive
            // buffer meets baresip's own send timing. On a loaded machine baresip's packets bunch by 10-30 ms, and the
            // buffer, adapting at a 5-10 ms target, stretched speech: 3.98 and 4.02 where 4.38 is usual (one
            // acceleration, five expansions). A gateway fault (a lost or reordered packet) still shows as concealment.
            let recording = dir + "/member.wav"
            let member = try Spawned("parley", ["join", room, "--identity", "member", "--server", server,
                                                "--mode", "forward", "--input", speech48, "--output", recording,
                                                "--no-tui", "--duration", "16", "--verbose", "--min-delay", "40"])
            #expect(member.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(member.stdout)\(member.stderr)")
            let config = try baresipConfig(in: dir, sipPort: freeUDPPort(), source: stereo, opus: true)
            let phone = try Spawned(.baresip, ["-f", config, "-e", "/dial sip:room-\(room)@127.0.0.1:\(sipPort)",
                                               "-t", "12"])
            #expect(phone.wait(seconds: 25) == 0, "\(phone.stderr)")
            #expect(member.wait(seconds: 15) == 0, "\(member.stderr)")
            #expect((phone.stdout + phone.stderr).contains("Call established"), "\(phone.stdout.suffix(2_000))")
            #expect(relay.stderr.contains("joined room \(room) (opus)"), "\(relay.stderr.suffix(2_000))")
            let (intoRoom, intoRoomLine) = try pesqWB(reference: dir + "/reference48.wav", recording: recording,
                                                      skip: 0, narrowband: true)
            let dumps = try FileManager.default.contentsOfDirectory(atPath: config + "/dumps")
            let heard = try #require(dumps.first { $0.hasSuffix("-dec.wav") }, "sndfile wrote \(dumps)")
            let (toPhone, toPhoneLine) = try pesqWB(reference: dir + "/reference48.wav",
                                                    recording: config + "/dumps/" + heard, skip: 0, narrowband: true)
            let received = (member.stdout + member.stderr).split(separator: "\n")
                .last { $0.contains("received ssrc") }.map(String.init) ?? "no receive summary"
            print("SIP gateway, Opus straight through: phone → room PESQ-NB \(intoRoomLine); "
                  + "room → phone \(toPhoneLine); " + received)
            #expect(intoRoom >= 4.0, "phone → room: \(intoRoomLine); \(received)")
            #expect(toPhone >= 4.0, "room → phone: \(toPhoneLine)")
        }

        @Test("a backend has the relay call a phone into a room: speech both ways, PESQ-NB ≥ 3.5; no trunk out is 403")
        func callOut() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let (speech48, speech8) = try speech()
            let (relay, server, _) = try relay(trunk: "local=127.0.0.0/8")
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = try room(relay)
            // The phone: baresip answering by itself, its microphone the 8 kHz speech.
            let phonePort = freeUDPPort()
            let config = try baresipConfig(in: dir, sipPort: phonePort, source: speech8, autoAnswer: true)
            let phone = try Spawned(.baresip, ["-f", config, "-t", "16"])
            #expect(phone.waitFor(seconds: 10) { $0.contains("baresip is ready") }, "\(phone.stdout)\(phone.stderr)")
            let recording = dir + "/member.wav"
            let member = try Spawned("parley", ["join", room, "--identity", "member", "--server", server,
                                                "--mode", "forward", "--input", speech48, "--output", recording,
                                                "--no-tui", "--duration", "15", "--verbose"])
            #expect(member.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(member.stdout)\(member.stderr)")
            let placed = try curl("POST", base + "/v1/rooms/\(room)/sip-calls", token: admin,
                                  body: #"{"to":"sip:phone@127.0.0.1:\#(phonePort)","name":"Desk phone"}"#)
            #expect(placed.status == 202, "\(placed.body)")
            let identity = try #require(jsonObject(placed.body)["identity"] as? String, "\(placed.body)")
            #expect(jsonObject(placed.body)["trunk"] as? String == "local")
            let answered = "sip: \(identity) (sip:phone@127.0.0.1:\(phonePort)) answered and joined room \(room)"
            #expect(relay.waitForStderr(seconds: 10) { $0.contains(answered) },
                    "\(relay.stderr.suffix(2_000))")
            // Nowhere a trunk lets calls out to: refused before anything is sent.
            let refused = try curl("POST", base + "/v1/rooms/\(room)/sip-calls", token: admin,
                                   body: #"{"to":"sip:x@192.0.2.9"}"#)
            #expect(refused.status == 403 && refused.body.contains("no_trunk"), "\(refused.status) \(refused.body)")
            #expect(member.wait(seconds: 20) == 0, "\(member.stderr)")
            #expect(phone.wait(seconds: 20) == 0, "\(phone.stderr)")
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("sip: \(identity) left room \(room): BYE") },
                    "\(relay.stderr.suffix(2_000))")

            let (intoRoom, intoRoomLine, toPhone, toPhoneLine) = try scoreBothWays(member: recording, phone: config)
            print("SIP call out, G.711 µ-law: phone → room PESQ-NB \(intoRoomLine); room → phone \(toPhoneLine)")
            #expect(intoRoom >= 3.5, "phone → room: \(intoRoomLine)")
            #expect(toPhone >= 3.5, "room → phone: \(toPhoneLine)")
        }

        @Test("SIPp: 50 calls at once into a room with RTP from a pcap, all answered and ended cleanly")
        func sippFiftyCalls() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let (relay, server, sipPort) = try relay(trunk: "local=127.0.0.0/8")
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "sipp-\(UInt32.random(in: 0...UInt32.max))"
            let made = try curl("POST", base + "/v1/rooms", token: admin,
                                body: #"{"name":"\#(room)","mode":"forward","max_members":60}"#)
            #expect(made.status == 201, "\(made.body)")
            let listener = try Spawned("parley", ["join", room, "--identity", "ear", "--server", server,
                                                  "--listen-only",
                                                  "--mode", "forward", "--output", dir + "/ear.wav", "--no-tui",
                                                  "--duration", "14", "--verbose"])
            #expect(listener.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(listener.stderr)")
            // SIPp's uac_pcap: INVITE (PCMA), ACK, 8 s of g711a.pcap (30 ms packets) and a DTMF pcap, BYE. Its pcaps
            // are named relative to the working directory: the scenario is written out with Debian's paths.
            let dumpScenario = try Spawned(.sipp, ["-sd", "uac_pcap"])
            dumpScenario.wait(seconds: 10)  // exits 99 after writing the scenario
            #expect(dumpScenario.stdout.contains("play_pcap_audio=\"pcap/g711a.pcap\""), "\(dumpScenario.stdout)")
            let scenario = dir + "/uac_pcap.xml"
            try dumpScenario.stdout.replacingOccurrences(of: "\"pcap/", with: "\"/usr/share/sip-tester/")
                .write(toFile: scenario, atomically: true, encoding: .utf8)
            let media = try freeUDPPorts(count: 220)
            let sipp = try Spawned(.sipp, ["-sf", scenario, "-s", "room-\(room)", "127.0.0.1:\(sipPort)",
                                           "-i", "127.0.0.1", "-p", "\(freeUDPPort())", "-mp", "\(media)",
                                           "-m", "50", "-l", "50", "-r", "50", "-nostdin", "-trace_screen",
                                           "-screen_file", dir + "/sipp.txt", "-timeout", "40s"])
            let status = sipp.wait(seconds: 60)
            let screen = (try? String(contentsOfFile: dir + "/sipp.txt", encoding: .utf8)) ?? sipp.stdout
            #expect(status == 0, "sipp exit \(status): \(screen.suffix(3_000))")
            #expect(screen.contains("Successful call        |        0                  |       50"),
                    "\(screen.suffix(3_000))")
            let ended = "left room \(room): BYE"
            #expect(relay.waitForStderr(seconds: 5) { $0.components(separatedBy: ended).count == 51 },
                    "\(relay.stderr.suffix(3_000))")
            let joined = relay.stderr.components(separatedBy: "joined room \(room) (PCMA)").count - 1
            #expect(joined == 50, "\(joined) calls joined")
            #expect(listener.wait(seconds: 20) == 0, "\(listener.stderr)")
            // The room's listener heard them: sound (the pcap's) for seconds, not silence.
            let samples = try WAVReader(path: dir + "/ear.wav").readAllMono48k()
            let loudSeconds = stride(from: 0, to: samples.count - 48_000, by: 48_000).filter { start in
                let rms = (samples[start..<start + 48_000].reduce(0.0) { $0 + Double($1) * Double($1) } / 48_000)
                    .squareRoot()
                return rms > 300
            }.count
            print("SIPp: 50 calls; the room's listener heard sound in \(loudSeconds) seconds of its recording")
            #expect(loudSeconds >= 4)
        }

        @Test("refused: a caller outside every trunk (403), a room that does not exist (404)",
              arguments: [("far=203.0.113.0/24", true, "403 Forbidden"), ("local=127.0.0.0/8", false, "404 Not Found")])
        func refused(trunk: String, realRoom: Bool, answer: String) throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let tone = dir + "/tone8.wav"
            try phoneTone(tone, seconds: 3)
            let (relay, _, sipPort) = try relay(trunk: trunk)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = realRoom ? try room(relay) : "nowhere"
            let config = try baresipConfig(in: dir, sipPort: freeUDPPort(), source: tone)
            let phone = try Spawned(.baresip, ["-f", config, "-e", "/dial sip:room-\(room)@127.0.0.1:\(sipPort)",
                                               "-t", "3"])
            #expect(phone.wait(seconds: 15) == 0, "\(phone.stderr)")
            let phoneSaid = phone.stdout + phone.stderr
            #expect(phoneSaid.contains("session closed: \(answer)"), "\(phoneSaid.suffix(2_000))")
            #expect(!phoneSaid.contains("Call established"))
            let relaySaid = relay.stdout + relay.stderr
            #expect(relaySaid.contains(realRoom ? "sip: 403 to an INVITE from 127.0.0.1:" : "sip: 404 Not Found"),
                    "\(relaySaid)")
            #expect(!relaySaid.contains("endpoint sip-"), "a refused call became a member: \(relaySaid)")
            // Counted on /metrics: a toll-fraud attempt, or a refusal of another kind.
            let metrics = try curl("GET", try #require(httpBase(of: relay)) + "/metrics").body
            let counted = realRoom ? "parley_sip_refused_outside_trunks_total 1\n"
                : "parley_sip_refused_other_total 1\n"
            let sipLines = metrics.split(separator: "\n").filter { $0.hasPrefix("parley_sip") }
            #expect(metrics.contains(counted), "\(sipLines)")
        }
    }
}
