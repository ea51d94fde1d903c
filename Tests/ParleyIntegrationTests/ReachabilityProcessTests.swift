import Foundation
import ParleyAudioIO
import ParleyWire
import Testing

/// Three network namespaces joined by veth pairs, as a relay on a real server behind a 1:1 NAT meets its users:
///
///     relay ns            nat ns (router)                          client ns
///     10.77.0.2   ──────  10.77.0.1 | 198.51.100.10 (public)  ──── 198.51.100.20
///     2001:db8:77::2 ───  2001:db8:77::1 | 2001:db8:51::1     ──── 2001:db8:51::20
///
/// nftables in the router maps 198.51.100.10 to 10.77.0.2 both ways (DNAT in, SNAT out); IPv6 is routed without NAT.
/// Names carry a random suffix; `remove()` deletes them all (call it in a `defer`), so none is left behind.
final class NATLab {
    let prefix = "pr\(String(UInt16.random(in: 0...UInt16.max), radix: 16))"
    var relay: String { "\(prefix)-relay" }
    var router: String { "\(prefix)-nat" }
    var client: String { "\(prefix)-client" }
    static let relayPrivate = "10.77.0.2", relayPublic = "198.51.100.10", relayIPv6 = "2001:db8:77::2"

    init() throws {
        do {
            try build()
        } catch {
            remove()
            throw error
        }
    }

