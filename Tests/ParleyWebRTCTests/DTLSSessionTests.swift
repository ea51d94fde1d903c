import Foundation
@testable import ParleyWebRTC
import ParleyWire
import Testing

/// DTLS-SRTP between two in-memory sessions (RFC 5763/5764): a client and the relay's server role exchange
/// datagrams through a fake network that records and can drop them. Retransmission tests wait real time (OpenSSL
/// reads the clock inside `DTLSv1_handle_timeout`), with a 20 ms initial timeout so the wait stays short.
@Suite("DTLSSession")
struct DTLSSessionTests {
    static let now = Int64(Date().timeIntervalSince1970)
    static let serverCertificate = try! DTLSCertificate(now: now)
    static let clientCertificate = try! DTLSCertificate(now: now)
    /// Contexts whose timers do not fire while a test exchanges datagrams, however loaded the machine (OpenSSL's 1 s
    /// first timeout): a timer that fires mid-exchange makes OpenSSL resend a flight, which ends a clean exchange with
    /// extra events.
    static let serverContext = try! DTLSContext(certificate: serverCertificate)
    static let clientContext = try! DTLSContext(certificate: clientCertificate)
    /// Contexts with a 20 ms first timeout, for the tests of retransmission (they wait for the timers on the real clock).
    static let fastServerContext = try! DTLSContext(certificate: serverCertificate, initialRetransmitTimeout: 0.02)
    static let fastClientContext = try! DTLSContext(certificate: clientCertificate, initialRetransmitTimeout: 0.02)

    /// A client and a server that expect each other's certificates (unless told otherwise).
    static func pair(clientContext: DTLSContext = clientContext, serverContext: DTLSContext = serverContext,
                     clientExpects: [UInt8]? = nil, serverExpects: [UInt8]? = nil) throws -> (client: DTLSSession, server: DTLSSession) {
        (try DTLSSession(context: clientContext, role: .client,
                         peerFingerprint: clientExpects ?? serverContext.certificate.fingerprint),
         try DTLSSession(context: serverContext, role: .server,
                         peerFingerprint: serverExpects ?? clientContext.certificate.fingerprint))
    }

    /// The fake network: delivers every waiting datagram both ways until none is left, recording each one and the
    /// events each side reported. `drop` decides which datagrams are lost (by direction and index).
    struct Network {
        var datagrams: [[UInt8]] = []
        var toServer: [[UInt8]] = []
        var clientEvents: [DTLSEvent] = []
        var serverEvents: [DTLSEvent] = []

        mutating func run(_ client: DTLSSession, _ server: DTLSSession, rounds: Int = 16,
                          drop: (_ toServer: Bool, _ index: Int) -> Bool = { _, _ in false }) {
            var toServerIndex = 0, toClientIndex = 0
            for _ in 0..<rounds {
                let toServer = client.takeOutgoing(), toClient = server.takeOutgoing()
                if toServer.isEmpty && toClient.isEmpty { return }
                for datagram in toServer {
                    datagrams.append(datagram)
                    self.toServer.append(datagram)
                    defer { toServerIndex += 1 }
                    if drop(true, toServerIndex) { continue }
                    serverEvents.append(server.receive(datagram))
                }
                for datagram in toClient {
                    datagrams.append(datagram)
                    defer { toClientIndex += 1 }
                    if drop(false, toClientIndex) { continue }
                    clientEvents.append(client.receive(datagram))
                }
            }
            Issue.record("datagrams still flowing after \(rounds) rounds")
        }
    }

    /// Waits (real time, at most 2 s) until `session`'s retransmission timer has expired.
    static func waitForTimer(_ session: DTLSSession) {
        for _ in 0..<200 {
            guard let left = session.secondsUntilRetransmit() else { return }
            if left <= 0 { return }
            usleep(useconds_t(max(1_000, min(left, 0.01) * 1_000_000)))
        }
    }

