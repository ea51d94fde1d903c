import ParleyAuth
import ParleyWire

/// Rooms whose media the application encrypts end to end (token claim `e2ee`): the relay forwards such payloads
/// unread, but a mix room decodes, sums and re-encodes every stream on the relay, which end-to-end encryption rules
/// out. The relay therefore refuses an `e2ee` token in a mix room (existing, or about to be created by the token),
/// rather than admit a member whose audio it would turn into noise or whose promise of secrecy it would break.
enum EndToEndRoom {
    /// The refusal for a join with `claims` into `room` of `mode`, or nil when they go together.
    static func refusal(_ claims: TokenClaims, room: String, mode: RoomMode) -> (RefusalCode, String)? {
        guard claims.endToEnd == true, mode == .mix else { return nil }
        return (.endToEndInMixRoom,
                "room \(room) is a mix room: the relay decodes and mixes its audio, so it cannot be end-to-end encrypted (use a forward room)")
    }
}
