/// Where a cluster sends a client: another node's UDP address and that node's relay key (its X25519 public key), so
/// that the client insists on that key in the handshake there and its token reaches no one else. Written as text, the
/// address, one space, and the key in unpadded base64url:
///
///     127.0.0.1:7410 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo
///     [2001:db8::1]:7400 hYx1Qw0mVb3Jr8mJm6eWq3zQ9oT3nCk1Lk2Yq5r8sHo
///
/// It is what a refusal `roomElsewhere` and a goodbye `moved` carry as their reason, and each of a welcome's
/// `alternates` (all sealed: only the node that proved its own key in the handshake could have said it).
public struct NodePointer: Equatable, Sendable, CustomStringConvertible {
    /// The node's UDP address (worker 0).
    public var address: PeerAddress
    /// The node's relay key: 43 base64url characters, the canonical text of 32 bytes.
    public var relayKey: String

    /// Characters of a relay key.
    public static let keyLength = 43
    /// The longest pointer: a bracketed IPv6 address with its port (47), a space and the key.
    public static let maxLength = 47 + 1 + keyLength

    /// A pointer to `address` with `relayKey`; nil unless the key is the canonical base64url text of 32 bytes.
    public init?(address: PeerAddress, relayKey: String) {
        guard Self.isCanonicalKey(relayKey) else { return nil }
        self.address = address
        self.relayKey = relayKey
    }

    /// Parses "ADDRESS KEY". `badField` for anything else: no space, an address `PeerAddress` does not parse, a key
    /// that is not 43 canonical base64url characters, or more than `maxLength` bytes.
    public init(parsing text: String) throws(WireError) {
        guard text.utf8.count <= Self.maxLength else { throw .badLength }
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 2, let address = PeerAddress(parsing: String(parts[0])) else { throw .badField }
        guard let pointer = NodePointer(address: address, relayKey: String(parts[1])) else { throw .badField }
        self = pointer
    }

    public var description: String { "\(address) \(relayKey)" }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Whether `key` is 43 base64url characters whose last one leaves no bits over (the only text of its 32 bytes).
    static func isCanonicalKey(_ key: String) -> Bool {
        let bytes = Array(key.utf8)
        guard bytes.count == keyLength else { return false }
        var last = 0
        for b in bytes {
            guard let value = alphabet.firstIndex(of: b) else { return false }
            last = value
        }
        return last & 0b11 == 0  // 43 × 6 = 258 bits: the last 2 are padding
    }
}