    static func expectConnected(_ client: DTLSSession, _ server: DTLSSession, profile: SRTPProfile) throws {
        #expect(client.state == .connected && server.state == .connected)
        let c = try #require(client.keys), s = try #require(server.keys)
        #expect(c.profile == profile && s.profile == profile)
        #expect(c.localKey.count == profile.keyLength && c.localSalt.count == profile.saltLength)
        #expect(c.remoteKey.count == profile.keyLength && c.remoteSalt.count == profile.saltLength)
        #expect(c.localKey == s.remoteKey && c.localSalt == s.remoteSalt)
        #expect(c.remoteKey == s.localKey && c.remoteSalt == s.localSalt)
        #expect(c.localKey != c.remoteKey && c.localSalt != c.remoteSalt)
        #expect(c.localMasterKey == c.localKey + c.localSalt && s.remoteMasterKey == c.localMasterKey)
        #expect(c.localMasterKey.count == profile.keyLength + profile.saltLength)
    }

    @Test("client and server connect: .connected once each, keys mirror, every datagram ≤ MTU, nothing left pending")
    func handshake() throws {
        let (client, server) = try Self.pair()
        #expect(!client.handshakeStarted && !server.handshakeStarted && client.state == .new)
        let clock = ContinuousClock(), started = clock.now
        #expect(client.start() == .handshaking)
        var network = Network()
        network.run(client, server)
        let elapsed = clock.now - started
        print("DTLS handshake, both sides in one thread: \(elapsed), \(network.datagrams.count) datagrams, "
              + "\(network.datagrams.map(\.count).reduce(0, +)) bytes, sizes \(network.datagrams.map(\.count))")

        try Self.expectConnected(client, server, profile: .aeadAes256Gcm)
        #expect(client.handshakeStarted && server.handshakeStarted)
        #expect(network.clientEvents.filter { $0 == .connected }.count == 1 && network.clientEvents.last == .connected)
        #expect(network.serverEvents.filter { $0 == .connected }.count == 1 && network.serverEvents.last == .connected)
        #expect(network.datagrams.allSatisfy { $0.count <= DTLSSession.mtu && (20...63).contains($0[0]) })
        #expect(client.takeOutgoing().isEmpty && server.takeOutgoing().isEmpty)
        #expect(client.failure == nil && server.failure == nil)
        #expect(client.secondsUntilRetransmit() == nil && server.secondsUntilRetransmit() == nil)
    }

    @Test("the server picks by its own preference; each profile's keys have its sizes", arguments: [
        // (client offers, server accepts, chosen)
        ([SRTPProfile.aes128CmHmacSha1_80], DTLSContext.defaultSRTPProfiles, SRTPProfile.aes128CmHmacSha1_80),
        // Chromium's order (libwebrtc CryptoOptions): SHA1_80 first, then the GCMs.
        ([.aes128CmHmacSha1_80, .aeadAes256Gcm, .aeadAes128Gcm], DTLSContext.defaultSRTPProfiles, .aeadAes256Gcm),
        ([.aes128CmHmacSha1_80, .aeadAes256Gcm, .aeadAes128Gcm], DTLSContext.withoutAES256GCM, .aeadAes128Gcm),
        ([.aeadAes256Gcm, .aes128CmHmacSha1_80], DTLSContext.withoutAES256GCM, .aes128CmHmacSha1_80),
        ([.aes128CmHmacSha1_80, .aeadAes256Gcm], [.aeadAes256Gcm, .aes128CmHmacSha1_80], .aeadAes256Gcm),
    ])
    func profiles(offered: [SRTPProfile], accepted: [SRTPProfile], chosen: SRTPProfile) throws {
        let clientContext = try DTLSContext(certificate: Self.clientCertificate, srtpProfiles: offered)
        let serverContext = try DTLSContext(certificate: Self.serverCertificate, srtpProfiles: accepted)
        let (client, server) = try Self.pair(clientContext: clientContext, serverContext: serverContext)
        client.start()
        var network = Network()
        network.run(client, server)
        try Self.expectConnected(client, server, profile: chosen)
    }

