import Foundation
import ParleyNet
import ParleyWire
import Testing

/// The client against a relay that dies and comes back, and against datagrams that only pretend to be the relay's.
extension ProcessTests {
    @Suite("Clients survive a relay restart and ignore forged signalling")
    struct ClientRecoveryTests {
        @Test("kill -9 and a restart on the same port within seconds: `join` and `listen` come back by themselves")
        func relayRestart() throws {
            let base = try freeUDPPorts(count: 2)
            let room = roomOnWorker(1, of: 2)  // the member talks to worker 1's port after the welcome
            let first = try startRelay(onPort: base, workers: 2)
            var relay = first  // the one running now: only it is stopped at the end (a reaped pid may be reused)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let server = "127.0.0.1:\(base)"
            let alice = try Spawned("parley", ["join", room, "--identity", "alice", "--server", server, "--duration", "40",
                                               "--listen-only", "--no-playback"])
            let bob = try Spawned("parley", ["listen", "--identity", "bob-\(room)", "--server", server, "--duration", "40",
                                             "--no-playback"])
            #expect(alice.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(alice.stdout)\(alice.stderr)")
            #expect(alice.stdout.contains("port \(base + 1)"), "the room should live on worker 1: \(alice.stdout)")
            #expect(bob.waitFor(seconds: 5) { $0.contains("waiting for calls") }, "\(bob.stdout)\(bob.stderr)")

            first.signal(SIGKILL)  // no goodbye: the clients find out by themselves
            first.wait(seconds: 5)
            // Within 5 s the person is told the relay stopped answering (stderr without the live view).
            #expect(alice.waitForStderr(seconds: 5) { $0.contains("stopped answering") }, "alice: \(alice.stdout)\(alice.stderr)")
            #expect(bob.waitForStderr(seconds: 1) { $0.contains("stopped answering") }, "bob: \(bob.stdout)\(bob.stderr)")
            let second = try startRelay(onPort: base, workers: 2)
            relay = second

            // Each client's resume gets `unknown session` from the new relay: a cue to join afresh, not to exit.
            let joinedTwice = alice.waitFor(seconds: 20) { $0.components(separatedBy: "joined \(room) as alice").count == 3 }
            #expect(joinedTwice, "alice: \(alice.stdout)\(alice.stderr)")
            #expect(alice.waitForStderr(seconds: 2) { $0.contains("answers again") }, "alice: \(alice.stderr)")
            #expect(bob.waitForStderr(seconds: 2) { $0.contains("answers again") }, "bob: \(bob.stderr)")
            let onlineTwice = bob.waitFor(seconds: 20) { $0.components(separatedBy: "online as bob").count == 3 }
            #expect(onlineTwice, "bob: \(bob.stdout)\(bob.stderr)")
            #expect(alice.process.isRunning && bob.process.isRunning)
            #expect(second.waitForStderr(seconds: 1) { $0.contains("alice joined \(room)") }, "\(second.stderr)")

            alice.signal(SIGINT)
            bob.signal(SIGINT)
            #expect(alice.wait(seconds: 5) == 0, "\(alice.stdout)\(alice.stderr)")
            #expect(bob.wait(seconds: 5) == 0, "\(bob.stdout)\(bob.stderr)")
        }

        @Test("a goodbye from another port of the relay's host does not end the session")
        func forgedGoodbye() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "forged-\(UInt32.random(in: 0...UInt32.max))"
            let alice = try Spawned("parley", ["join", room, "--identity", "alice", "--server", server, "--duration", "30",
                                               "--listen-only", "--no-playback"])
            #expect(alice.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(alice.stdout)\(alice.stderr)")
            #expect(relay.waitForStderr(seconds: 2) { $0.contains("alice joined \(room) from ") })
            // The relay's log names the client's address: "alice joined ROOM from 127.0.0.1:PORT (member …".
            let line = relay.stderr.split(separator: "\n").first { $0.contains("alice joined \(room) from ") } ?? ""
            let client = line.split(separator: " ").drop(while: { $0 != "from" }).dropFirst().first.flatMap { PeerAddress(parsing: String($0)) }
            let target = try #require(client, "no client address in: \(relay.stderr)")

            // Another port on the same host, sending what the relay would send to end the session.
            let forger = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0))
            for code in [GoodbyeCode.kicked, .left, .replaced] {
                let goodbye = try SignalDatagram(connectionID: 0, sequence: 0, ack: 0, message: .goodbye(code: code, reason: "forged")).serialized()
                try forger.send(goodbye, to: target)
            }
            // Still in the room a keepalive later, and it says nothing about being removed.
            #expect(!alice.waitFor(seconds: 2) { $0.contains("the relay ended the session") }, "\(alice.stdout)")
            #expect(alice.process.isRunning, "\(alice.stdout)\(alice.stderr)")
            alice.signal(SIGINT)
            #expect(alice.wait(seconds: 5) == 0, "\(alice.stdout)\(alice.stderr)")
            #expect(alice.stdout.contains("left \(room)"))
        }
    }
}

/// A relay on `127.0.0.1:port` (worker k on port + k), so a second relay can take the first one's place.
func startRelay(onPort port: UInt16, workers: Int) throws -> Spawned {
    let relay = try Spawned("parley-relay", ["--udp", "127.0.0.1:\(port)", "--http", "127.0.0.1:0", "--workers", "\(workers)",
                                             "--log-level", "info"])
    guard relay.waitFor(seconds: 10, { $0.contains("ready on udp") }) else { throw RelayDidNotStart(output: relay.stdout + relay.stderr) }
    return relay
}

/// The first of `count` consecutive loopback UDP ports that are free now (the ports are released on return).
func freeUDPPorts(count: Int) throws -> UInt16 {
    for _ in 0..<50 {
        let probe = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0))
        guard let base = probe.localAddress?.port, Int(base) + count <= 65_535 else { continue }
        let rest = (1..<count).compactMap { try? UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: base + UInt16($0))) }
        if rest.count == count - 1 { return base }
    }
    struct NoFreePorts: Error {}
    throw NoFreePorts()
}

/// A fresh room name that the relay's FNV-1a routing puts on `worker` of `workers`.
func roomOnWorker(_ worker: Int, of workers: Int) -> String {
    while true {
        let name = "restart-\(UInt32.random(in: 0...UInt32.max))"
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        if Int(hash % UInt64(workers)) == worker { return name }
    }
}
