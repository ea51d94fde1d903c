import Foundation
import Testing

/// A Redis that speaks only TLS (Debian's redis-server is built with it) on a port of its own, with a password, its
/// certificate made by openssl for 127.0.0.1.
struct TLSRedisServer {
    let process: Spawned
    let port: Int
    let certificate: TestCertificate

    init(password: String) throws {
        certificate = try TestCertificate()
        for _ in 0..<5 {
            let p = Int.random(in: 20_000...60_000)
            let s = try Spawned(.redisServer, ["--port", "0", "--tls-port", "\(p)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                               "--tls-cert-file", certificate.certificate, "--tls-key-file", certificate.key,
                                               "--tls-ca-cert-file", certificate.certificate, "--tls-auth-clients", "no",
                                               "--requirepass", password])
            if s.waitFor(seconds: 5, { $0.contains("Ready to accept connections") }) {
                process = s
                port = p
                return
            }
            s.signal(SIGKILL)
            s.wait(seconds: 2)
        }
        throw RelayDidNotStart(output: "redis-server did not start with TLS")
    }

    func stop() {
        process.signal(SIGKILL)
        process.wait(seconds: 3)
        certificate.remove()
    }
}

extension ProcessTests {
    /// Issue 33, finding 1: the cluster's Redis behind a password and TLS. `rediss://:PASSWORD@HOST:PORT` with
    /// `cluster_tls_ca`: the nodes speak TLS (OpenSSL, the server's certificate checked against the CA file and its IP
    /// address), send AUTH, and work as a cluster; a wrong password or a certificate nobody vouches for is refused and
    /// said (without the password).
    @Suite("Cluster: Redis over TLS with a password")
    struct ClusterRedisTLSProcessTests {
        @Test("two nodes on a TLS Redis with a password register, place a room and keep texts; a wrong password, or an untrusted certificate, is refused and said without the password")
        func tlsAndPassword() throws {
            let password = "s3cret-\(UInt32.random(in: 0...UInt32.max))"
            let redis = try TLSRedisServer(password: password)
            defer { redis.stop() }
            let url = "rediss://:\(password)@127.0.0.1:\(redis.port)"
            let env = ["PARLEY_CLUSTER": url, "PARLEY_CLUSTER_TLS_CA": redis.certificate.certificate]
            let (a, serverA) = try startRelay(workers: 1, environment: env.merging(["PARLEY_NODE_ID": "node-a"]) { $1 })
            defer { a.signal(SIGTERM); a.wait(seconds: 5) }
            let (b, serverB) = try startRelay(workers: 1, environment: env.merging(["PARLEY_NODE_ID": "node-b"]) { $1 })
            defer { b.signal(SIGTERM); b.wait(seconds: 5) }
            let admin = try mint(["--admin", "--identity", "ops"])
            let baseA = try #require(httpBase(of: a)), baseB = try #require(httpBase(of: b))
            var seen = ""
            #expect(try eventually(seconds: 6) {
                seen = try curl("GET", baseA + "/v1/cluster", token: admin).body
                return seen.contains(#""connected":true"#) && seen.contains(#""id":"node-a""#) && seen.contains(#""id":"node-b""#)
            }, "\(seen)\n\(a.stderr)")
            // A room opened through a (on whichever node placement picks); a join through the other node is sent there
            // (with that node's key, proven) and joins.
            let room = "tls-\(UInt32.random(in: 0...UInt32.max))"
            let host = try Spawned("parley", ["join", room, "--identity", "host", "--server", serverA, "--listen-only", "--no-playback",
                                              "--no-tui", "--duration", "10"])
            defer { host.signal(SIGTERM); host.wait(seconds: 5) }
            #expect(host.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(host.stdout)")
            var owner = ""
            #expect(try eventually(seconds: 5) {
                let body = try curl("GET", baseB + "/v1/cluster", token: admin).body
                owner = body.contains(#""\#(room)":"node-a""#) ? "node-a" : body.contains(#""\#(room)":"node-b""#) ? "node-b" : ""
                return !owner.isEmpty
            })
            let (ownerUDP, ownerHTTP, otherUDP, otherHTTP) = owner == "node-a" ? (serverA, baseA, serverB, baseB) : (serverB, baseB, serverA, baseA)
            let guest = try Spawned("parley", ["join", room, "--identity", "guest", "--server", otherUDP, "--listen-only", "--no-playback",
                                               "--no-tui", "--duration", "2", "--verbose"])
            #expect(guest.wait(seconds: 15) == 0, "\(guest.stdout)\(guest.stderr)")
            #expect(guest.stdout.contains("joining it at \(ownerUDP)") && guest.stdout.contains("(proven, as expected)"), "\(guest.stdout)")
            // Texts kept in the TLS Redis: written through the room's node, read through the other.
            #expect(try curl("POST", ownerHTTP + "/v1/rooms/\(room)/messages", token: admin, body: #"{"text":"over tls"}"#).status == 200)
            #expect(try eventually(seconds: 3) {
                try curl("GET", otherHTTP + "/v1/rooms/\(room)/messages?limit=5", token: admin).body.contains("over tls")
            })

            // A wrong password, and a certificate checked against the system's CAs only (none vouches for it).
            let wrong = "rediss://:not-the-password@127.0.0.1:\(redis.port)"
            let (c, _) = try startRelay(workers: 1, environment: ["PARLEY_CLUSTER": wrong, "PARLEY_CLUSTER_TLS_CA": redis.certificate.certificate,
                                                                  "PARLEY_NODE_ID": "node-c"])
            defer { c.signal(SIGTERM); c.wait(seconds: 5) }
            let (d, _) = try startRelay(workers: 1, environment: ["PARLEY_CLUSTER": url, "PARLEY_NODE_ID": "node-d"])
            defer { d.signal(SIGTERM); d.wait(seconds: 5) }
            let baseC = try #require(httpBase(of: c)), baseD = try #require(httpBase(of: d))
            #expect(try eventually(seconds: 5) {
                seen = try curl("GET", baseC + "/v1/cluster", token: admin).body
                return seen.contains(#""connected":false"#) && seen.contains("refused the password")
            }, "\(seen)")
            #expect(try eventually(seconds: 5) {
                seen = try curl("GET", baseD + "/v1/cluster", token: admin).body
                return seen.contains(#""connected":false"#) && seen.contains("certificate")
            }, "\(seen)")
            #expect(!seen.contains(#""id":"node-a""#))
            for relay in [a, b, c, d] { #expect(!relay.stderr.contains(password) && !relay.stdout.contains(password)) }
            #expect(!c.stderr.contains("not-the-password"))
        }
    }

    /// The other half of issue 33's last line: a member whose stay ends before any relay welcomed it (the relay, or
    /// the node a cluster sent it to, never answers) was never in the room: exit 5, not "left" and 0.
    @Suite("Client: a stay that never began")
    struct NeverWelcomedProcessTests {
        @Test("parley join against a relay that never answers, with --duration shorter than the handshake's patience: exit 5, not 'left'")
        func neverWelcomedExitsFive() throws {
            let port = freeUDPPort()
            let p = try Spawned("parley", ["join", "lobby", "--identity", "alice", "--server", "127.0.0.1:\(port)", "--listen-only",
                                           "--no-playback", "--no-tui", "--duration", "2"])
            #expect(p.wait(seconds: 15) == 5, "\(p.stdout)\(p.stderr)")
            #expect(!p.stdout.contains("left lobby"), "\(p.stdout)")
            #expect(p.stderr.contains("cannot reach the relay at 127.0.0.1:\(port)"), "\(p.stderr)")
        }
    }
}
