import ParleyAuth
import ParleyWire
import Testing
@testable import ParleyRelayCore

/// The core draws every random number (connection ids, session secrets, SSRCs, mix sequence numbers) from the
/// generator it is given: two cores with the same seed, fed the same datagrams at the same times, send the same bytes.
@Suite("Deterministic core")
struct DeterminismTests {
    static let alice = PeerAddress(ipv4: 192, 168, 1, 2, port: 5000)
    static let bob = PeerAddress(ipv4: 192, 168, 1, 3, port: 5001)
    static let moment = Moment(monotonic: .origin + .seconds(1), unixMilliseconds: FakeNetwork.startUnixMilliseconds)

    /// A core, and everything it sent in answer to each datagram, in order.
    final class Recorder {
        let core: RelayCore
        var sent: [[UInt8]] = []
        /// RTP datagrams among `sent` (forwarded media).
        var rtp = 0

        init(seed: UInt64) {
            // The cleartext protocol: the encrypted one draws its ephemeral keys (and rooms their SRTP keys) from
            // libsodium, by design not from the core's generator.
            var config = RelayCoreConfig()
            config.allowCleartext = true
            let shared = RelayShared(config: config, verifier: TokenVerifier(keys: ["devkey": FakeNetwork.apiSecret]),
                                     cookieSecret: Array(repeating: 7, count: 32), workerPorts: [7400])
            core = RelayCore(shared: shared, workerIndex: 0, log: MemoryLogSink(threshold: .error),
                             random: SeededRandomNumberGenerator(seed: seed))
        }

        /// Feeds one datagram and returns what the core sent; `sent` records each with its destination in front.
        @discardableResult
        func feed(_ bytes: [UInt8], from: PeerAddress, now: Moment = DeterminismTests.moment) -> [[UInt8]] {
            bytes.withUnsafeBytes { core.handle($0, from: from, now: now) }
            var out: [[UInt8]] = []
            for i in 0..<core.output.count {
                let d = core.output[i]
                out.append(Array(d.bytes))
                if d.bytes.first.map({ $0 & 0xC0 == 0x80 }) == true { rtp += 1 }
                sent.append(Array(d.to.addressBytes) + [UInt8(d.to.port >> 8), UInt8(d.to.port & 0xFF)] + Array(d.bytes))
            }
            core.outputSent()
            return out
        }

        /// Joins `identity` from `address` through the cookie round trip; returns the welcome and the connection id.
        func join(_ identity: String, from address: PeerAddress) throws -> (welcome: Welcome, connectionID: UInt32) {
            let token = TokenSigner(apiKey: "devkey", apiSecret: FakeNetwork.apiSecret).mint(
                TokenClaims(identity: identity, room: "lobby", expiresAt: DeterminismTests.moment.unixSeconds + 3600, grants: Grants()))
            let nonce = Array(identity.utf8) + [UInt8](repeating: 1, count: 16 - identity.utf8.count)
            func join(cookie: [UInt8]) throws -> [UInt8] {
                try SignalDatagram(connectionID: 0, sequence: 0, ack: 0,
                                   message: .join(JoinRequest(token: token, room: "lobby", cookie: cookie, nonce: nonce))).serialized()
            }
            let first = try join(cookie: [])
            let answers = feed(first, from: address)
            let retry = try #require(answers.first)
            guard case .retry(let cookie) = try SignalDatagram(parsing: retry).message else {
                throw DeterminismError.noRetry
            }
            for d in feed(try join(cookie: cookie), from: address) {
                let datagram = try SignalDatagram(parsing: d)
                if case .welcome(let w) = datagram.message { return (w, datagram.connectionID) }
            }
            throw DeterminismError.noWelcome
        }
    }

    enum DeterminismError: Error { case noRetry, noWelcome }

    /// Alice and bob join, alice speaks three packets, bob leaves: the whole conversation as the relay sent it.
    static func conversation(seed: UInt64) throws -> (sent: [[UInt8]], welcomes: [Welcome], rtp: Int) {
        let relay = Recorder(seed: seed)
        let a = try relay.join("alice", from: alice)
        let b = try relay.join("bob", from: bob)
        for seq in UInt16(0)..<3 {
            var packet: [UInt8] = [0x80, 111, UInt8(seq >> 8), UInt8(seq & 0xFF), 0, 0, UInt8(truncatingIfNeeded: Int(seq) * 960 >> 8), UInt8(truncatingIfNeeded: Int(seq) * 960)]
            withUnsafeBytes(of: a.welcome.ssrc.bigEndian) { packet += $0 }
            packet += [UInt8](repeating: 0x55, count: 60)
            relay.feed(packet, from: alice, now: Moment(monotonic: moment.monotonic + Int64(seq) * .milliseconds(20),
                                                        unixMilliseconds: moment.unixMilliseconds + Int64(seq) * 20))
        }
        relay.feed(try SignalDatagram(connectionID: b.connectionID, sequence: 1, ack: 1, message: .leave).serialized(), from: bob)
        return (relay.sent, [a.welcome, b.welcome], relay.rtp)
    }

    @Test("two cores with the same seed fed the same datagrams send identical bytes")
    func sameSeedSameBytes() throws {
        let first = try Self.conversation(seed: 42)
        let second = try Self.conversation(seed: 42)
        #expect(first.rtp == 3)  // alice's three packets, forwarded to bob
        #expect(first.sent.count >= 8)  // and retries, welcomes, member pages and events, bob's leave
        #expect(first.sent == second.sent)
        #expect(first.welcomes.map(\.sessionSecret) == second.welcomes.map(\.sessionSecret))
    }

    @Test("another seed gives other session secrets and SSRCs: the randomness comes from the generator")
    func otherSeedOtherSecrets() throws {
        let first = try Self.conversation(seed: 42)
        let other = try Self.conversation(seed: 43)
        #expect(first.welcomes[0].sessionSecret != other.welcomes[0].sessionSecret)
        #expect(first.welcomes[0].ssrc != other.welcomes[0].ssrc)
        #expect(first.sent != other.sent)
    }

    @Test("SplitMix64 from seed 0 gives the reference sequence")
    func splitMixReference() {
        var g = SeededRandomNumberGenerator(seed: 0)
        // Reference values of SplitMix64 seeded with 0 (Vigna's splitmix64.c).
        #expect(g.next() == 0xE220_A839_7B1D_CDAF)
        #expect(g.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(g.next() == 0x06C4_5D18_8009_454F)
    }
}
