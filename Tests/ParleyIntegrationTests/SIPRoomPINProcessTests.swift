import Foundation
import Testing

extension ProcessTests {
    /// A room with a PIN (`POST /v1/rooms {sip_pin}`): a phone dialling in is answered but is no member until it keys
    /// the PIN as RFC 4733 telephone-events; a wrong try is counted, the right one joins it.
    @Suite("SIP gateway: a room's PIN keyed by DTMF")
    struct SIPRoomPINProcessTests {
        let dir = FileManager.default.temporaryDirectory
            .appendingPathComponent("parley-sippin-\(UInt32.random(in: 0...UInt32.max))").path
        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        func members(_ base: String, _ room: String, token: String) throws -> Int {
            let rooms = try curl("GET", base + "/v1/rooms", token: token).body
            let list = jsonObject(rooms)["rooms"] as? [[String: Any]] ?? []
            return list.first { $0["name"] as? String == room }?["members"] as? Int ?? -1
        }

        @Test("answered, no member until the PIN; a wrong try counted, the right one joins; a bad PIN is 400")
        func pin() throws {
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let tone = dir + "/tone8.wav"
            try phoneTone(tone, seconds: 20)
            let (relay, _, sipPort, base) = try startSIPRelay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let admin = try mint(["--admin", "--identity", "ops"])
            let bad = try curl("POST", base + "/v1/rooms", token: admin, body: #"{"name":"x","sip_pin":"12a4"}"#)
            #expect(bad.status == 400, "\(bad.body)")
            let room = "pin-\(UInt32.random(in: 0...UInt32.max))"
            let made = try curl("POST", base + "/v1/rooms", token: admin,
                                body: #"{"name":"\#(room)","mode":"forward","sip_pin":"2468"}"#)
            #expect(made.status == 201, "\(made.body)")
            #expect(!made.body.contains("2468"), "the PIN is not shown: \(made.body)")

            let config = try baresipConfig(in: dir, sipPort: freeUDPPort(), source: tone, console: true)
            let phone = try Spawned(.baresip, ["-f", config, "-t", "14"], input: true)
            #expect(phone.waitFor(seconds: 10) { $0.contains("baresip is ready") }, "\(phone.stdout)\(phone.stderr)")
            phone.send("/dial sip:room-\(room)@127.0.0.1:\(sipPort)\n")
            #expect(phone.waitFor(seconds: 5) { $0.contains("Call established") }, "\(phone.stdout.suffix(2_000))")
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("for room \(room): waiting for its PIN") },
                    "\(relay.stderr.suffix(2_000))")
            Thread.sleep(forTimeInterval: 1)
            #expect(try members(base, room, token: admin) == 0, "a member before its PIN")
            func key(_ digits: String) {
                for d in digits {
                    phone.send(String(d))
                    Thread.sleep(forTimeInterval: 0.5)
                }
            }
            key("99#")
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("a wrong PIN for room \(room) (1 of 3)") },
                    "\(relay.stderr.suffix(2_000))")
            #expect(try members(base, room, token: admin) == 0)
            key("2468")
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("keyed the PIN and joined room \(room) (PCMU)") },
                    "\(relay.stderr.suffix(2_000))")
            Thread.sleep(forTimeInterval: 0.5)  // the API's view is at most 200 ms old
            #expect(try members(base, room, token: admin) == 1)
            phone.send("/hangup\n")
            #expect(relay.waitForStderr(seconds: 5) { $0.contains("left room \(room): BYE") },
                    "\(relay.stderr.suffix(2_000))")
            phone.closeInput()
            #expect(phone.wait(seconds: 20) == 0)
        }
    }
}
