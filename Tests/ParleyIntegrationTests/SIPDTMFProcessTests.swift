import Foundation
import Testing

extension ProcessTests {
    /// Issue 40's "DTMF as RFC 4733 telephone-events both ways": keys a phone in a room presses reach the room's event
    /// stream; digits a backend sends (`POST /v1/rooms/NAME/sip-calls/IDENTITY/dtmf`) reach the phone.
    @Suite("SIP gateway: DTMF both ways with a phone in a room")
    struct SIPDTMFProcessTests {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-sipdtmf-\(UInt32.random(in: 0...UInt32.max))").path
        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        @Test("baresip's keys are dtmf events of the room; the API's digits reach baresip (tshark reads them)")
        func bothWays() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let tone = dir + "/tone8.wav"
            try phoneTone(tone, seconds: 20)
            let (relay, server, sipPort, base) = try startSIPRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "dtmf-\(UInt32.random(in: 0...UInt32.max))"
            let made = try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"\#(room)"}"#)
            #expect(made.status == 201, "\(made.body)")
            let events = try Spawned(.curl, ["-sN", "--max-time", "14", "-H", "Authorization: Bearer \(admin)",
                                             base + "/v1/rooms/\(room)/events"])
            // The phone leg on the wire (not the relay's own port): what the gateway sends baresip.
            let relayPort = try #require(server.split(separator: ":").last.map(String.init))
            let pcap = dir + "/dtmf.pcap"
            let dump = try Spawned(.tcpdump, ["-i", "lo", "-n", "-U", "--immediate-mode", "-w", pcap,
                                              "udp and not port \(relayPort) and not port \(sipPort)"])
            #expect(dump.waitForStderr(seconds: 10) { $0.contains("listening on") }, "\(dump.stderr)")

            // Nobody else is in the room: what the phone hears is the gateway's silence fill, which also hands
            // baresip the last packets of an event (its jitter buffer gives them on only when later ones come).
            let config = try baresipConfig(in: dir, sipPort: freeUDPPort(), source: tone, console: true)
            let phone = try Spawned(.baresip, ["-f", config, "-t", "12"], input: true)
            #expect(phone.waitFor(seconds: 10) { $0.contains("baresip is ready") }, "\(phone.stdout)\(phone.stderr)")
            phone.send("/dial sip:room-\(room)@127.0.0.1:\(sipPort)\n")
            #expect(phone.waitFor(seconds: 5) { $0.contains("Call established") }, "\(phone.stdout.suffix(2_000))")
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("joined room \(room) (PCMU)") },
                    "\(relay.stderr.suffix(2_000))")
            for d in "42#" {
                phone.send(String(d))
                Thread.sleep(forTimeInterval: 0.5)
            }
            // The room's readers see each key once, as the phone's member.
            #expect(events.waitFor(seconds: 5) { $0.components(separatedBy: #""type":"dtmf""#).count >= 4 },
                    "\(events.stdout)")
            let keyed = events.stdout.split(separator: "\n").filter { $0.contains(#""type":"dtmf""#) }
            print("the room's events: \(keyed.first ?? "none")")
            #expect(keyed.count == 3 && keyed.allSatisfy { $0.contains(#""identity":"sip-1""#) }, "\(keyed)")
            #expect(["4", "2", "#"].allSatisfy { d in keyed.contains { $0.contains(##""detail":"\##(d)""##) } })
            #expect(!relay.stderr.contains("42#"), "keys are not logged")

            let url = base + "/v1/rooms/\(room)/sip-calls/sip-1/dtmf"
            let sent = try curl("POST", url, token: admin, body: #"{"digits":"1*9"}"#)
            #expect(sent.status == 202, "\(sent.body)")
            #expect(try curl("POST", url, token: admin, body: #"{"digits":"12x"}"#).status == 400)
            #expect(try curl("POST", base + "/v1/rooms/\(room)/sip-calls/sip-9/dtmf", token: admin,
                             body: #"{"digits":"1"}"#).status == 404)
            // baresip says each event it receives, its start and its end.
            let heard = ["1", "*", "9"].map { "received event: '\($0)' (end=1)" }
            #expect(phone.waitFor(seconds: 5) { out in heard.allSatisfy { out.contains($0) } },
                    "\(phone.stdout.suffix(1_500))")
            phone.send("/hangup\n")
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("left room \(room)") },
                    "\(relay.stderr.suffix(2_000))")
            phone.closeInput()
            #expect(phone.wait(seconds: 20) == 0)

            dump.signal(SIGKILL)
            dump.wait(seconds: 5)
            let tshark = try Spawned(.tshark, ["-n", "-r", pcap, "--enable-heuristic", "rtp_udp",
                                               "-o", "rtpevent.event_payload_type_value:101", "-T", "fields",
                                               "-e", "ip.src", "-e", "udp.dstport", "-e", "rtpevent.event_id",
                                               "-e", "rtpevent.end_of_event", "-e", "rtp.marker", "-Y", "rtpevent"])
            #expect(tshark.wait(seconds: 60) == 0, "\(tshark.stderr)")
            let rows = tshark.stdout.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
            print("tshark: \(rows.count) telephone-event packets")
            // Starts (marker) by destination port: the phone's keys went to the gateway, the API's to the phone.
            let starts = rows.filter { $0.count >= 5 && $0[4] == "1" }
            let ports = Set(starts.map { $0[1] })
            let byPort = Dictionary(grouping: starts, by: { $0[1] }).mapValues { $0.map { $0[2] } }
            #expect(ports.count == 2, "\(rows)")
            #expect(byPort.values.contains(["4", "2", "11"]) && byPort.values.contains(["1", "10", "9"]), "\(byPort)")
            // The stream to the phone never stopped though the room was silent: PCMU every 20 ms, the longest gap.
            let toPhone = try #require(byPort.first { $0.value == ["1", "10", "9"] }?.key)
            let audio = try Spawned(.tshark, ["-n", "-r", pcap, "--enable-heuristic", "rtp_udp", "-T", "fields",
                                              "-e", "frame.time_relative", "-Y",
                                              "rtp.p_type == 0 and udp.dstport == \(toPhone)"])
            #expect(audio.wait(seconds: 60) == 0, "\(audio.stderr)")
            let times = audio.stdout.split(separator: "\n").compactMap { Double($0) }
            let gap = zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? 99
            let span = (times.last ?? 0) - (times.first ?? 0)
            print("to the phone: \(times.count) PCMU packets over \(Int(span * 1_000)) ms, "
                  + "longest gap \(Int(gap * 1_000)) ms")
            #expect(span > 1 && Double(times.count) >= span / 0.02 * 0.9 && gap < 0.1,
                    "\(times.count) packets over \(span) s, longest gap \(gap) s")
        }
    }
}