    private func build() throws {
        let p = prefix
        for ns in [relay, router, client] {
            try Self.ip(["netns", "add", ns])
            try Self.ip(["-n", ns, "link", "set", "lo", "up"])
            // No duplicate address detection: an address (link-local ones too, which neighbour discovery uses) is
            // usable the moment its link is up, not a second or two later.
            try Self.run(.ip, ["netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"])
        }
        try Self.ip(["link", "add", "\(p)r0", "netns", relay, "type", "veth", "peer", "name", "\(p)n0", "netns", router])
        try Self.ip(["link", "add", "\(p)c0", "netns", client, "type", "veth", "peer", "name", "\(p)n1", "netns", router])
        let links: [(String, String, String, String)] = [
            (relay, "\(p)r0", "10.77.0.2/24", "2001:db8:77::2/64"), (router, "\(p)n0", "10.77.0.1/24", "2001:db8:77::1/64"),
            (router, "\(p)n1", "198.51.100.10/24", "2001:db8:51::1/64"), (client, "\(p)c0", "198.51.100.20/24", "2001:db8:51::20/64"),
        ]
        for (ns, link, v4, v6) in links {
            try Self.ip(["-n", ns, "addr", "add", v4, "dev", link])
            try Self.ip(["-n", ns, "-6", "addr", "add", v6, "dev", link, "nodad"])
            try Self.ip(["-n", ns, "link", "set", link, "up"])
        }
        try Self.ip(["-n", relay, "route", "add", "default", "via", "10.77.0.1"])
        try Self.ip(["-n", relay, "-6", "route", "add", "default", "via", "2001:db8:77::1"])
        try Self.ip(["-n", client, "-6", "route", "add", "default", "via", "2001:db8:51::1"])
        try Self.run(.ip, ["netns", "exec", router, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1"])
        let rules = FileManager.default.temporaryDirectory.appendingPathComponent("\(p)-nat.nft").path
        try """
            table ip nat {
              chain pre { type nat hook prerouting priority dstnat; ip daddr 198.51.100.10 dnat to 10.77.0.2; }
              chain post { type nat hook postrouting priority srcnat; ip saddr 10.77.0.2 snat to 198.51.100.10; }
            }

            """.write(toFile: rules, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: rules) }
        try Self.run(.ip, ["netns", "exec", router, try ExternalProgram.nft.url().path, "-f", rules])
    }

    /// Drops every UDP datagram the client namespace sends (a network that lets only TCP out).
    func blockClientUDP() throws {
        try Self.run(.ip, ["netns", "exec", client, try ExternalProgram.nft.url().path,
                           "add table inet fw; add chain inet fw out { type filter hook output priority 0; }; add rule inet fw out meta l4proto udp drop"])
    }

    /// Deletes the namespaces (their veths go with them).
    func remove() {
        for ns in [relay, router, client] { try? Self.ip(["netns", "delete", ns]) }
    }

    /// One of the package's executables, or a Debian program, run inside namespace `ns`.
    func spawn(in ns: String, _ executable: String, _ arguments: [String], environment: [String: String] = [:]) throws -> Spawned {
        try Spawned(.ip, ["netns", "exec", ns, Spawned.binary(executable).path] + arguments, environment: environment)
    }

    func spawn(in ns: String, _ program: ExternalProgram, _ arguments: [String]) throws -> Spawned {
        try Spawned(.ip, ["netns", "exec", ns, try program.url().path] + arguments)
    }

    /// curl from namespace `ns`: (status, body).
    func curl(in ns: String, _ method: String, _ url: String, token: String? = nil, body: String? = nil) throws -> (Int, String) {
        var args = ["netns", "exec", ns, try ExternalProgram.curl.url().path, "-sS", "-g", "-X", method, "-w", "\n%{http_code}",
                    "--max-time", "5", url]
        if let token { args += ["-H", "Authorization: Bearer \(token)"] }
        if let body { args += ["-H", "Content-Type: application/json", "--data-binary", body] }
        let text = try Self.run(.ip, args)
        return (Int(text.split(separator: "\n").last ?? "") ?? 0, text.split(separator: "\n").dropLast().joined(separator: "\n"))
    }

    static func ip(_ arguments: [String]) throws { try run(.ip, arguments) }

    /// Runs a program to its end; throws with its output when it fails.
    @discardableResult
    static func run(_ program: ExternalProgram, _ arguments: [String]) throws -> String {
        let p = Process()
        p.executableURL = try program.url()
        p.arguments = arguments
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard p.terminationStatus == 0 else { throw LabCommandFailed(command: ([program.path] + arguments).joined(separator: " "), output: text) }
        return text
    }
}

struct LabCommandFailed: Error, CustomStringConvertible {
    let command: String, output: String
    var description: String { "\(command) failed: \(output)" }
}

extension ProcessTests {
    @Suite("Reachable from the internet: a relay behind a 1:1 NAT and on IPv6, in network namespaces")
    struct ReachabilityProcessTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-lab-\(UInt32.random(in: 0...UInt32.max))").path

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        /// The relay in the lab's relay namespace: UDP and HTTP on the dual-stack wildcard, announcing its public
        /// IPv4 address and its IPv6 one (or nothing with `announce` nil).
        func relay(_ lab: NATLab, announce: String?, workers: Int = 1) throws -> Spawned {
            var args = ["--udp", "[::]:7400", "--http", "[::]:7480", "--workers", "\(workers)", "--dev", "--state-dir", "\(dir)/state",
                        "--web-root", BrowserTests.webRoot]
            if let announce { args += ["--announce", announce] }
            let relay = try lab.spawn(in: lab.relay, "parley-relay", args)
            guard relay.waitFor(seconds: 10, { $0.contains("ready on udp") }) else { throw RelayDidNotStart(output: relay.stdout + relay.stderr) }
            return relay
        }

