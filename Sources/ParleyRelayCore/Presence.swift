import ParleyWire

/// One online identity: a signalling session without a room, through which calls and direct texts are routed.
/// Presence sessions live only on worker 0 (the public port's owner), so routing needs no cross-worker state.
final class Presence {
    /// Relay-wide unique id (from the member id counter); the `memberID` of its welcome and of texts it sends.
    let id: UInt32
    let connectionID: UInt32
    let identity: String
    let name: String
    let sessionSecret: [UInt8]
    let nonce: [UInt8]
    let token: String
    let registeredAtUnixMilliseconds: Int64
    var address: PeerAddress
    var viaPublicPort: Bool
    var lastHeard: Int64
    /// Path validation (`PathChallenge`): the issue time of the last challenge this session answered (each is
    /// single-use), and when it was last sent one (at most one per `RelayCore.pathChallengeInterval`).
    var pathValidatedAt: Int64 = .min
    var lastChallengeSent: Int64 = .min / 2
    var channel = ReliableChannel()
    var texts = TextReassembler()
    /// The call this identity is in (ringing or answered), if any: one at a time.
    var call: Call?

    init(id: UInt32, connectionID: UInt32, identity: String, name: String, sessionSecret: [UInt8], nonce: [UInt8],
         token: String, registeredAt: Int64, address: PeerAddress, viaPublicPort: Bool, now: Int64) {
        self.id = id
        self.connectionID = connectionID
        self.identity = identity
        self.name = name
        self.sessionSecret = sessionSecret
        self.nonce = nonce
        self.token = token
        self.registeredAtUnixMilliseconds = registeredAt
        self.address = address
        self.viaPublicPort = viaPublicPort
        self.lastHeard = now
    }
}

/// Worker 0's presence state: online identities by address, connection and identity, the calls between them,
/// and the log of recent call events. Owned by one `RelayCore` (one thread).
final class PresenceDirectory {
    var byAddress: [PeerAddress: Presence] = [:]
    var byConnection: [UInt32: Presence] = [:]
    var byIdentity: [String: Presence] = [:]
    /// Calls ringing or answered, by relay call id.
    var calls: [UInt32: Call] = [:]
    var events: CallEventLog
    private var lastCallID: UInt32 = 0

    init(eventCapacity: Int) { events = CallEventLog(capacity: eventCapacity) }

    /// A fresh relay call id, never 0 and never one in use.
    func nextCallID() -> UInt32 {
        repeat { lastCallID &+= 1 } while lastCallID == 0 || calls[lastCallID] != nil
        return lastCallID
    }

    func add(_ p: Presence) {
        byAddress[p.address] = p
        byConnection[p.connectionID] = p
        byIdentity[p.identity] = p
    }

    func remove(_ p: Presence) {
        if byAddress[p.address] === p { byAddress[p.address] = nil }
        if byIdentity[p.identity] === p { byIdentity[p.identity] = nil }
        byConnection[p.connectionID] = nil
    }
}

/// A read-only view of an online identity (for the HTTP API and tests).
public struct PresenceSnapshot: Sendable, Equatable {
    /// The identity (token `sub`).
    public var identity: String
    /// Display name from the token.
    public var name: String
    /// Its current address.
    public var address: PeerAddress
    /// Registered at (Unix ms).
    public var registeredAtUnixMilliseconds: Int64
    /// The relay id of the call it is in, if any.
    public var callID: UInt32?
}
