import ParleyNet
import ParleyRelayCore
import ParleySIP
import ParleyWire

/// The SIP gateway's way into the relay: each call a plain-RTP member of its room (cleartext on loopback: the gateway
/// runs in this process), added and removed through the room's worker as the HTTP API's endpoints are; and each SIP
/// party of a call to or from an identity a device online for calls, as a web page is (`openWebPresence` on worker
/// 0, the gateway's streams from `SIPGateway.firstStream` on), the relay's notices to those streams handed back to
/// the gateway.
public final class SIPRooms: SIPRoomDirectory {
    let api: RelayAPI
    /// Where the gateway's loopback sockets reach the relay's UDP port (its bound address, loopback for a wildcard).
    let relayHost: PeerAddress

    /// Calls join through `api`; `udp` is the relay's UDP address (its bound one). The notices for the gateway's
    /// streams go to `api.sipGateway` from now on.
    public init(api: RelayAPI, udp: PeerAddress) {
        self.api = api
        let loopback = udp.isIPv4 ? PeerAddress(ipv4: 127, 0, 0, 1, port: 0) : PeerAddress(high: 0, low: 1, port: 0)
        relayHost = udp.isWildcard ? loopback : udp.withPort(0)
        api.events.addObserver { [api] events in
            guard events.contains(where: { $0.recipient >= SIPGateway.firstStream }),
                  let gateway = api.sipGateway.withLock({ $0 }) else { return }
            for e in events where e.recipient >= SIPGateway.firstStream {
                guard let notice = Self.notice(e) else { continue }
                gateway.deliver(notice)
            }
        }
    }

    /// A private event for one of the gateway's streams as a notice; nil for what the gateway has no use for.
    static func notice(_ e: RelayEvent) -> SIPCallNotice? {
        guard let call = e.call else { return nil }
        switch e.kind {
        case .incomingCall:
            return SIPCallNotice(stream: e.recipient, callID: call.callID,
                                 kind: .incoming(from: e.identity, name: e.detail, callee: call.callee))
        case .callStatus:
            return SIPCallNotice(stream: e.recipient, callID: call.callID,
                                 kind: .status(state: call.state, reason: call.reason, room: e.room))
        default:
            return nil
        }
    }

    /// Adds the call as a cleartext plain-RTP member sending from and receiving at `source` (loopback). A call's
    /// private room is opened first when it is not yet (the SIP side may be the first of the two in it).
    public func join(room: String, identity: String, name: String?, source: PeerAddress)
        -> Result<SIPRoomLeg, SIPRoomError> {
        let add = AdminCommand.addRTPEndpoint(room: room, identity: identity, name: name, publish: true,
                                              subscribe: true, sourceAddress: source, receiveAddress: source, keys: nil)
        var result = api.execute(add)
        if case .notFound? = result, room.hasPrefix("call-") {
            _ = api.execute(.createRoom(name: room, mode: .forward, maxMembers: nil, emptyTimeout: nil))
            result = api.execute(add)
        }
        switch result {
        case .rtpEndpoint(let info)?:
            return .success(SIPRoomLeg(relay: relayHost.withPort(info.port), payloadType: info.payloadType,
                                       audioLevelExtensionID: info.audioLevelExtensionID))
        case .notFound(let why)?: return .failure(SIPRoomError(status: 404, reason: "Not Found", detail: why))
        case .forbidden(let why)?, .conflict(let why)?:
            return .failure(SIPRoomError(status: 403, reason: "Forbidden", detail: why))
        case .unavailable(let why)?: return .failure(SIPRoomError(status: 486, reason: "Busy Here", detail: why))
        case .invalid(let why)?: return .failure(SIPRoomError(status: 503, reason: "Service Unavailable", detail: why))
        case nil:
            let why = "the worker did not answer"
            return .failure(SIPRoomError(status: 503, reason: "Service Unavailable", detail: why))
        default: return .failure(SIPRoomError(status: 503, reason: "Service Unavailable", detail: "\(result!)"))
        }
    }

    /// Publishes the key pressed as a `dtmf` event of the room.
    public func keyed(room: String, identity: String, digit: Character) {
        api.events.publish([RelayEvent(kind: .dtmf, room: room, identity: identity, detail: String(digit),
                                       unixMilliseconds: Int64(Clock.unixMilliseconds()))])
    }

    /// Removes the call's member (without waiting for the worker).
    public func leave(room: String, identity: String) {
        api.post(.removeRTPEndpoint(room: room, identity: identity))
    }

    /// Puts the SIP party online on worker 0.
    public func openPresence(stream: UInt64, identity: String, name: String) -> Bool {
        api.execute(.openWebPresence(stream: stream, identity: identity, name: name)) == .ok
    }

    /// Takes the SIP party offline (without waiting).
    public func closePresence(stream: UInt64) {
        api.post(.closeWebPresence(stream: stream, identity: nil))
    }

    /// Places the SIP party's call.
    public func placeCall(stream: UInt64, identity: String, callee: String) -> UInt32? {
        let placed = api.execute(.webCall(stream: stream, identity: identity, callee: callee))
        if case .webCall(let id)? = placed { return id }
        return nil
    }

    /// Accepts or declines a call ringing on the SIP party (without waiting).
    public func answerCall(stream: UInt64, identity: String, callID: UInt32, accept: Bool) {
        api.post(.webAnswer(stream: stream, identity: identity, callID: callID, accept: accept))
    }

    /// Hangs up the SIP party's call (without waiting).
    public func hangUp(stream: UInt64, identity: String, callID: UInt32) {
        api.post(.webHangUp(stream: stream, identity: identity, callID: callID))
    }
}
