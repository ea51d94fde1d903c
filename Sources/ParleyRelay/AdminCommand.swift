import Dispatch
import ParleyRelayCore
import ParleyWire
import Synchronization

/// A command from the HTTP API to the worker that owns a room. Executed by that worker in its loop.
public enum AdminCommand: Sendable, Equatable {
    /// Create an empty room (nil = the relay's defaults).
    case createRoom(name: String, mode: RoomMode?, maxMembers: Int?, emptyTimeout: Interval?, audience: Bool = false)
    /// Close a room, telling every member why.
    case closeRoom(name: String)
    /// Kick a member out of a room.
    case kick(room: String, identity: String)
    /// Mute or unmute a member.
    case mute(room: String, identity: String, muted: Bool)
    /// Send a text to everyone in a room from the backend, with the image ids it carries (`TextAttachments`);
    /// `keepRequest`: the HTTP request the message store answers when it kept the text or could not (0: none).
    case message(room: String, text: String, attachments: [String] = [], keepRequest: UInt64 = 0)
    /// Send a text to everyone in a room from one of its members (the web page writing through the API).
    case memberMessage(room: String, identity: String, text: String, attachments: [String] = [], keepRequest: UInt64 = 0)
    /// Add a plain-RTP endpoint to a room: RTP accepted only from `sourceAddress`, media sent only to `receiveAddress`
    /// (each defaults to the other; see `RTPEndpoints.create`).
    case addRTPEndpoint(room: String, identity: String, name: String?, publish: Bool, subscribe: Bool, sourceAddress: PeerAddress?,
                        receiveAddress: PeerAddress?, keys: RTPEndpointKeys?)
    /// Remove a plain-RTP endpoint.
    case removeRTPEndpoint(room: String, identity: String)
    /// Add a WebRTC member with what its offer negotiated (`createMode`: open the room in that mode when missing).
    case addWebRTCMember(room: String, identity: String, name: String?, createMode: RoomMode?, terms: WebRTCOfferTerms)
    /// End a WebRTC member's session.
    case removeWebRTCMember(room: String, identity: String)
    /// An ICE restart (WHIP/WHEP `PATCH`): the browser's new credentials.
    case restartWebRTCICE(room: String, identity: String, remoteUfrag: String, remotePassword: String)
    /// A web page's presence stream opened: the page is online as `identity` (see `RelayCore+WebPresence.swift`).
    case openWebPresence(stream: UInt64, identity: String, name: String)
    /// A web page's presence stream closed (`identity` nil), or the page says it leaves (its token's identity).
    case closeWebPresence(stream: UInt64, identity: String?)
    /// A web page calls `callee`.
    case webCall(stream: UInt64, identity: String, callee: String)
    /// A web page accepts or declines a call ringing on it.
    case webAnswer(stream: UInt64, identity: String, callID: UInt32, accept: Bool)
    /// A web page hangs up, cancels or declines a call.
    case webHangUp(stream: UInt64, identity: String, callID: UInt32)
    /// A web page sends a direct text.
    case webDirectText(stream: UInt64, identity: String, to: String, text: String)

    /// Start recording a room under `id` (`RelayCore+Recording.swift`).
    case startRecording(room: String, id: UInt64, mixdown: Bool = false)
    /// Stop a room's recording.
    case stopRecording(room: String)

    /// The message store could not keep a room text: its sender's session is told (`RelayCore.roomTextNotKept`).
    case roomTextNotKept(room: String, identity: String, connection: UInt32, messageID: UInt32, delivered: Bool, reason: String)
    /// The message store kept (or could not keep) a direct text (`RelayCore+StoredTexts.swift`).
    case textStored(from: String, connection: UInt32, messageID: UInt32, stored: Bool, reason: String)
    /// The message store's texts for an identity now online.
    case deliverWaiting(identity: String, texts: [KeptText])
    /// Kept texts that failed (expired, declined).
    case textsFailed([KeptText])
    /// A web page answers a chat request.
    case webAnswerChat(stream: UInt64, identity: String, requester: String, accept: Bool)
    /// The message store's chats (another node of a cluster changed one): they replace worker 0's copy.
    case replaceChats([ChatBook.Chat])

    /// Drain one worker (a cluster node before a restart): `RelayCore.drain`.
    case drain(worker: Int)
    /// One worker's core settings replaced (a reload): `RelayCore.reconfigure`.
    case reconfigure(worker: Int, RelayCoreConfig)

    /// Whether the command is about presence (calls, direct texts), which lives on worker 0, rather than a room.
    public var isPresence: Bool {
        switch self {
        case .openWebPresence, .closeWebPresence, .webCall, .webAnswer, .webHangUp, .webDirectText: true
        case .textStored, .deliverWaiting, .textsFailed, .webAnswerChat, .replaceChats: true
        default: false
        }
    }

