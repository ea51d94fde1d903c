import Foundation
import ParleyRelayCore

/// One webhook event as a receiver gets it: the body `{"id","type","timestamp","data"}`, made once and sent as it is
/// on every attempt (its `id` is the `webhook-id` header; a retry or a redelivery after a restart reuses both). Pure.
public struct WebhookEvent: Sendable, Equatable {
    /// The stable id (`msg_` and 22 random base64url characters).
    public var id: String
    /// `room.started`, `room.finished`, `member.joined`, `member.left`, `recording.finished`, `call.ringing`,
    /// `call.answered`, `call.missed` or `text.held`.
    public var type: String
    /// Events with the same key reach each receiver in the order they happened: `room:<name>` for a room's events,
    /// `call:<id>` for a call's, `text:<recipient>` for texts held for one identity.
    public var orderKey: String
    /// When it happened (Unix ms).
    public var unixMilliseconds: Int64
    /// The JSON body, as signed and sent.
    public var body: String

    /// Every type a receiver may get.
    public static let types = [
        "room.started", "room.finished", "member.joined", "member.left", "recording.finished",
        "call.ringing", "call.answered", "call.missed", "text.held",
    ]

    /// An event of `type` with `data`; the body's keys sorted, its timestamp RFC 3339 in UTC with milliseconds.
    public init(id: String, type: String, orderKey: String, unixMilliseconds: Int64, data: [String: Any]) {
        self.id = id
        self.type = type
        self.orderKey = orderKey
        self.unixMilliseconds = unixMilliseconds
        let object: [String: Any] = [
            "id": id, "type": type, "timestamp": Self.timestamp(unixMilliseconds), "data": data,
        ]
        let json =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        body = String(decoding: json, as: UTF8.self)
    }

    /// An event read back from the outbox.
    init(id: String, type: String, orderKey: String, unixMilliseconds: Int64, body: String) {
        self.id = id
        self.type = type
        self.orderKey = orderKey
        self.unixMilliseconds = unixMilliseconds
        self.body = body
    }

    /// `2021-02-21T16:22:10.123Z` for a Unix time in milliseconds.
    static func timestamp(_ ms: Int64) -> String {
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(ms - seconds * 1000))
    }

    /// A new random id: `msg_` and 16 random bytes in base64url (22 characters).
    public static func newID(_ random: [UInt8]) -> String {
        "msg_"
            + Data(random).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The webhook event a relay event stands for, with `id`; nil for events webhooks do not carry (speakers,
    /// texts to rooms, a page's private events, calls that ended after an answer or by a decline, …). `node`: in a
    /// cluster, the id of the node that sends it, added to the data.
    public static func from(_ e: RelayEvent, id: String, node: String? = nil) -> WebhookEvent? {
        guard let (type, orderKey, data) = mapped(e) else { return nil }
        var withNode = data
        if let node { withNode["node"] = node }
        return WebhookEvent(
            id: id, type: type, orderKey: orderKey, unixMilliseconds: e.unixMilliseconds, data: withNode)
    }

    /// A relay event's type, order key and data; nil for those webhooks do not carry.
    private static func mapped(_ e: RelayEvent) -> (String, String, [String: Any])? {
        let room = "room:" + e.room
        switch e.kind {
        case .roomStarted:
            let parts = e.detail.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return (
                "room.started", room,
                ["room": e.room, "mode": parts.first ?? "", "audience": parts.contains("audience")]
            )
        case .roomClosed:
            return ("room.finished", room, ["room": e.room, "reason": e.detail])
        case .memberJoined:
            return ("member.joined", room, ["room": e.room, "identity": e.identity, "name": e.detail])
        case .memberLeft:
            return ("member.left", room, ["room": e.room, "identity": e.identity, "reason": e.detail])
        case .callStarted, .callAnswered, .callEnded:
            guard let call = e.callEvent else { return nil }
            var data: [String: Any] = ["call_id": Int(call.callID), "caller": call.caller, "callee": call.callee]
            let type: String
            switch call.kind {
            case .started: type = "call.ringing"
            case .answered: type = "call.answered"; data["room"] = call.room
            case .ended:
                guard let reason = call.endReason, missedReasons.contains(reason) else { return nil }
                type = "call.missed"
                data["reason"] = reason.rawValue
                data["detail"] = call.detail
            }
            return (type, "call:\(call.callID)", data)
        case .textHeld:
            return (
                "text.held", "text:" + e.detail,
                ["from": e.identity, "to": e.detail, "attachments": e.attachments.count]
            )
        default:
            return nil
        }
    }

    /// The ends of a call that count as missed for its callee: nobody answered, the callee was not online (the hook
    /// for a push notification), the caller gave up while it rang, or the callee was busy in another call.
    static let missedReasons: Set<CallEndReason> = [.noAnswer, .unavailable, .cancelled, .busy]

    /// `recording.finished`: the recording `name` of `room`, why it stopped, and its files (name, kind, bytes,
    /// duration; a track's identity).
    public static func recordingFinished(
        id: String, name: String, room: String, reason: String, unixMilliseconds: Int64,
        files: [[String: Any]]
    ) -> WebhookEvent {
        WebhookEvent(
            id: id, type: "recording.finished", orderKey: "room:" + room, unixMilliseconds: unixMilliseconds,
            data: ["recording": name, "room": room, "reason": reason, "files": files])
    }
}
