import ParleyRelayCore
import ParleySIP
import ParleyWire

/// The SIP gateway's way into rooms: each call is a plain-RTP member (cleartext on loopback: the gateway runs in this
/// process), added and removed through the room's worker as the HTTP API's endpoints are.
public final class SIPRooms: SIPRoomDirectory {
    let api: RelayAPI
    /// Where the gateway's loopback sockets reach the relay's UDP port (its bound address, loopback for a wildcard).
    let relayHost: PeerAddress

    /// Calls join through `api`; `udp` is the relay's UDP address (its bound one).
    public init(api: RelayAPI, udp: PeerAddress) {
        self.api = api
        let loopback = udp.isIPv4 ? PeerAddress(ipv4: 127, 0, 0, 1, port: 0) : PeerAddress(high: 0, low: 1, port: 0)
        relayHost = udp.isWildcard ? loopback : udp.withPort(0)
    }

    /// Adds the call as a cleartext plain-RTP member sending from and receiving at `source` (loopback).
    public func join(room: String, identity: String, name: String?, source: PeerAddress)
        -> Result<SIPRoomLeg, SIPRoomError> {
        let result = api.execute(.addRTPEndpoint(room: room, identity: identity, name: name, publish: true,
                                                 subscribe: true, sourceAddress: source, receiveAddress: source,
                                                 keys: nil))
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

    /// Removes the call's member (without waiting for the worker).
    public func leave(room: String, identity: String) {
        api.post(.removeRTPEndpoint(room: room, identity: identity))
    }
}
