import ParleyAuth
import ParleyWire

/// Who may be a member of a room: the one rule the native join, the WebRTC routes (WHIP, WHEP, `webrtc`) and every
/// other member route of the HTTP API (a room's events, members and texts) apply to a verified token.
///
///     the room claim admits the room   the same name, or a pattern `team-*` (TokenVerifier.roomClaim)
///     the token grants `join`          a token with no grants, or `join: false`, is no member of anything
///     a call room is its parties'      `call-…` only with the token the relay minted for it (`CallRoom`)
///
/// An admin token (the backend's) is not a member: the HTTP API lets it through the member routes by its `admin`
/// grant, and the native join applies this rule to it like to any token.
public enum RoomAdmission {
    /// Why the verified `claims` may not be a member of `room` (the refusal code a native join answers and a reason
    /// for people), or nil when they may.
    public static func refusal(_ claims: TokenClaims, room: String) -> (code: RefusalCode, reason: String)? {
        do throws(TokenError) {
            try TokenVerifier.check(claims, admitsTo: room, requiring: \.join, grantName: "join")
        } catch {
            return (RefusalCode(error), error.reason)
        }
        return CallRoom.refusal(claims, room: room).map { (code: $0.0, reason: $0.1) }
    }
}