    /// The room the command is about (which decides the worker); empty for presence commands.
    public var room: String {
        switch self {
        case .openWebPresence, .closeWebPresence, .webCall, .webAnswer, .webHangUp, .webDirectText, .drain,
             .reconfigure: ""
        case .textStored, .deliverWaiting, .textsFailed, .webAnswerChat, .replaceChats: ""
        case .createRoom(let name, _, _, _, _), .closeRoom(let name): name
        case .kick(let room, _), .mute(let room, _, _), .message(let room, _, _, _), .memberMessage(let room, _, _, _, _): room
        case .roomTextNotKept(let room, _, _, _, _, _): room
        case .startRecording(let room, _, _), .stopRecording(let room): room
        case .addRTPEndpoint(let room, _, _, _, _, _, _, _), .removeRTPEndpoint(let room, _): room
        case .addWebRTCMember(let room, _, _, _, _), .removeWebRTCMember(let room, _), .restartWebRTCICE(let room, _, _, _): room
        }
    }

    /// Runs the command on `core` (the owning worker's, on its thread).
    public func apply(to core: RelayCore, now: Moment) -> AdminResult {
        switch self {
        case .createRoom(let name, let mode, let maxMembers, let emptyTimeout, let audience):
            core.createRoom(name: name, mode: mode, maxMembers: maxMembers, emptyTimeout: emptyTimeout, audience: audience, now: now)
        case .closeRoom(let name): core.closeRoom(name: name, reason: "closed by the backend", now: now)
        case .drain: core.drain(now: now)
        case .reconfigure(_, let config): core.reconfigure(config)
        case .startRecording(let room, let id, let mixdown): core.startRecording(room: room, id: id, mixdown: mixdown, now: now)
        case .stopRecording(let room): core.stopRecording(room: room, now: now)
        case .kick(let room, let identity): core.kick(room: room, identity: identity, now: now)
        case .mute(let room, let identity, let muted): core.setMuted(room: room, identity: identity, muted: muted, now: now)
        case .message(let room, let text, let images, let request):
            core.sendText(room: room, text: text, attachments: images, keepRequest: request, now: now)
        case .memberMessage(let room, let identity, let text, let images, let request):
            core.sendText(room: room, text: text, attachments: images, fromIdentity: identity, asMember: true, keepRequest: request, now: now)
        case .roomTextNotKept(let room, let identity, let connection, let messageID, let delivered, let reason):
            core.messaging.roomTextNotKept(room: room, identity: identity, connection: connection, messageID: messageID, delivered: delivered,
                                 reason: reason, now: now)
        case .addRTPEndpoint(let room, let identity, let name, let publish, let subscribe, let sourceAddress, let receiveAddress, let keys):
            core.createRTPEndpoint(room: room, identity: identity, displayName: name, publish: publish, subscribe: subscribe,
                                   source: sourceAddress, receive: receiveAddress, keys: keys, now: now)
        case .removeRTPEndpoint(let room, let identity): core.deleteRTPEndpoint(room: room, identity: identity, now: now)
        case .addWebRTCMember(let room, let identity, let name, let createMode, let terms):
            core.createWebRTCMember(room: room, identity: identity, displayName: name, createMode: createMode, terms: terms, now: now)
        case .removeWebRTCMember(let room, let identity): core.deleteWebRTCMember(room: room, identity: identity, now: now)
        case .restartWebRTCICE(let room, let identity, let ufrag, let password):
            core.restartWebRTCICE(room: room, identity: identity, remoteUfrag: ufrag, remotePassword: password, now: now)
        case .openWebPresence(let stream, let identity, let name): core.messaging.openWebPresence(stream: stream, identity: identity, name: name, now: now)
        case .closeWebPresence(let stream, let identity): core.messaging.closeWebPresence(stream: stream, identity: identity, now: now)
        case .webCall(let stream, let identity, let callee): core.messaging.webCall(stream: stream, identity: identity, callee: callee, now: now)
        case .webAnswer(let stream, let identity, let callID, let accept):
            core.messaging.webAnswer(stream: stream, identity: identity, callID: callID, accept: accept, now: now)
        case .webHangUp(let stream, let identity, let callID): core.messaging.webHangUp(stream: stream, identity: identity, callID: callID, now: now)
        case .webDirectText(let stream, let identity, let to, let text):
            core.messaging.webDirectText(stream: stream, identity: identity, to: to, text: text, now: now)
        case .textStored(let from, let connection, let messageID, let stored, let reason):
            core.messaging.textStored(from: from, connection: connection, messageID: messageID, stored: stored, reason: reason, now: now)
        case .deliverWaiting(let identity, let texts): core.messaging.deliverWaiting(to: identity, texts: texts, now: now)
        case .textsFailed(let texts): core.messaging.textsFailed(texts, now: now)
        case .webAnswerChat(let stream, let identity, let requester, let accept):
            core.messaging.webAnswerChat(stream: stream, identity: identity, requester: requester, accept: accept, now: now)
        case .replaceChats(let chats): core.messaging.replaceChats(chats)
        }
    }
}

/// A one-shot answer from a worker to the waiting HTTP thread.
public final class ReplyBox: Sendable {
    private let value = Mutex<AdminResult?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    /// An empty box.
    public init() {}

    /// Called once by the worker.
    public func fulfil(_ result: AdminResult) {
        value.withLock { $0 = result }
        ready.signal()
    }

    /// The answer, or nil when none came within `seconds`.
    public func wait(seconds: Double) -> AdminResult? {
        guard ready.wait(timeout: .now() + seconds) == .success else { return nil }
        return value.withLock { $0 }
    }
}
