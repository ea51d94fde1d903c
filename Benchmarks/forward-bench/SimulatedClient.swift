import BenchmarkSupport
import ParleyAuth
import ParleyClientCore
import ParleyCrypto
import ParleyRelayCore
import ParleyWire

/// One member as the benchmark plays it: it joins through the relay's real signalling (join, retry with
/// cookie, welcome), acknowledges every reliable message and pings every keepalive interval, which is all
/// the relay needs to keep it. No other client logic.
struct SimulatedClient {
    let identity: String
    let roomName: String
    let roomIndex: Int
    let address: PeerAddress
    /// From the welcome (0 before).
    var connectionID: UInt32 = 0
    /// From the welcome.
    var ssrc: UInt32 = 0
    /// The cookie of the last retry answer.
    var cookie: [UInt8]?
    /// Highest reliable sequence received in order: the `ack` of every datagram the client sends.
    var acknowledged: UInt32 = 0
    /// A reliable message arrived since the client last sent anything.
    var ackOwed = false
    var lastPing = Instant.origin
    /// Encrypted scenarios: the client's real session (Noise handshake, sealed signalling), which does all of the
    /// above itself.
    var session: ClientSession?
}

extension Scenario {
    /// Joins client `index` exactly as a client would: a join without cookie, the `retry` answer, the same join
    /// with the cookie, the `welcome` (connection id, SSRC); then acknowledges everything the join caused.
    func join(_ index: Int, signer: TokenSigner) {
        if let identity = core.shared.identity { return joinEncrypted(index, signer: signer, relayKey: identity.publicKey) }
        let client = clients[index]
        let claims = TokenClaims(identity: client.identity, room: client.roomName,
                                 expiresAt: clock.now.unixSeconds + 365 * 86_400, grants: Grants())
        var request = JoinRequest(token: signer.mint(claims), room: client.roomName, nonce: Crypto.randomBytes(16))
        send(.join(request), from: index)
        answerSignalling(queuedFrom: 0)
        core.outputSent()
        guard let cookie = clients[index].cookie else { fail("no retry answered \(client.identity)'s first join") }

        request.cookie = cookie
        send(.join(request), from: index)
        answerSignalling(queuedFrom: 0)
        core.outputSent()
        guard clients[index].connectionID != 0 else { fail("no welcome answered \(client.identity)'s join with cookie") }
        clients[index].lastPing = clock.monotonic
    }

    /// Joins client `index` through the encrypted protocol with a real `ClientSession`: hello, cookie, Noise
    /// initiation and response, sealed welcome.
    func joinEncrypted(_ index: Int, signer: TokenSigner, relayKey: [UInt8]) {
        let client = clients[index]
        let claims = TokenClaims(identity: client.identity, room: client.roomName,
                                 expiresAt: clock.now.unixSeconds + 365 * 86_400, grants: Grants())
        let session = ClientSession(server: Self.relayAddress, token: signer.mint(claims), room: client.roomName, speakersFromMedia: true,
                                    security: .encrypted(relayKey: relayKey), now: clock.monotonic,
                                    unixMilliseconds: { [unowned self] in self.clock.now.unixMilliseconds })
        clients[index].session = session
        _ = session.tick(now: clock.monotonic)
        for _ in 0..<8 where session.welcome == nil {
            sendSessionOutput(index)
            answerSignalling(queuedFrom: 0)
            core.outputSent()
        }
        guard let welcome = session.welcome else { fail("no welcome answered \(client.identity)'s encrypted join") }
        clients[index].ssrc = welcome.ssrc
        clients[index].connectionID = 1
        clients[index].lastPing = clock.monotonic
    }

    /// Hands what client `index`'s session queued to the core; the time the core spends on handshake initiations
    /// (cookie check, both Diffie-Hellmans, token check, admission, the sealed welcome) is added to `initiations`.
    func sendSessionOutput(_ index: Int) {
        guard let session = clients[index].session else { return }
        for d in session.drainOutgoing() {
            let isInitiation = d.count > 2 && d[1] == SignallingEnvelope.version && d[2] == SignallingEnvelope.Kind.initiation.rawValue
            let start = monotonicNanoseconds()
            d.withUnsafeBytes { core.handle($0, from: clients[index].address, now: clock.now) }
            if isInitiation {
                initiations.count += 1
                initiations.nanoseconds += monotonicNanoseconds() - start
            }
        }
    }

    /// The relay's address as clients see it (worker 0's only port).
    static let relayAddress = PeerAddress(ipv4: 127, 0, 0, 1, port: 7400)

    /// Sends one signalling datagram from client `index`, acknowledging what it has received.
    func send(_ message: SignalMessage, from index: Int) {
        let client = clients[index]
        let bytes = try! SignalDatagram(connectionID: client.connectionID, sequence: 0, ack: client.acknowledged,
                                        message: message).serialized()
        bytes.withUnsafeBytes { core.handle($0, from: client.address, now: clock.now) }
        clients[index].ackOwed = false
    }

    /// Reads the signalling among the queued datagrams from `start` on as the clients receive it, then lets
    /// every client that owes an acknowledgement send one; repeats while that makes the relay send more.
    func answerSignalling(queuedFrom start: Int) {
        var start = start
        while start < core.output.count {
            let end = core.output.count
            var answering: [Int] = []
            for i in start..<end {
                let datagram = core.output[i]
                guard datagram.bytes.first == Signalling.magic, let index = clientByAddress[datagram.to] else { continue }
                if let session = clients[index].session {
                    _ = session.handle(datagram.bytes, from: Self.relayAddress, now: clock.monotonic)
                    answering.append(index)
                } else {
                    receive(try! SignalDatagram(parsing: datagram.bytes), at: index)
                }
            }
            for index in answering { sendSessionOutput(index) }
            for index in clients.indices where clients[index].ackOwed { send(.ack, from: index) }
            start = end
        }
    }

    /// Sends a keepalive ping from every client whose interval has passed.
    func sendDuePings() {
        let interval = core.shared.config.keepaliveInterval
        for index in clients.indices where clock.monotonic - clients[index].lastPing >= interval {
            if let session = clients[index].session {
                _ = session.tick(now: clock.monotonic)
                sendSessionOutput(index)
            } else {
                send(.ping(timestamp: UInt64(clock.now.unixMilliseconds)), from: index)
            }
            clients[index].lastPing = clock.monotonic
        }
    }

    private func receive(_ datagram: SignalDatagram, at index: Int) {
        if datagram.sequence != 0 {
            // In order: advance; a retransmission of something held: acknowledge again; ahead: wait for the gap.
            if datagram.sequence == clients[index].acknowledged &+ 1 { clients[index].acknowledged = datagram.sequence }
            clients[index].ackOwed = true
        }
        switch datagram.message {
        case .retry(let cookie):
            clients[index].cookie = cookie
        case .welcome(let welcome):
            clients[index].connectionID = datagram.connectionID
            clients[index].ssrc = welcome.ssrc
        case .refused(let code, let reason):
            fail("the relay refused \(clients[index].identity): \(code) \(reason)")
        case .goodbye(let code, let reason):
            fail("the relay dropped \(clients[index].identity): \(code) \(reason)")
        default:
            break
        }
    }
}
