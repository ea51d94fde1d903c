import ParleyWire

/// One device of an online identity, through which calls and direct texts are routed. An identity may have several
/// (`PresenceDirectory`). A device is either a Parley client's signalling session without a room, or a web page's
/// private event stream (`GET /v1/presence/events`): the relay tells the page what it would tell the client, as
/// events (`PresenceDirectory.send`), and the page acts through the API (`RelayCore+WebPresence.swift`).
/// Presence sessions live only on worker 0 (the public port's owner), so routing needs no cross-worker state.
final class Presence {
    /// How the relay reaches the device.
    enum Link {
        /// A Parley client: handshake results, channel, keepalive, path validation.
        case signalling(RelaySession)
        /// A web page: the id of the HTTP event stream its notices go to. It lives as long as that stream.
        case web(stream: UInt64)
        /// In a cluster: a caller online on another node, standing in for it in the call its node asked this one to
        /// ring (what it is told goes to that node, `RelayCore+ClusterPresence.swift`). Never in the directory.
        case remote(node: UInt64)
    }

    /// Relay-wide unique id (from the member id counter); the `memberID` of its welcome and of texts it sends.
    let id: UInt32
    let link: Link
    /// Token `sub`.
    let identity: String
    /// Display name.
    let name: String
    let registeredAtUnixMilliseconds: Int64
    /// The call this session takes part in (calling, ringing or answered), if any: one at a time.
    var call: Call?
    /// A web page's calls: the id it gave its last one (a client chooses its own; the relay chooses a page's).
    var lastWebCallID: UInt32 = 0
    /// In a cluster: the call this session placed to an identity online on another node, which runs it there.
    var remoteCall: (node: UInt64, callID: UInt32)?
    /// A `sip:` address called through the SIP gateway (`CallRouter.sipStandIn`): online only for its one call.
    var isSIPStandIn = false

    init(id: UInt32, session: RelaySession, registeredAt: Int64) {
        self.id = id
        link = .signalling(session)
        identity = session.identity
        name = session.name
        registeredAtUnixMilliseconds = registeredAt
    }

    init(id: UInt32, webStream: UInt64, identity: String, name: String, registeredAt: Int64) {
        self.id = id
        link = .web(stream: webStream)
        self.identity = identity
        self.name = name
        registeredAtUnixMilliseconds = registeredAt
    }

    init(id: UInt32, remoteNode: UInt64, identity: String, name: String, registeredAt: Int64) {
        self.id = id
        link = .remote(node: remoteNode)
        self.identity = identity
        self.name = name
        registeredAtUnixMilliseconds = registeredAt
    }

    /// Whether this stands in for a caller on another node.
    var isRemote: Bool {
        if case .remote = link { return true }
        return false
    }

    /// The signalling session of a Parley client; nil for a web page.
    var session: RelaySession? {
        if case .signalling(let s) = link { return s }
        return nil
    }

    /// The event stream of a web page; nil for a Parley client.
    var webStream: UInt64? {
        if case .web(let stream) = link { return stream }
        return nil
    }
}

/// A read-only view of one presence session of an online identity (for the HTTP API and tests): an identity online
/// from several devices has one entry per device.
public struct PresenceSnapshot: Sendable, Equatable {
    /// The identity (token `sub`).
    public var identity: String
    /// Display name from the token.
    public var name: String
    /// Its current address (0.0.0.0:0 for a web page, which has none the relay sends to).
    public var address: PeerAddress
    /// Registered at (Unix ms).
    public var registeredAtUnixMilliseconds: Int64
    /// The relay id of the call it is in (or that rings on it), if any.
    public var callID: UInt32?
    /// This session's relay id (the member id of its welcome), telling an identity's devices apart.
    public var presenceID: UInt32 = 0
    /// How many presence sessions (devices) its identity has online.
    public var sessions: Int = 1
    /// `parley` (a client's signalling session) or `web` (a page's event stream).
    public var transport: String = "parley"
}