    @Test("no SRTP profile in common: the server fails with no_srtp_profile and keeps its Finished to itself")
    func noCommonProfile() throws {
        let clientContext = try DTLSContext(certificate: Self.clientCertificate, srtpProfiles: [.aeadAes256Gcm])
        let serverContext = try DTLSContext(certificate: Self.serverCertificate, srtpProfiles: [.aeadAes128Gcm, .aes128CmHmacSha1_80])
        let (client, server) = try Self.pair(clientContext: clientContext, serverContext: serverContext)
        client.start()
        var network = Network()
        network.run(client, server)
        #expect(server.state == .failed && server.failure?.code == "no_srtp_profile" && server.keys == nil)
        #expect(network.serverEvents.last == .failed(server.failure!))
        // OpenSSL had written the server's Finished; it was discarded, so the client never completes.
        #expect(client.state == .handshaking && client.keys == nil && network.clientEvents.allSatisfy { $0 == .handshaking })
    }

    @Test("a certificate other than the one announced fails the side that expected it: fingerprint_mismatch",
          arguments: [true, false])
    func fingerprintMismatch(serverChecksWrong: Bool) throws {
        let stranger = try DTLSCertificate(now: Self.now).fingerprint
        let (client, server) = try serverChecksWrong ? Self.pair(serverExpects: stranger) : Self.pair(clientExpects: stranger)
        client.start()
        var network = Network()
        network.run(client, server)
        let (wrong, other) = serverChecksWrong ? (server, client) : (client, server)
        #expect(wrong.state == .failed && wrong.keys == nil && wrong.failure?.code == "fingerprint_mismatch")
        let events = serverChecksWrong ? network.serverEvents : network.clientEvents
        #expect(events.contains { if case .failed(let error) = $0 { error.code == "fingerprint_mismatch" } else { false } })
        // The certificate was refused when it arrived: a bad_certificate alert went out, never a Finished.
        #expect(other.state == .failed && other.keys == nil)
        #expect(other.failure?.reason.contains("bad certificate") == true, "\(String(describing: other.failure))")
        #expect(wrong.receive([22, 0xFE, 0xFD]) == .ignored && wrong.handleTimeout() == .ignored)
        #expect(client.takeOutgoing().isEmpty && server.takeOutgoing().isEmpty)
    }