        @Test("behind a 1:1 NAT with announce: the ready line and an endpoint answer name the public address; parley joins through the NAT over IPv4 and over IPv6 and hears the other")
        func natAndIPv6() throws {
            let lab = try NATLab()
            defer { lab.remove() }
            let relay = try relay(lab, announce: "\(NATLab.relayPublic),\(NATLab.relayIPv6)")
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            #expect(relay.stdout.contains("ready on udp \(NATLab.relayPublic):7400"), "\(relay.stdout)")

            // The API over the NAT, and over IPv6: an endpoint's answer names the address its tool can reach.
            let admin = try mint(["--identity", "ops", "--room", "lab", "--admin"])
            let created = try lab.curl(in: lab.client, "POST", "http://\(NATLab.relayPublic):7480/v1/rooms", token: admin, body: #"{"name":"lab"}"#)
            #expect(created.0 == 201, "\(created.1)")
            let v4 = try lab.curl(in: lab.client, "POST", "http://\(NATLab.relayPublic):7480/v1/rooms/lab/rtp-endpoints", token: admin,
                                  body: #"{"identity":"tool4","source_address":"198.51.100.20:5000"}"#)
            let v4Answer = try #require(jsonObject(v4.1), "\(v4)")
            #expect(v4Answer["relay_address"] as? String == "\(NATLab.relayPublic):7400", "\(v4.1)")
            #expect((v4Answer["sdp"] as? String ?? "").contains("c=IN IP4 \(NATLab.relayPublic)\r\n"), "\(v4.1)")
            #expect(!v4.1.contains(NATLab.relayPrivate) && !v4.1.contains("127.0.0.1") && !v4.1.contains("0.0.0.0"), "\(v4.1)")
            let v6 = try lab.curl(in: lab.client, "POST", "http://[\(NATLab.relayIPv6)]:7480/v1/rooms/lab/rtp-endpoints", token: admin,
                                  body: #"{"identity":"tool6","source_address":"[2001:db8:51::20]:5000"}"#)
            let v6Answer = try #require(jsonObject(v6.1), "\(v6)")
            #expect(v6Answer["relay_address"] as? String == "[\(NATLab.relayIPv6)]:7400", "\(v6.1)")
            #expect((v6Answer["sdp"] as? String ?? "").contains("c=IN IP6 \(NATLab.relayIPv6)\r\n"), "\(v6.1)")

            // Two members from the public side: one through the NAT over IPv4, one over IPv6.
            let speaker = try lab.spawn(in: lab.client, "parley", ["join", "lab", "--identity", "alice", "--server", "\(NATLab.relayPublic):7400",
                                                                    "--tone", "440", "--no-playback", "--no-tui", "--duration", "6"])
            defer { speaker.signal(SIGTERM); speaker.wait(seconds: 5) }
            let listener = try lab.spawn(in: lab.client, "parley", ["join", "lab", "--identity", "bob", "--server", "[\(NATLab.relayIPv6)]:7400",
                                                                     "--listen-only", "--output", "\(dir)/bob.wav", "--no-tui", "--duration", "4"])
            #expect(listener.wait(seconds: 15) == 0, "\(listener.stdout)\(listener.stderr)")
            #expect(speaker.wait(seconds: 10) == 0, "\(speaker.stdout)\(speaker.stderr)")
            let heard = try WAVReader(path: "\(dir)/bob.wav").readAllMono48k()
            let share = goertzelShare(loudestSecond(heard), frequency: 440)
            #expect(share > 0.5, "bob (IPv6) heard alice (IPv4 through the NAT) with a 440 Hz share of \(share)\n\(listener.stdout)")
        }

        /// Chromium in the client namespace loads the page from `host` (the relay's public IPv4 address or its IPv6
        /// one), speaks a 440 Hz tone through WHIP, and a parley member on the public side hears it.
        @discardableResult
        func browserIsHeard(_ lab: NATLab, relay: Spawned, host: String, recorderOnRelay: Bool = false, query: String = "") throws -> String {
            let room = "web-\(UInt32.random(in: 0...UInt32.max))"
            let recorder = try lab.spawn(in: recorderOnRelay ? lab.relay : lab.client, "parley", [
                "join", room, "--identity", "rec", "--server", recorderOnRelay ? "127.0.0.1:7400" : "\(host):7400",
                "--listen-only", "--output", "\(dir)/heard.wav", "--no-tui", "--duration", "12"])
            defer { recorder.signal(SIGTERM); recorder.wait(seconds: 5) }
            #expect(recorder.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(recorder.stdout)\(recorder.stderr)")
            let token = try mint(["--identity", "web", "--room", room])
            let tone = "\(dir)/tone.wav"
            let writer = try WAVWriter(path: tone)
            let samples = (0..<48_000 * 12).map { Int16(8_000 * sin(2 * Double.pi * 440 * Double($0) / 48_000)) }
            try samples.withUnsafeBufferPointer { try writer.write($0) }
            try writer.finish()
            let browser = try lab.spawn(in: lab.client, .chromium, [
                "--headless=new", "--no-sandbox", "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                "--autoplay-policy=no-user-gesture-required", "--no-first-run", "--user-data-dir=\(dir)/chromium-\(room)",
                "--enable-logging=stderr", "--v=0", "--use-file-for-fake-audio-capture=\(tone)",
                // A page off loopback gets a microphone only in a secure context: the lab serves plain HTTP, as a
                // relay behind a TLS proxy would look from inside; a deployment serves HTTPS.
                "--unsafely-treat-insecure-origin-as-secure=http://\(host):7480",
                // raw=1: the path is under test, not Chromium's voice processing (its gain control reshapes a steady
                // tone for seconds).
                "http://\(host):7480/?room=\(room)&token=\(token)&join=1&report=6&raw=1\(query)",
            ])
            defer { browser.signal(SIGTERM); browser.wait(seconds: 5) }
            #expect(browser.waitForStderr(seconds: 25) { $0.contains("PARLEY RESULT") }, "no result from the page:\n\(browser.stderr.suffix(3000))")
            let line = browser.stderr.split(separator: "\n").first { $0.contains("PARLEY RESULT") } ?? ""
            let page = browser.stderr.split(separator: "\n").filter { $0.contains("PARLEY") }.joined(separator: "\n")
            #expect(line.contains(#""state":"connected""#), "\(host): \(page)\n\(relay.stderr.suffix(2000))")
            #expect(recorder.wait(seconds: 15) == 0, "\(recorder.stderr)")
            let heard = try WAVReader(path: "\(dir)/heard.wav").readAllMono48k()
            let heardTone = toneShares(heard, frequency: 440)
            print("the browser at \(host) was heard at 440 Hz shares \(heardTone.windows) by second")
            #expect(heardTone.clear >= 2, "the browser at \(host) was heard at 440 Hz shares \(heardTone.windows)")
            return page
        }

        @Test("ICE restart with Chromium: the page restarts ICE 2 s in (PATCH with new credentials, the relay's new ones back); it stays connected, the same member, and is heard")
        func browserRestartsICE() throws {
            let lab = try NATLab()
            defer { lab.remove() }
            let relay = try relay(lab, announce: NATLab.relayPublic)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let page = try browserIsHeard(lab, relay: relay, host: NATLab.relayPublic, query: "&restart=2")
            #expect(page.contains("PARLEY iceRestart"), "the page did not restart ICE:\n\(page)")
            #expect(relay.stderr.contains("web restarted ICE in"), "\(relay.stderr.suffix(2000))")
            // One session from join to the end (heard through the recorder's whole stay): never replaced or rejoined.
            let joins = relay.stderr.components(separatedBy: "\n").filter { $0.contains("WebRTC member web added to") }
            #expect(joins.count == 1 && !relay.stderr.contains("replaced"), "\(relay.stderr.suffix(2000))")
        }

        @Test("parley behind a firewall that drops UDP: after 2 s without an answer it joins over TCP, says so, and hears the room (its room on the second worker: the tunnel names the port)")
        func cliOverTCP() throws {
            let lab = try NATLab()
            defer { lab.remove() }
            let relay = try relay(lab, announce: NATLab.relayPublic, workers: 2)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            try lab.blockClientUDP()
            // A room name FNV-1a puts on worker 1 of 2: its port is not the public one.
            let room = (0..<1_000).map { "tcp\($0)" }.first { fnv1a($0) % 2 == 1 }!
            let speaker = try lab.spawn(in: lab.relay, "parley", ["join", room, "--identity", "alice", "--server", "127.0.0.1:7400",
                                                                   "--tone", "440", "--no-playback", "--no-tui", "--duration", "9"])
            defer { speaker.signal(SIGTERM); speaker.wait(seconds: 5) }
            let listener = try lab.spawn(in: lab.client, "parley", ["join", room, "--identity", "bob", "--server", "\(NATLab.relayPublic):7400",
                                                                     "--listen-only", "--output", "\(dir)/bob.wav", "--no-tui", "--duration", "7"])
            #expect(listener.wait(seconds: 20) == 0, "\(listener.stdout)\(listener.stderr)")
            #expect(listener.stdout.contains("no answer over UDP from \(NATLab.relayPublic):7400 in 2 s: joining over TCP"), "\(listener.stdout)")
            #expect(listener.stdout.contains("port 7401"), "the room's worker: \(listener.stdout)")
            let heard = try WAVReader(path: "\(dir)/bob.wav").readAllMono48k()
            let share = goertzelShare(loudestSecond(heard), frequency: 440)
            #expect(share > 0.5, "bob over TCP heard alice with a 440 Hz share of \(share)\n\(listener.stdout)")
        }

        @Test("a call to someone behind a firewall that drops UDP: parley listen goes online over TCP and says so, the call rings, is answered over TCP and hung up")
        func callOverTCP() throws {
            let lab = try NATLab()
            defer { lab.remove() }
            let relay = try relay(lab, announce: NATLab.relayPublic)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            try lab.blockClientUDP()
            let bot = ["--tone", "500", "--no-playback"]
            let callee = try lab.spawn(in: lab.client, "parley", ["listen", "--identity", "bob", "--server", "\(NATLab.relayPublic):7400",
                                                                   "--auto-answer", "--duration", "20"] + bot)
            defer { callee.signal(SIGINT); callee.wait(seconds: 5) }
            #expect(callee.waitFor(seconds: 10) { $0.contains("waiting for calls") }, "\(callee.stdout)\(callee.stderr)")
            #expect(callee.stdout.contains("no answer over UDP from \(NATLab.relayPublic):7400 in 2 s: going online over TCP"), "\(callee.stdout)")
            let caller = try lab.spawn(in: lab.relay, "parley", ["call", "bob", "--identity", "alice", "--server", "127.0.0.1:7400",
                                                                  "--hangup-after", "3"] + bot)
            #expect(caller.wait(seconds: 20) == 0, "\(caller.stdout)\(caller.stderr)")
            #expect(caller.stdout.contains("answered") && caller.stdout.contains("you hung up"), "\(caller.stdout)")
            #expect(callee.waitFor(seconds: 5) { $0.contains("call ended: hung up by alice") }, "\(callee.stdout)")
            // The call's room over TCP from the start (its presence is): no second 2 s wait for UDP.
            #expect(callee.stdout.contains("joining over TCP") && !callee.stdout.contains("no answer over UDP from \(NATLab.relayPublic):7400 in 2 s: joining"),
                    "\(callee.stdout)")
        }

        @Test("headless Chromium behind a firewall that drops UDP joins over ICE-TCP (the relay's passive TCP candidate) and is heard")
        func browserOverTCP() throws {
            let lab = try NATLab()
            defer { lab.remove() }
            let relay = try relay(lab, announce: NATLab.relayPublic)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            try lab.blockClientUDP()
            try browserIsHeard(lab, relay: relay, host: NATLab.relayPublic, recorderOnRelay: true)
        }

        @Test("headless Chromium on the public side of the NAT joins through WHIP over IPv4 and over IPv6 and is heard by a parley member; without announce the answer names the relay's interface, never a wildcard")
        func browserThroughNAT() throws {
            let lab = try NATLab()
            defer { lab.remove() }
            let relay = try relay(lab, announce: "\(NATLab.relayPublic),\(NATLab.relayIPv6)")
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            try browserIsHeard(lab, relay: relay, host: NATLab.relayPublic)
            try browserIsHeard(lab, relay: relay, host: "[\(NATLab.relayIPv6)]")
            relay.signal(SIGTERM)
            relay.wait(seconds: 5)

            // Without announce, bound to the wildcard: the answer offers the relay's own interface address, not the
            // loopback or wildcard one (a client on the private side could use it; the public side needs announce).
            let bare = try self.relay(lab, announce: nil)
            defer { bare.signal(SIGTERM); bare.wait(seconds: 5) }
            #expect(bare.stdout.contains("ready on udp \(NATLab.relayPrivate):7400") || bare.stdout.contains("ready on udp [\(NATLab.relayIPv6)]:7400"),
                    "\(bare.stdout)")
            let admin = try mint(["--identity", "ops", "--room", "lab", "--admin"])
            _ = try lab.curl(in: lab.client, "POST", "http://\(NATLab.relayPublic):7480/v1/rooms", token: admin, body: #"{"name":"lab"}"#)
            let answer = try lab.curl(in: lab.client, "POST", "http://\(NATLab.relayPublic):7480/v1/rooms/lab/rtp-endpoints", token: admin,
                                      body: #"{"identity":"tool","source_address":"198.51.100.20:5000"}"#)
            #expect(answer.1.contains("\"relay_address\":\"\(NATLab.relayPrivate):7400\""), "\(answer.1)")
        }
    }
}

/// FNV-1a of a room name, as the relay hashes rooms to workers.
func fnv1a(_ text: String) -> UInt32 {
    var h: UInt32 = 0x811C_9DC5
    for b in text.utf8 { h = (h ^ UInt32(b)) &* 0x0100_0193 }
    return h
}

extension ProcessTests {
    @Suite("The relay's TCP port under hostile clients: what is not the protocol is closed, limits hold")
    struct TCPBridgeAttackTests {
        /// A relay on loopback whose TCP port is its UDP port's number.
        func relay() throws -> (Spawned, UInt16) {
            let (relay, server) = try startRelay(workers: 1)
            let port = try #require(PeerAddress(parsing: server)?.port)
            return (relay, port)
        }

        @Test("closed at once: a tunnel frame to a port that is not a worker's (the host's other services), a frame over 1,502 bytes, a first frame that is neither STUN nor a tunnel frame, an ICE-TCP check naming no answer")
        func closedAtOnce() throws {
            let (relay, port) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            var stun = [UInt8](repeating: 0, count: 20)
            stun[1] = 0x01
            stun[4] = 0x21; stun[5] = 0x12; stun[6] = 0xA4; stun[7] = 0x42
            let attempts: [(String, [UInt8])] = [
                ("to port 22", StreamFrameReader.frame([0, 22, 1, 2, 3])),
                ("to the next port (not a worker's: one worker)", StreamFrameReader.frame([UInt8((port &+ 1) >> 8), UInt8((port &+ 1) & 0xFF), 1])),
                ("a 1,503-byte frame", [0x05, 0xDF] + [UInt8](repeating: 0, count: 1_503)),
                ("port 0", StreamFrameReader.frame([0, 0, 1])),
                ("an unknown ufrag", StreamFrameReader.frame(stun)),
            ]
            for (what, bytes) in attempts {
                let c = try RawTCP(port: port)
                #expect(c.send(bytes: bytes), "\(what)")
                #expect(c.read(seconds: 3).eof, "\(what): the connection stays open")
            }
            #expect(relay.process.isRunning)
        }

        @Test("a connection that says nothing is closed after the 5 s first-frame deadline; a 9th connection from one address is refused while 8 are open, another address still gets in")
        func deadlinesAndLimits() throws {
            let (relay, port) = try relay()
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let silent = try RawTCP(port: port, from: "127.0.0.5")
            let started = Date()
            let silentEnd = silent.read(seconds: 9)
            #expect(silentEnd.eof && Date().timeIntervalSince(started) >= 4.5, "closed after \(Date().timeIntervalSince(started)) s")
            let eight = try (0..<8).map { _ in try RawTCP(port: port, from: "127.0.0.6") }
            let ninth = try RawTCP(port: port, from: "127.0.0.6")
            #expect(ninth.read(seconds: 2).eof, "a 9th connection from one address")
            #expect(eight.allSatisfy { !$0.closedByPeer })
            let other = try RawTCP(port: port, from: "127.0.0.7")
            #expect(!other.read(seconds: 1).eof, "another address was refused too")
        }
    }
}
