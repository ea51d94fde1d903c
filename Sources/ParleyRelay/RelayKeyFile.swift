import ParleyAuth
import ParleyCrypto
import ParleyNet

/// The relay's long-term identity key on disk: `<state_dir>/relay-key`, the 32 raw bytes of an X25519 secret key
/// (`X25519KeyPair`), made on first start and read on every later one.
///
/// ```
/// state_dir/              0700 (made with any missing parents; refused when group or others may write to it)
///   relay-key             0600, exactly 32 bytes (refused when group or others may read it, or of another size)
///   .relay-key.XXXX       the key being written: 0600, O_EXCL, fsync'd, then linked to relay-key and removed
/// ```
///
/// The new key appears under its name in one step (`PrivateFile.publish`: `link(2)` of a complete file, which unlike
/// `rename` never replaces a key already there). Two relays starting at once on one state directory therefore never
/// read half a key, and they end up with the same one: the loser of the race reads the winner's. Startup only; every
/// problem is a `ConfigError` naming the path and what to do.
public enum RelayKeyFile {
    /// The key file's name inside the state directory.
    public static let fileName = "relay-key"

    /// What `loadOrCreate` found.
    public struct Loaded {
        /// The relay's key pair.
        public var keyPair: X25519KeyPair
        /// True when this call made the key (first start on this state directory).
        public var created: Bool
        /// The key file's path.
        public var path: String
    }

    /// The state directory when `state_dir` is not set: `$XDG_STATE_HOME/parley-relay`, else
    /// `$HOME/.local/state/parley-relay` (the XDG base directory default); for root (`userID` 0) `/var/lib/parley-relay`,
    /// where a system service keeps its state. Nil when neither helps (not root, and no absolute HOME).
    public static func defaultStateDirectory(environment: [String: String], userID: UInt32) -> String? {
        if userID == 0 { return "/var/lib/parley-relay" }
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") { return xdg + "/parley-relay" }
        if let home = environment["HOME"], home.hasPrefix("/") {
            return (home.hasSuffix("/") ? String(home.dropLast()) : home) + "/.local/state/parley-relay"
        }
        return nil
    }

    /// The key pair kept in `directory`, made (with the directory) when there is none yet.
    public static func loadOrCreate(stateDirectory directory: String) throws(ConfigError) -> Loaded {
        guard !directory.isEmpty else { throw ConfigError("state_dir is empty") }
        let status: PrivateFile.Status
        do {
            status = try PrivateFile.makeDirectory(directory)
        } catch {
            throw ConfigError("cannot create state directory \(directory) (\(error)): set state_dir (--state-dir, PARLEY_STATE_DIR) to a directory this user may create")
        }
        guard status.isDirectory else { throw ConfigError("state_dir \(directory) is not a directory") }
        guard status.permissions & 0o022 == 0 else {
            throw ConfigError("state directory \(directory) may be written by group or others (mode \(octal(status.permissions))): chmod 700 \(directory)")
        }
        let path = (directory.hasSuffix("/") ? String(directory.dropLast()) : directory) + "/" + fileName
        if let keyPair = try load(path) { return Loaded(keyPair: keyPair, created: false, path: path) }
        let made = X25519KeyPair()
        let published: Bool
        do {
            published = try PrivateFile.publish(made.secretKey, at: path)
        } catch {
            throw ConfigError("cannot write relay key \(path) (\(error))")
        }
        if published { return Loaded(keyPair: made, created: true, path: path) }
        // Another relay published its key first: use that one.
        guard let theirs = try load(path) else { throw ConfigError("relay key \(path) vanished while starting; start again") }
        return Loaded(keyPair: theirs, created: false, path: path)
    }

    /// The key pair in the file at `path`; nil when there is no such file.
    static func load(_ path: String) throws(ConfigError) -> X25519KeyPair? {
        let found: (status: PrivateFile.Status, bytes: [UInt8])?
        do {
            found = try PrivateFile.read(path, limit: X25519KeyPair.keyLength)
        } catch {
            throw ConfigError("cannot read relay key \(path) (\(error))")
        }
        guard let (status, bytes) = found else { return nil }
        guard status.isRegularFile else { throw ConfigError("relay key \(path) is not a regular file") }
        guard status.permissions & 0o077 == 0 else {
            throw ConfigError("relay key \(path) may be read by group or others (mode \(octal(status.permissions))): chmod 600 \(path), and make a new key (move the file away) if others may have read it")
        }
        guard status.size == X25519KeyPair.keyLength, bytes.count == X25519KeyPair.keyLength else {
            throw ConfigError("relay key \(path) is \(status.size) bytes, not \(X25519KeyPair.keyLength): it is not a relay key (move it away and a new key is made)")
        }
        guard let pair = X25519KeyPair(secretKey: bytes) else { throw ConfigError("relay key \(path) is not an X25519 secret key") }
        return pair
    }

    private static func octal(_ permissions: UInt32) -> String {
        let digits = String(permissions, radix: 8)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