    @Test("a fingerprint that is not 32 bytes is refused when the session is made")
    func badFingerprintLength() {
        #expect(throws: WebRTCError.self) {
            try DTLSSession(context: Self.serverContext, role: .server, peerFingerprint: [1, 2, 3])
        }
    }

    /// Malformed datagrams, one per line.
    static let malformed: [(String, [UInt8])] = [
        ("empty", []),
        ("STUN binding request (first byte 0)", [0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xA4, 0x42] + [UInt8](repeating: 7, count: 12)),
        ("RTP (first byte 0x80)", [0x80, 0x6F, 0x00, 0x01] + [UInt8](repeating: 0, count: 20)),
        ("handshake record header cut short", [22, 0xFE, 0xFD, 0, 0]),
        ("handshake record claiming 300 bytes, carrying 4", [22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0x2C, 1, 2, 3, 4]),
        ("ClientHello header with a garbage body", [22, 0xFE, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16,
                                                    1, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 4, 0xDE, 0xAD, 0xBE, 0xEF]),
        ("application data before any keys", [23, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 1, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8]),
        ("alert record, fatal handshake_failure, epoch 0", [21, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 9, 0, 2, 2, 40]),
        ("change_cipher_spec out of turn", [20, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 1]),
        ("oversized", [22] + [UInt8](repeating: 0xAA, count: DTLSSession.maxDatagramSize)),
    ]

    @Test("malformed datagrams to a new server, a handshaking client and connected sessions: ignored or failed, no crash")
    func malformedDatagrams() throws {
        for (name, datagram) in Self.malformed {
            let fresh = try DTLSSession(context: Self.serverContext, role: .server,
                                        peerFingerprint: Self.clientCertificate.fingerprint)
            let event = fresh.receive(datagram)
            #expect(event == .ignored || fresh.state == .failed, "new server, \(name): \(event)")
            #expect(fresh.takeOutgoing().count <= 1, "new server answered \(name) with more than one datagram")

            let (client, _) = try Self.pair()
            client.start()
            let midway = client.receive(datagram)
            #expect(midway == .ignored || midway == .handshaking || client.state == .failed, "handshaking client, \(name)")

            let (a, b) = try Self.pair()
            a.start()
            var network = Network()
            network.run(a, b)
            for session in [a, b] {
                let after = session.receive(datagram)
                #expect(after == .ignored || session.state == .failed, "connected, \(name): \(after)")
            }
        }
    }

    @Test("random DTLS-shaped datagrams (seeded): connected sessions drop them all and still close cleanly")
    func randomDatagrams() throws {
        var random = SeededRandomNumberGenerator(seed: 0xD715)
        let (client, server) = try Self.pair()
        client.start()
        var network = Network()
        network.run(client, server)
        for _ in 0..<500 {
            var datagram = (0..<Int.random(in: 13...300, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            datagram[0] = UInt8.random(in: 20...63, using: &random)
            (datagram[1], datagram[2]) = (0xFE, 0xFD)
            if Bool.random(using: &random) { (datagram[3], datagram[4]) = (0, UInt8.random(in: 0...2, using: &random)) }
            if Bool.random(using: &random) {  // one record covering the datagram
                (datagram[11], datagram[12]) = (UInt8((datagram.count - 13) >> 8), UInt8((datagram.count - 13) & 0xFF))
            }
            #expect(client.receive(datagram) == .ignored && server.receive(datagram) == .ignored)
        }
        #expect(client.state == .connected && server.state == .connected)
        #expect(client.takeOutgoing().isEmpty && server.takeOutgoing().isEmpty)
        server.close()
        #expect(client.receive(server.takeOutgoing()[0]) == .closed)
    }

    @Test("epoch-1 records too short for the AEAD are dropped before OpenSSL, which would end the session on them",
          arguments: [2, 15, 23])
    func shortProtectedRecord(length: Int) throws {
        let (client, server) = try Self.pair()
        client.start()
        var network = Network()
        network.run(client, server)
        //                      type  version     epoch  sequence number        length
        let record: [UInt8] = [23, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 9, 0, UInt8(length)] + [UInt8](repeating: 0x5A, count: length)
        #expect(server.receive(record) == .ignored && server.state == .connected)
        client.close()
        #expect(server.receive(client.takeOutgoing()[0]) == .closed)
    }

    @Test("record scans: what counts as a ClientHello, what is a too-short protected record")
    func recordScans() {
        //                              type  version     epoch  sequence number     length  msg  ...
        let clientHello: [UInt8] = [22, 0xFE, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 1] + [UInt8](repeating: 0, count: 11)
        func hello(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { DTLSSession.startsWithClientHello($0) } }
        #expect(hello(clientHello))
        #expect(!hello(Array(clientHello.dropLast())), "record longer than the datagram")
        var serverHello = clientHello; serverHello[13] = 2
        #expect(!hello(serverHello))
        var epoch1 = clientHello; epoch1[4] = 1
        #expect(!hello(epoch1))
        var alert = clientHello; alert[0] = 21
        #expect(!hello(alert))

        func tile(_ bytes: [UInt8], _ minimum: Int = 24) -> Bool {
            bytes.withUnsafeBytes { DTLSSession.recordsTile($0, minimumProtectedLength: minimum) }
        }
        let epoch0Alert: [UInt8] = [21, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 1, 0]
        let epoch1Alert24: [UInt8] = [21, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 1, 0, 24] + [UInt8](repeating: 0, count: 24)
        let epoch1Alert18: [UInt8] = [21, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 1, 0, 18] + [UInt8](repeating: 0, count: 18)
        #expect(tile(epoch0Alert) && tile(epoch1Alert24) && tile(clientHello))
        #expect(!tile(epoch1Alert18) && tile(epoch1Alert18, 16), "ChaCha20-Poly1305's close_notify is 18 bytes")
        #expect(!tile(epoch0Alert + epoch1Alert18) && tile(epoch0Alert + epoch1Alert24), "the second record counts too")
        #expect(!tile(Array(epoch0Alert.dropLast())), "the record overruns the datagram")
        #expect(!tile(epoch0Alert + [0]), "a byte after the last record")
        #expect(!tile(epoch0Alert + Array(epoch0Alert.prefix(12))), "a second header cut short")
        #expect(!tile([]), "no record")
        #expect(tile([22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), "one empty epoch-0 record")
        var badType = epoch0Alert; badType[0] = 63
        #expect(!tile(badType), "63 is DTLS's range on the port (RFC 7983) but no record type")
        var badVersion = epoch0Alert; badVersion[2] = 0xFC
        #expect(!tile(badVersion))
        #expect(!tile(Self.resyncDatagram), "a first record claiming 65,535 bytes in a 31-byte datagram")
    }

    /// The review's datagram (issue 33, finding 7): an epoch-0 record claiming 0xFFFF bytes, then a short epoch-1
    /// record inside it. OpenSSL resynchronised on the inner record and failed with SSL_ERROR_SYSCALL, and the relay
    /// removed the member: one spoofed datagram ended a connected WebRTC session.
    static let resyncDatagram: [UInt8] =
        //  type  version     epoch  sequence number        length
        [0x17, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
        + [0x17, 0xFE, 0xFD, 0, 1, 0, 0, 0, 0, 0, 5, 0, 5]
        + [1, 2, 3, 4, 5]

    @Test("a datagram whose records do not tile it never reaches OpenSSL: a connected session stays up, and closes on the peer's close_notify")
    func forgedResyncDatagram() throws {
        let (client, server) = try Self.pair()
        client.start()
        var network = Network()
        network.run(client, server)
        #expect(Self.resyncDatagram.count == 31)
        #expect(server.receive(Self.resyncDatagram) == .ignored && server.state == .connected)
        #expect(client.receive(Self.resyncDatagram) == .ignored && client.state == .connected)
        client.close()
        #expect(server.receive(client.takeOutgoing()[0]) == .closed)
    }

    @Test("a new server that never sees a ClientHello stays new and fails after maxHandshakeDatagrams")
    func handshakeBudget() throws {
        let server = try DTLSSession(context: Self.serverContext, role: .server, peerFingerprint: Self.clientCertificate.fingerprint)
        let junk: [UInt8] = [22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0xAB, 0xCD]
        for _ in 0..<DTLSSession.maxHandshakeDatagrams { #expect(server.receive(junk) == .ignored) }
        #expect(!server.handshakeStarted && server.takeOutgoing().isEmpty)
        guard case .failed(let error) = server.receive(junk) else { Issue.record("not failed"); return }
        #expect(error.code == "dtls_handshake_budget" && server.state == .failed)
        #expect(server.receive(junk) == .ignored)
    }

    @Test("the client's and server's roles refuse what is not theirs: receive before start, start on a server")
    func roles() throws {
        let (client, server) = try Self.pair()
        #expect(client.receive([22, 0xFE, 0xFD, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]) == .ignored && client.state == .new)
        #expect(server.start() == .ignored && server.state == .new)
        #expect(client.handleTimeout() == .ignored && client.secondsUntilRetransmit() == nil)
        #expect(client.start() == .handshaking && client.start() == .ignored)
        #expect(client.takeOutgoing().count == 1)
    }

    @Test("the server's first flight is lost: the client's timer resends its ClientHello, the server's its flight",
          arguments: [true, false])
    func lostServerFlight(clientTimerFirst: Bool) throws {
        let (client, server) = try Self.pair(clientContext: Self.fastClientContext, serverContext: Self.fastServerContext)
        client.start()
        var network = Network()
        network.run(client, server, drop: { toServer, _ in !toServer })
        #expect(client.state == .handshaking && server.state == .handshaking)
        let timeout = try #require(client.secondsUntilRetransmit())
        #expect(timeout >= 0 && timeout <= 0.02)  // 0 once it expired (a loaded machine may take that long to get here)
        #expect(server.secondsUntilRetransmit() != nil)

        if clientTimerFirst {
            Self.waitForTimer(client)
            #expect(client.handleTimeout() == .handshaking)
            let resent = client.takeOutgoing()
            #expect(resent.count == 1 && resent.first?[13] == 1, "the ClientHello again")
            for datagram in resent { #expect(server.receive(datagram) == .handshaking) }
            // OpenSSL answers a repeated ClientHello with its flight again (unless its own timer already resent it):
            // let that copy be lost too.
            _ = server.takeOutgoing()
        }
        Self.waitForTimer(server)
        #expect(server.handleTimeout() == .handshaking)
        var second = Network()
        second.run(client, server)
        try Self.expectConnected(client, server, profile: .aeadAes256Gcm)
        #expect(second.datagrams.allSatisfy { $0.count <= DTLSSession.mtu })
    }

    @Test("the server's last flight is lost: the client resends its Finished and the connected server answers again")
    func lostServerFinished() throws {
        let (client, server) = try Self.pair(clientContext: Self.fastClientContext, serverContext: Self.fastServerContext)
        client.start()
        var network = Network()
        // Server → client datagrams: the first flight, then CCS + Finished; drop everything after the first flight.
        var firstFlight = 0
        network.run(client, server, drop: { toServer, index in
            if toServer { return false }
            if server.state != .connected { firstFlight = index + 1; return false }
            return index >= firstFlight
        })
        #expect(server.state == .connected && client.state == .handshaking)
        Self.waitForTimer(client)
        #expect(client.handleTimeout() == .handshaking)
        var second = Network()
        second.run(client, server)
        #expect(second.serverEvents.allSatisfy { $0 == .ignored })
        try Self.expectConnected(client, server, profile: .aeadAes256Gcm)
    }

    @Test("close() sends close_notify: the peer reports .closed and answers with its own", arguments: [true, false])
    func close(clientCloses: Bool) throws {
        let (client, server) = try Self.pair()
        client.start()
        var network = Network()
        network.run(client, server)
        let (closer, peer) = clientCloses ? (client, server) : (server, client)
        closer.close()
        #expect(closer.state == .closed)
        let notify = closer.takeOutgoing()
        #expect(notify.count == 1 && notify[0][0] == 21, "one alert record")
        #expect(peer.receive(notify[0]) == .closed && peer.state == .closed)
        let reply = peer.takeOutgoing()
        #expect(reply.count == 1)
        #expect(closer.receive(reply[0]) == .ignored)
        #expect(closer.keys != nil && peer.keys != nil)
    }

    @Test("a replayed copy of the client's last flight after connection: dropped by DTLS's replay window, no reply")
    func replayAfterConnection() throws {
        let (client, server) = try Self.pair()
        client.start()
        var network = Network()
        network.run(client, server)
        let lastFlight = try #require(network.toServer.last)
        #expect(server.receive(lastFlight) == .ignored && server.state == .connected)
        #expect(server.takeOutgoing().isEmpty)
        #expect(client.receive(lastFlight) == .ignored && client.state == .connected)
        #expect(client.takeOutgoing().isEmpty)
    }

    @Test("closing before connection sends nothing and ends the session")
    func closeWhileHandshaking() throws {
        let (client, server) = try Self.pair()
        client.start()
        _ = client.takeOutgoing()
        client.close()
        #expect(client.state == .closed && client.takeOutgoing().isEmpty && client.handleTimeout() == .ignored)
        server.close()
        #expect(server.state == .closed)
    }

    @Test("handshake cost: the mean of 20 full handshakes, both sides on one thread (a figure, not an assertion)")
    func handshakeCost() throws {
        let clock = ContinuousClock()
        var total = Duration.zero
        for _ in 0..<20 {
            let started = clock.now
            let (client, server) = try Self.pair()
            client.start()
            var network = Network()
            network.run(client, server)
            total += clock.now - started
            #expect(client.state == .connected && server.state == .connected)
        }
        print("DTLS handshake (ECDSA P-256, X25519), both sides: \(total / 20) mean over 20")
    }
}

@Suite("DTLSSRTPKeys")
struct DTLSSRTPKeysTests {
    @Test("RFC 5764 §4.2 layout: client key, server key, client salt, server salt", arguments: SRTPProfile.allCases)
    func layout(profile: SRTPProfile) {
        let k = profile.keyLength, s = profile.saltLength
        let material = (0..<2 * (k + s)).map { UInt8($0) }
        let clientKey = Array(material[0..<k]), serverKey = Array(material[k..<2 * k])
        let clientSalt = Array(material[2 * k..<2 * k + s]), serverSalt = Array(material[(2 * k + s)...])
        material.withUnsafeBytes { bytes in
            let server = DTLSSRTPKeys(profile: profile, material: bytes, isServer: true)
            let client = DTLSSRTPKeys(profile: profile, material: bytes, isServer: false)
            #expect(server.localKey == serverKey && server.localSalt == serverSalt)
            #expect(server.remoteKey == clientKey && server.remoteSalt == clientSalt)
            #expect(client.localMasterKey == clientKey + clientSalt && client.remoteMasterKey == serverKey + serverSalt)
        }
        // The sizes of RFC 5764 §4.1.2 and RFC 7714 §14.2.
        let sizes: [SRTPProfile: (Int, Int)] = [.aes128CmHmacSha1_80: (16, 14), .aeadAes128Gcm: (16, 12), .aeadAes256Gcm: (32, 12)]
        #expect(sizes[profile]! == (k, s))
    }
}

@Suite("DTLSCertificate")
struct DTLSCertificateTests {
    @Test("fingerprintSDP is 'sha-256 ' and 32 uppercase hex pairs of SHA-256(DER)")
    func format() throws {
        let certificate = DTLSSessionTests.serverCertificate
        #expect(certificate.fingerprint.count == 32)
        let sdp = certificate.fingerprintSDP
        #expect(sdp.hasPrefix("sha-256 "))
        let pairs = sdp.dropFirst(8).split(separator: ":")
        #expect(pairs.count == 32 && pairs.allSatisfy { $0.count == 2 && $0.allSatisfy { "0123456789ABCDEF".contains($0) } })
        #expect(DTLSCertificate.sdpFingerprint([0x00, 0xAB, 0x0F]) == "sha-256 00:AB:0F")
    }

    @Test("each certificate has its own key and serial")
    func distinct() throws {
        #expect(try DTLSCertificate(now: 0).fingerprint != DTLSCertificate(now: 0).fingerprint)
    }

    @Test("openssl x509 agrees: the same SHA-256 fingerprint, CN parley, ECDSA P-256 with SHA-256, 31 days valid",
          .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl")))
    func opensslCommandLine() throws {
        let now = Int64(Date().timeIntervalSince1970)
        let certificate = try DTLSCertificate(now: now)
        let output = try Self.openssl(["x509", "-inform", "DER", "-noout", "-fingerprint", "-sha256", "-text"],
                                      input: certificate.derEncoded())
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("sha256 Fingerprint=") || $0.hasPrefix("SHA256 Fingerprint=") })
        #expect("sha-256 " + line.split(separator: "=")[1] == certificate.fingerprintSDP)
        #expect(output.contains("Subject: CN = parley") && output.contains("Issuer: CN = parley"))
        #expect(output.contains("ecdsa-with-SHA256") && output.contains("prime256v1"))
        #expect(output.contains("Version: 3 (0x2)"))
        let dates = try Self.openssl(["x509", "-inform", "DER", "-noout", "-startdate", "-enddate"], input: certificate.derEncoded())
        // "notBefore=Dec  1 22:24:00 2026 GMT"
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "MMM d HH:mm:ss yyyy"
        func date(_ key: String) throws -> Int64 {
            let line = try #require(dates.split(separator: "\n").first { $0.hasPrefix(key + "=") })
            let fields = line.dropFirst(key.count + 1).split(separator: " ").prefix(4).joined(separator: " ")
            return Int64(try #require(formatter.date(from: fields)).timeIntervalSince1970)
        }
        #expect(try date("notBefore") == now - 86_400)
        #expect(try date("notAfter") == now + 30 * 86_400)
    }

    static func openssl(_ arguments: [String], input: [UInt8]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        try process.run()
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}

extension DTLSSession {
    /// `receive(_:)` for a byte array.
    func receive(_ bytes: [UInt8]) -> DTLSEvent { bytes.withUnsafeBytes { receive($0) } }
}
