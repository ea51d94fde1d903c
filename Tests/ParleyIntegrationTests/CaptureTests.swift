import Foundation
import ParleyMedia
import ParleyWire
import Testing

/// What someone on the path sees: a loopback capture (the real tcpdump) of a join, a text, speech and a call through a
/// real relay. Encrypted (the default) it holds none of the token, the room name, the identities or the text, and
/// its RTP payloads decode to nothing like the speech; the same run in cleartext (`--allow-cleartext`,
/// `--cleartext`) shows every one of them, which is what makes the first half a test.
extension ProcessTests {
    @Suite("A capture on the path: encrypted, nothing readable; cleartext, everything")
    struct CaptureTests {
        /// The UDP payloads of a pcap file (link types Ethernet (1) and Linux cooked (113), IPv4).
        static func udpPayloads(pcap: [UInt8]) -> [[UInt8]] {
            guard pcap.count >= 24 else { return [] }
            let little = pcap[0] == 0xD4 && pcap[1] == 0xC3
            func u32(_ i: Int) -> Int {
                let b = pcap[i..<(i + 4)].map(Int.init)
                return little ? b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24 : b[3] | b[2] << 8 | b[1] << 16 | b[0] << 24
            }
            let linkType = u32(20)
            let linkHeader = linkType == 113 ? 16 : 14
            var out: [[UInt8]] = []
            var i = 24
            while i + 16 <= pcap.count {
                let captured = u32(i + 8)
                let frame = i + 16
                i = frame + captured
                guard i <= pcap.count, captured > linkHeader + 28 else { continue }
                let ip = frame + linkHeader
                guard pcap[ip] >> 4 == 4, pcap[ip + 9] == 17 else { continue }
                let udp = ip + Int(pcap[ip] & 0x0F) * 4
                let length = Int(pcap[udp + 4]) << 8 | Int(pcap[udp + 5])
                guard length >= 8, udp + length <= i else { continue }
                out.append(Array(pcap[(udp + 8)..<(udp + length)]))
            }
            return out
        }

