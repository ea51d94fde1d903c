import BenchmarkSupport
import ParleyAuth
import ParleyRelayCore
import ParleyWire

/// One member as the benchmark plays it (adapted from forward-bench): it joins through the relay's real
/// signalling (join, retry with cookie, welcome) with a token whose claim asks for a mix-mode room,
/// acknowledges every reliable message, pings every keepalive interval, and counts the mixed packets it
/// receives. No other client logic.
struct SimulatedClient {
    let identity: String
    let roomName: String
    let roomIndex: Int
    let address: PeerAddress
    /// From the welcome (0 before).
    var connectionID: UInt32 = 0
    /// From the welcome.
    var ssrc: UInt32 = 0
    /// The mode the welcome reported.
    var mode = ""
    /// The cookie of the last retry answer.
    var cookie: [UInt8]?
    /// Highest reliable sequence received in order: the `ack` of every datagram the client sends.
    var acknowledged: UInt32 = 0
    /// A reliable message arrived since the client last sent anything.
    var ackOwed = false
    var lastPing = Instant.origin
    /// Mixed RTP packets received while measuring.
    var mixedReceived = 0
    /// Forwarded RTP packets received while measuring (a hybrid room's speakers).
    var forwardedReceived = 0
}

extension Scenario {
    /// Joins client `index` exactly as a client would: a join without cookie, the `retry` answer, the same join
    /// with the cookie, the `welcome` (connection id, SSRC, mode); then acknowledges everything the join caused.
    func join(_ index: Int, signer: TokenSigner, publish: Bool) {
        let client = clients[index]
        let mode = shape.hybrid ? RoomMode.hybrid : RoomMode.mix
        let claims = TokenClaims(identity: client.identity, room: client.roomName,
                                 expiresAt: clock.now.unixSeconds + 365 * 86_400, grants: Grants(publish: publish), mode: mode.rawValue)
        var request = JoinRequest(token: signer.mint(claims), room: client.roomName, nonce: Crypto.randomBytes(16))
        send(.join(request), from: index)
        drain()
        guard let cookie = clients[index].cookie else { fail("no retry answered \(client.identity)'s first join") }

        request.cookie = cookie
        send(.join(request), from: index)
        drain()
        guard clients[index].connectionID != 0 else { fail("no welcome answered \(client.identity)'s join with cookie") }
        guard clients[index].mode == mode.rawValue else { fail("\(client.identity) joined a \(clients[index].mode) room, not a \(mode) room") }
        clients[index].lastPing = clock.monotonic
    }

    /// Sends one signalling datagram from client `index`, acknowledging what it has received. The core's
    /// handling of it is core work: timed as signalling while measuring.
    func send(_ message: SignalMessage, from index: Int) {
        let client = clients[index]
        let bytes = try! SignalDatagram(connectionID: client.connectionID, sequence: 0, ack: client.acknowledged,
                                        message: message).serialized()
        bytes.withUnsafeBytes { datagram in
            measure(&window.signalling, if: measuring) { core.handle(datagram, from: client.address, now: clock.now) }
        }
        clients[index].ackOwed = false
    }

    /// Sends a keepalive ping from every client whose interval has passed.
    func sendDuePings() {
        let interval = core.shared.config.keepaliveInterval
        for index in clients.indices where clock.monotonic - clients[index].lastPing >= interval {
            send(.ping(timestamp: UInt64(clock.now.unixMilliseconds)), from: index)
            clients[index].lastPing = clock.monotonic
        }
    }

    /// Client `index` receives one signalling datagram.
    func receive(_ datagram: SignalDatagram, at index: Int) {
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
            clients[index].mode = welcome.mode
        case .refused(let code, let reason):
            fail("the relay refused \(clients[index].identity): \(code) \(reason)")
        case .goodbye(let code, let reason):
            fail("the relay dropped \(clients[index].identity): \(code) \(reason)")
        default:
            break
        }
    }
}
