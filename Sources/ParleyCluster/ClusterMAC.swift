import ParleyAuth
import ParleyCrypto

/// A MAC only the cluster's nodes can make, over what they keep in Redis: node records, room claims, online lists
/// (`directory`) and kept texts (`texts`). Redis has no say in who the nodes are: anyone who can write to it could
/// write anything, so a node believes only what carries this MAC.
///
/// The key is derived from the cluster's root (`CascadeCipher.root`, from the API secret every node shares) with a
/// label per purpose, and the MAC (BLAKE2b-256 keyed, 43 base64url characters) covers its parts in one unambiguous
/// encoding: each part as `<UTF-8 length>:<bytes>`, the first part naming what it is (`"node"`, `"room"`, …), so a MAC
/// made for one thing never verifies for another.
public struct ClusterMAC: Sendable {
    private let key: [UInt8]

    /// What a key is for.
    public enum Purpose: String, Sendable {
        case directory = "parley directory v1"
        case texts = "parley texts v1"
    }

    /// The MAC of `purpose` for the cluster whose root is `root` (32 bytes).
    public init(root: [UInt8], purpose: Purpose) {
        key = KeyedHash.derive(root: root, label: purpose.rawValue)
    }

    /// Characters of a MAC as written (32 bytes, unpadded base64url).
    public static let textLength = 43

    /// The MAC of `parts`, as written in Redis.
    public func mac(_ parts: [String]) -> String {
        Base64URL.encode(KeyedHash.hash(key: key, message: Self.encoded(parts)))
    }

    /// Whether `mac` is the MAC of `parts` (compared in constant time).
    public func verifies(_ mac: String, _ parts: [String]) -> Bool {
        guard mac.utf8.count == Self.textLength, let given = Base64URL.decode(Substring(mac)) else { return false }
        return Crypto.constantTimeEqual(given, KeyedHash.hash(key: key, message: Self.encoded(parts)))
    }

    /// `parts`, each as `<UTF-8 length>:<bytes>`.
    static func encoded(_ parts: [String]) -> [UInt8] {
        var out: [UInt8] = []
        for p in parts {
            out += Array(String(p.utf8.count).utf8)
            out.append(UInt8(ascii: ":"))
            out += Array(p.utf8)
        }
        return out
    }
}
