/// Presence and one-to-one calls over signalling version 1: the value types the new messages carry.
///
/// A presence session is a signalling session without a room: `register` (like `join` without a room) is
/// answered by the usual cookie round trip and a `welcome` whose room is empty and whose mode is "presence".
/// Calls and direct texts then travel on that session's reliable channel.

/// A presence registration: the first datagram of a presence session, repeated with the relay's cookie.
public struct RegisterRequest: Equatable, Sendable {
    /// The signed token (JWT); its identity goes online. Its `room` claim, if any, is ignored.
    public var token: String
    /// The relay's address-verification cookie, empty on first contact.
    public var cookie: [UInt8]
    /// 16 random bytes chosen by the client; echoed in the welcome.
    public var nonce: [UInt8]

    /// A registration.
    public init(token: String, cookie: [UInt8] = [], nonce: [UInt8]) {
        self.token = token
        self.cookie = cookie
        self.nonce = nonce
    }
}

/// Where a call stands, as the relay reports it in `callStatus`. The numeric values are part of the protocol.
public enum CallState: UInt8, Equatable, Sendable, CaseIterable {
    /// The callee is online and is being rung (to the caller).
    case ringing = 1
    /// The callee accepted; `room` and `token` name the private call room (to both).
    case answered = 2
    /// The callee declined, or is busy in another call (reason "busy") (to the caller).
    case declined = 3
    /// Nobody answered within the ring timeout (to the caller; the callee gets `ended`).
    case noAnswer = 4
    /// The callee is not online (to the caller).
    case unavailable = 5
    /// The call is over: hung up, cancelled, connection lost, … (the reason says which).
    case ended = 6
    /// The request could not be carried out (reason says why: call id in use, calling oneself, …).
    case failed = 7

    /// True for every state after which the call id is free again.
    public var isFinal: Bool { self != .ringing && self != .answered }
}

/// End-to-end key shares as signalling carries them: absent, or exactly one X25519 public key.
public enum CallKeyShare {
    /// The only length a present share may have.
    public static let length = 32
}

/// The relay's report on one call.
public struct CallStatus: Equatable, Sendable {
    /// The call, as the receiving party knows it (the caller's own id; the id `incomingCall` gave the callee).
    public var callID: UInt32
    /// The new state.
    public var state: CallState
    /// Why, for people ("busy", "hung up by alice", "connection lost"); may be empty.
    public var reason: String
    /// With `answered`: the private call room; else empty.
    public var room: String
    /// With `answered`: a relay-minted join token for `room`, for the receiving party only; else empty.
    public var token: String
    /// With `answered`, to the caller: the callee's end-to-end key share as the callee sent it (32 bytes), or empty
    /// when the callee sent none; else empty.
    public var keyShare: [UInt8]

    /// A call status.
    public init(callID: UInt32, state: CallState, reason: String = "", room: String = "", token: String = "", keyShare: [UInt8] = []) {
        self.callID = callID
        self.state = state
        self.reason = reason
        self.room = room
        self.token = token
        self.keyShare = keyShare
    }
}