        static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
            guard !needle.isEmpty, haystack.count >= needle.count else { return false }
            for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
                if Array(haystack[i..<(i + needle.count)]) == needle { return true }
            }
            return false
        }

        /// Decodes the capture's RTP with Opus as a listener on the path would: one decoder per SSRC, each packet once
        /// (the uplink and forwarded copies of a packet share SSRC and sequence number; RED: its primary). Returns
        /// each stream's share of `frequency` (the best of them), how many payloads libopus refused, and how many
        /// packets there were.
        static func decodeRTP(_ datagrams: [[UInt8]], frequency: Double) throws -> (bestShare: Double, refused: Int, packets: Int) {
            var decoders: [UInt32: OpusDecoder] = [:], samples: [UInt32: [Int16]] = [:], seen = Set<UInt64>()
            var refused = 0, packets = 0
            var pcm = [Int16](repeating: 0, count: 5760)
            for d in datagrams where d.count > 12 && d[0] & 0xC0 == 0x80 && !(200...207).contains(d[1]) {
                try d.withUnsafeBytes { raw in
                    guard let view = try? RTPPacketView(parsing: raw),
                          seen.insert(UInt64(view.ssrc) << 16 | UInt64(view.sequenceNumber)).inserted else { return }
                    packets += 1
                    if decoders[view.ssrc] == nil { decoders[view.ssrc] = try OpusDecoder(sampleRate: 48_000, channels: 1) }
                    let decoder = decoders[view.ssrc]!
                    // The primary frame of an RFC 2198 RED packet (a sender adds earlier frames where its path shows
                    // loss, as a loaded machine's loopback may: one full run saw 216 of 353 packets refused).
                    let frame = RedundantFrames.unpack(view, redPayloadType: RedundantAudio.defaultPayloadType,
                                                       frameSamples: 960) { _, _, _ in } ?? view.payload
                    let n = pcm.withUnsafeMutableBufferPointer { try? decoder.decode(frame, into: $0) }
                    if let n { samples[view.ssrc, default: []] += pcm.prefix(n) } else { refused += 1 }
                }
            }
            let best = samples.values.filter { $0.count >= 48_000 }.map { goertzelShare($0[...], frequency: frequency) }.max() ?? 0
            return (best, refused, packets)
        }

        /// Runs a join (with a text) and a call through a relay under tcpdump; returns the captured UDP payloads and
        /// the secrets that went through them.
        func capture(cleartext: Bool) throws -> (datagrams: [[UInt8]], secrets: [(String, String)]) {
            // One worker: its one port carries everything (with an ephemeral public port, further workers' ports are
            // ephemeral too, not the ports after it).
            let (relay, server) = try startRelay(workers: 1, environment: cleartext ? ["PARLEY_ALLOW_CLEARTEXT": "true"] : [:])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let port = try #require(server.split(separator: ":").last.flatMap { Int($0) })
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("parley-capture-\(UInt32.random(in: 0...UInt32.max)).pcap")
            defer { try? FileManager.default.removeItem(at: file) }
            let dump = try Spawned(.tcpdump, ["-i", "lo", "-n", "-U", "--immediate-mode", "-w", file.path, "udp port \(port)"])
            #expect(dump.waitForStderr(seconds: 10) { $0.contains("listening on") }, "\(dump.stderr)")

            let tag = String(UInt32.random(in: 0...UInt32.max), radix: 36)
            let room = "garden-\(tag)", alice = "alice\(tag)", bob = "bob\(tag)", carol = "carol\(tag)", dave = "dave\(tag)"
            let text = "the password is swordfish \(tag)"
            let mode = cleartext ? ["--cleartext"] : []
            let minted = try Spawned("parley", ["token", "--identity", alice, "--room", room])
            #expect(minted.wait(seconds: 5) == 0)
            let token = minted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let listener = try Spawned("parley", ["join", room, "--identity", bob, "--server", server, "--listen-only", "--no-playback",
                                                  "--no-tui", "--duration", "5"] + mode)
            #expect(listener.waitFor(seconds: 5) { $0.contains("joined") }, "\(listener.stdout)\(listener.stderr)")
            let speaker = try Spawned("parley", ["join", room, "--identity", alice, "--token", token, "--server", server, "--tone", "440",
                                                 "--no-playback", "--no-tui", "--say", text, "--duration", "3"] + mode)
            let callee = try Spawned("parley", ["listen", "--identity", carol, "--server", server, "--auto-answer", "--tone", "700",
                                                "--no-playback", "--no-tui", "--duration", "6"] + mode)
            #expect(callee.waitFor(seconds: 5) { $0.contains("waiting for calls") }, "\(callee.stdout)\(callee.stderr)")
            let caller = try Spawned("parley", ["call", carol, "--identity", dave, "--server", server, "--hangup-after", "2", "--tone", "700",
                                                "--no-playback", "--no-tui"] + mode)
            #expect(speaker.wait(seconds: 10) == 0, "\(speaker.stderr)")
            #expect(caller.wait(seconds: 10) == 0, "\(caller.stdout)\(caller.stderr)")
            #expect(listener.wait(seconds: 10) == 0)
            #expect(listener.stdout.contains("text from \(alice): \(text)"), "\(listener.stdout)")
            callee.signal(SIGINT)
            callee.wait(seconds: 5)
            // The test runner's threads block SIGINT and SIGTERM, and tcpdump inherits the mask: it only dies to
            // SIGKILL. With --immediate-mode and -U every packet is written as it comes, so nothing is lost.
            Thread.sleep(forTimeInterval: 1)
            dump.signal(SIGKILL)
            dump.wait(seconds: 5)
            let pcap = try [UInt8](Data(contentsOf: file))
            let secrets = [("the token", token), ("the token's signature", String(token.split(separator: ".").last ?? "")),
                           ("the room name", room), ("an identity", alice), ("an identity", bob), ("a caller", dave),
                           ("a callee", carol), ("the text", text)]
            return (Self.udpPayloads(pcap: pcap), secrets)
        }

        @Test("encrypted: no token, room, identity or text in any datagram, and no RTP payload decodes to the speech")
        func encryptedCaptureHoldsNothing() throws {
            let (datagrams, secrets) = try capture(cleartext: false)
            #expect(datagrams.count > 200, "the capture holds \(datagrams.count) datagrams")
            for (what, secret) in secrets {
                let found = datagrams.filter { Self.contains($0, Array(secret.utf8)) }.count
                #expect(found == 0, "\(what) is in \(found) datagrams")
            }
            let decoded = try Self.decodeRTP(datagrams, frequency: 440)
            #expect(decoded.packets > 100)
            #expect(decoded.bestShare < 0.05,
                    "440 Hz is \(decoded.bestShare) of a stream the capture's payloads decode to (\(decoded.refused) of \(decoded.packets) refused)")
        }

        @Test("cleartext (debugging): the same capture shows the token, the names, the text and the speech")
        func cleartextCaptureShowsEverything() throws {
            let (datagrams, secrets) = try capture(cleartext: true)
            for (what, secret) in secrets {
                #expect(datagrams.contains { Self.contains($0, Array(secret.utf8)) }, "\(what) not found in the cleartext capture of \(datagrams.count) datagrams")
            }
            let decoded = try Self.decodeRTP(datagrams, frequency: 440)
            print("cleartext capture: \(decoded.packets) RTP packets, \(decoded.refused) refused by libopus, 440 Hz "
                  + "\(decoded.bestShare) of the best stream")
            #expect(decoded.bestShare > 0.5, "440 Hz is only \(decoded.bestShare) of the best decoded stream (\(decoded.packets) packets, \(decoded.refused) refused)")
        }
    }
}
