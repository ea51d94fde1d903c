import ParleyAuth
import ParleyWire

/// The private two-member room an answered call opens, and the rule that keeps it private.
///
/// Rooms named `call-…` are reserved. On answer the relay names one `call-` + 32 random hex digits and mints
/// each party a join token for exactly that room carrying the claim `"call": true`. Any worker can check such a
/// token without shared state, so the room may live on whichever worker its name hashes to: a join to a `call-`
/// room is refused `privateRoom` unless its token names that room and carries the claim, and the room holds at
/// most two members. (An application backend holding an API secret can mint such tokens too — by design.)
enum CallRoom {
    /// Prefix of every call room's name.
    static let prefix = "call-"
    /// Members a call room admits.
    static let capacity = 2

    /// Whether `name` is a (reserved) call room name.
    static func isCallRoom(_ name: String) -> Bool { name.hasPrefix(prefix) }

    /// A fresh, unguessable call room name.
    static func newName(_ random: RelayRandom) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var name = Array(prefix.utf8)
        for b in random.bytes(16) {
            name.append(digits[Int(b >> 4)])
            name.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: name, as: UTF8.self)
    }

    /// Why a verified token may not join `room`, or nil when it may (any room that is not a call room).
    static func refusal(_ claims: TokenClaims, room: String) -> (RefusalCode, String)? {
        guard isCallRoom(room), claims.call != true || claims.room != room else { return nil }
        return (.privateRoom, "room \(room) is a private call room; only its two parties may join it")
    }

    /// The join token of one party: that room only, join/publish/subscribe/create, `call: true`, and `relay_key` when
    /// the relay has a key (no other relay takes the token).
    static func token(identity: String, name: String, room: String, signer: TokenSigner, relayKey: String? = nil, now: Moment,
                      lifetimeSeconds: Int64) -> String {
        signer.mint(TokenClaims(identity: identity, name: name.isEmpty ? nil : name, room: room,
                                expiresAt: now.unixSeconds + lifetimeSeconds, issuedAt: now.unixSeconds,
                                grants: Grants(join: true, publish: true, subscribe: true, admin: false, create: true),
                                mode: "forward", call: true, relayKey: relayKey))
    }
}
