/// One thing that happened on the relay, as the HTTP API's event stream reports it.
public struct RelayEvent: Sendable, Equatable {
    /// What happened. The raw values are the `type` of the event stream's JSON.
    public enum Kind: String, Sendable, Equatable, CaseIterable {
        case roomStarted = "room_started", roomClosed = "room_closed"
        case memberJoined = "member_joined", memberLeft = "member_left"
        case memberMuted = "member_muted", memberUnmuted = "member_unmuted"
        case callStarted = "call_started", callAnswered = "call_answered", callEnded = "call_ended"
        /// A text to the whole room (`detail`; `identity` its sender, `backend` for the API's; `attachments` its images).
        /// Direct texts are not events.
        case text = "text"
        /// The room's speakers changed: `detail` lists their identities, loudest first, comma-separated (empty: nobody).
        case speakers = "speakers"
        /// An audience room's audience count changed (`detail`: the count; at most once per `audienceUpdateInterval`).
        case audience = "audience"
        /// The room is being recorded from now on (`detail`: the recording's id).
        case recordingStarted = "recording_started"
        /// The room's recording ended (`detail`: "id: why").
        case recordingStopped = "recording_stopped"
        /// A SIP phone in the room pressed a key (RFC 4733): `identity` the call's member, `detail` the key (`0`-`9`,
        /// `*`, `#`, `A`-`D`). On the room's event streams only (no webhook, not logged: keys may be a PIN or a card
        /// number meant for whoever reads them).
        case dtmf = "dtmf"

        // Private events: only the web page whose presence stream `recipient` names sees them.
        /// The page is online for calls and direct texts: `detail` is its presence stream's id, which its requests name.
        case presenceOnline = "presence_online"
        /// The page is no longer online (`detail`: why, e.g. replaced by a newer device).
        case presenceOffline = "presence_offline"
        /// A call rings on the page: `identity` calls (`detail`: their display name), `call` has its id.
        case incomingCall = "incoming_call"
        /// A call of the page changed state (`call`): ringing, answered (with the call room and its token), declined, …
        case callStatus = "call_status"
        /// A direct text to the page: from `identity`, the text in `detail`, its images in `attachments`.
        case directText = "direct_text"

        // Operator events (`operatorOnly`): on no event stream, only to the relay's webhooks.
        /// A direct text was kept for `detail`, who is away (or has not accepted the sender's chat yet): `identity`
        /// sent it, `attachments` its images. The text itself is not in the event.
        case textHeld = "text_held"
    }

    /// What a private call event says.
    public struct CallNotice: Sendable, Equatable {
        /// The call as the page knows it.
        public var callID: UInt32
        /// `ringing`, `answered`, `declined`, `no_answer`, `unavailable`, `ended` or `failed`.
        public var state: String
        /// Why, for people ("busy", "hung up by bob"); may be empty.
        public var reason: String
        /// With `answered`: the page's join token for the call room (`room`).
        public var token: String
        /// With an incoming call: the identity called (the device's own; for the SIP gateway's stand-in, the address).
        public var callee: String

        /// A call notice.
        public init(callID: UInt32, state: String, reason: String, token: String, callee: String = "") {
            self.callee = callee
            self.callID = callID
            self.state = state
            self.reason = reason
            self.token = token
        }
    }

    /// What happened.
    public var kind: Kind
    /// The room concerned (empty for calls not yet answered).
    public var room: String
    /// The member concerned (for calls: the caller).
    public var identity: String
    /// Free text: why a member left or a room closed, the callee and outcome of a call.
    public var detail: String
    /// When (Unix ms).
    public var unixMilliseconds: Int64
    /// 0 for an event anyone with access to its stream may see; else the presence stream of the one web page it is for.
    public var recipient: UInt64 = 0
    /// With `incomingCall` and `callStatus`: the call.
    public var call: CallNotice?
    /// With `text` and `directText`: the image ids the text carries (`TextAttachments`), as its sender gave them.
    public var attachments: [String] = []
    /// With `callStarted`, `callAnswered` and `callEnded`: the call as the router logged it (its callee, its end's
    /// reason as a value), for the webhooks.
    public var callEvent: CallEvent?
    /// True for an event no event stream shows (not even the backend's `/v1/events`): only the webhooks get it.
    public var operatorOnly = false
    /// With `memberJoined` and `memberLeft` in a cluster: the member is another node's (a cascaded room's), whose own
    /// node sends the webhooks for it.
    public var otherNode = false

    /// An event.
    public init(kind: Kind, room: String, identity: String = "", detail: String = "", unixMilliseconds: Int64,
                recipient: UInt64 = 0, call: CallNotice? = nil, attachments: [String] = []) {
        self.attachments = attachments
        self.kind = kind
        self.room = room
        self.identity = identity
        self.detail = detail
        self.unixMilliseconds = unixMilliseconds
        self.recipient = recipient
        self.call = call
    }

    /// The relay event that reports a call event.
    public init(_ call: CallEvent) {
        let kind: Kind = switch call.kind {
        case .started: .callStarted
        case .answered: .callAnswered
        case .ended: .callEnded
        }
        var detail = "callee \(call.callee)"
        if let reason = call.endReason { detail += "; \(reason.rawValue)" }
        if !call.detail.isEmpty { detail += "; \(call.detail)" }
        self.init(kind: kind, room: call.room, identity: call.caller, detail: detail, unixMilliseconds: call.unixMilliseconds)
        self.callEvent = call
    }
}

/// A bounded buffer of events not yet drained: when full, the oldest are dropped (and counted).
public struct RelayEventLog: Sendable {
    /// Events kept at most.
    public let capacity: Int
    private(set) var pending: [RelayEvent] = []
    /// Events dropped because nobody drained them in time.
    public private(set) var overwritten: UInt64 = 0
    /// Bumped on every append: the worker rebuilds its published snapshot only when this moved (or members exist).
    public private(set) var revision: UInt64 = 0

    /// An empty log.
    public init(capacity: Int) { self.capacity = max(1, capacity) }

    mutating func append(_ event: RelayEvent) {
        revision &+= 1
        if pending.count >= capacity {
            pending.removeFirst()
            overwritten &+= 1
        }
        pending.append(event)
    }

    /// The events since the last drain, oldest first.
    public mutating func drain() -> [RelayEvent] {
        if pending.isEmpty { return [] }
        defer { pending.removeAll(keepingCapacity: true) }
        return pending
    }
}
