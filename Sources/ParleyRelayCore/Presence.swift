import ParleyWire

/// One device of an online identity: a signalling session without a room, through which calls and direct texts are
/// routed. An identity may have several (`PresenceDirectory`).
/// Presence sessions live only on worker 0 (the public port's owner), so routing needs no cross-worker state.
final class Presence {
    /// Relay-wide unique id (from the member id counter); the `memberID` of its welcome and of texts it sends.
    let id: UInt32
    /// The signalling session (handshake results, channel, keepalive, path validation).
    let session: SignallingSession
    let registeredAtUnixMilliseconds: Int64
    /// The call this session takes part in (calling, ringing or answered), if any: one at a time.
    var call: Call?

    init(id: UInt32, session: SignallingSession, registeredAt: Int64) {
        self.id = id
        self.session = session
        self.registeredAtUnixMilliseconds = registeredAt
    }

    /// Token `sub`.
    var identity: String { session.identity }
    /// Display name.
    var name: String { session.name }
}

/// A read-only view of one presence session of an online identity (for the HTTP API and tests): an identity online
/// from several devices has one entry per device.
public struct PresenceSnapshot: Sendable, Equatable {
    /// The identity (token `sub`).
    public var identity: String
    /// Display name from the token.
    public var name: String
    /// Its current address.
    public var address: PeerAddress
    /// Registered at (Unix ms).
    public var registeredAtUnixMilliseconds: Int64
    /// The relay id of the call it is in (or that rings on it), if any.
    public var callID: UInt32?
    /// This session's relay id (the member id of its welcome), telling an identity's devices apart.
    public var presenceID: UInt32 = 0
    /// How many presence sessions (devices) its identity has online.
    public var sessions: Int = 1
}
