import Foundation
import Testing

extension ProcessTests {
    /// SDES-SRTP (RFC 4568) with a phone that offers RTP/SAVP: baresip requiring SRTP (`mediaenc=srtp-mand`) dials into
    /// a room; both ways are heard, so each side decrypts the other's packets.
    @Suite("SIP gateway: SDES-SRTP with a phone that asks for it")
    struct SIPSRTPProcessTests {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-sipsrtp-\(UInt32.random(in: 0...UInt32.max))").path
        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        @Test("baresip with SRTP required: answered RTP/SAVP, speech both ways PESQ-NB ≥ 3.5")
        func srtpBothWays() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let speech48 = dir + "/speech48.wav", speech8 = dir + "/speech8.wav"
            try espeakSpeech(SkewedSenderProcessTests.sentences, path: speech48)
            for (input, output, arguments) in [(speech48, speech8, ["-ar", "8000"]),
                                               (speech48, dir + "/reference8.wav",
                                                ["-ss", "2", "-to", "8", "-ar", "8000"])] {
                let ffmpeg = try Spawned(.ffmpeg, ["-hide_banner", "-loglevel", "error", "-y", "-i", input] + arguments
                                         + ["-ac", "1", "-c:a", "pcm_s16le", output])
                #expect(ffmpeg.wait(seconds: 20) == 0, "\(ffmpeg.stderr)")
            }
            let (relay, server, sipPort, base) = try startSIPRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let admin = try mint(["--admin", "--identity", "ops"])
            let room = "srtp-\(UInt32.random(in: 0...UInt32.max))"
            let made = try curl("POST", base + "/v1/rooms", token: admin,
                                body: #"{"name":"\#(room)","mode":"forward"}"#)
            #expect(made.status == 201, "\(made.body)")
            let recording = dir + "/member.wav"
            let member = try Spawned("parley", ["join", room, "--identity", "member", "--server", server,
                                                "--mode", "forward", "--input", speech48, "--output", recording,
                                                "--no-tui", "--duration", "16"])
            #expect(member.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(member.stdout)\(member.stderr)")
            let config = try baresipConfig(in: dir, sipPort: freeUDPPort(), source: speech8, srtp: true)
            let phone = try Spawned(.baresip, ["-f", config, "-e", "/dial sip:room-\(room)@127.0.0.1:\(sipPort)",
                                               "-t", "12"])
            #expect(phone.wait(seconds: 25) == 0, "\(phone.stderr)")
            #expect(member.wait(seconds: 15) == 0, "\(member.stderr)")
            let phoneSaid = phone.stdout + phone.stderr
            #expect(phoneSaid.contains("Call established"), "\(phoneSaid.suffix(2_000))")
            #expect(relay.stderr.contains("joined room \(room) (PCMU) with SRTP"), "\(relay.stderr.suffix(2_000))")
            let (intoRoom, intoRoomLine) = try pesqWB(reference: dir + "/reference8.wav", recording: recording,
                                                      skip: 0, narrowband: true)
            let dumps = try FileManager.default.contentsOfDirectory(atPath: config + "/dumps")
            let heard = try #require(dumps.first { $0.hasSuffix("-dec.wav") }, "sndfile wrote \(dumps)")
            let (toPhone, toPhoneLine) = try pesqWB(reference: dir + "/reference8.wav",
                                                    recording: config + "/dumps/" + heard, skip: 0, narrowband: true)
            print("SIP gateway with SDES-SRTP: phone → room PESQ-NB \(intoRoomLine); room → phone \(toPhoneLine)")
            #expect(intoRoom >= 3.5, "phone → room: \(intoRoomLine)")
            #expect(toPhone >= 3.5, "room → phone: \(toPhoneLine)")
            // RTCP as SRTCP both ways: the phone's reports decrypted and read (a round trip from its block on the
            // gateway's stream), the gateway's encrypted (baresip drops what fails its check, and reports nothing).
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("left room \(room)") },
                    "\(relay.stderr.suffix(2_000))")
            let left = relay.stderr.split(separator: "\n").first { $0.contains("left room \(room)") } ?? ""
            print(left)
            #expect(left.contains("the phone saw 0 of") && left.contains("round trip"), "\(left)")
        }
    }
}
