import CSodium

/// BLAKE2b-256 with a key (libsodium's `crypto_generichash`): how a cluster derives a key for each purpose from its
/// root (`CascadeCipher.root`), and the MAC its nodes put on what they keep in Redis.
public enum KeyedHash {
    /// Bytes of a hash (and of a derived key).
    public static let length = 32

    /// BLAKE2b-256 of `message` under `key` (16 to 64 bytes).
    public static func hash(key: [UInt8], message: [UInt8]) -> [UInt8] {
        precondition((16...64).contains(key.count), "a BLAKE2b key has 16 to 64 bytes")
        Sodium.ensureReady()
        var out = [UInt8](repeating: 0, count: length)
        var empty: UInt8 = 0  // an empty array may have no base address; libsodium reads nothing for length 0
        message.withUnsafeBufferPointer { m in
            withUnsafePointer(to: &empty) { e in
                _ = crypto_generichash(&out, length, m.baseAddress ?? e, UInt64(m.count), key, key.count)
            }
        }
        return out
    }

    /// The key for one purpose (`label`, e.g. "parley directory v1"): BLAKE2b-keyed(root, label). Keys for
    /// different labels are unrelated, so a MAC made for one purpose never verifies for another.
    public static func derive(root: [UInt8], label: String) -> [UInt8] {
        hash(key: root, message: Array(label.utf8))
    }
}
