import Glibc
import ParleyAuth
import ParleyCrypto

/// The relay's long-term identity key on disk: `<state_dir>/relay-key`, the 32 raw bytes of an X25519 secret key
/// (`X25519KeyPair`), made on first start and read on every later one.
///
/// ```
/// state_dir/            0700 (made with any missing parents; refused when group or others may write to it)
///   relay-key           0600, exactly 32 bytes (refused when group or others may read it, or of another size)
///   .relay-key.PID.XXXX the key being written: created 0600 with O_EXCL, written, fsync'd, then linked to relay-key
/// ```
///
/// The new key appears under its name in one step: `link(2)` of a complete temporary file, which (unlike `rename`)
/// never replaces a key already there. Two relays starting at once on one state directory therefore never read half
/// a key, and they end up with the same one: the loser of the race reads the winner's. Startup only, never on the
/// packet path; every problem is a `ConfigError` naming the path and what to do.
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
    /// where a system service keeps its state. Nil when neither variable helps (not root and no HOME).
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
        try makeDirectory(directory)
        let path = (directory.hasSuffix("/") ? String(directory.dropLast()) : directory) + "/" + fileName
        if let keyPair = try load(path) { return Loaded(keyPair: keyPair, created: false, path: path) }
        let made = X25519KeyPair()
        if try publish(made.secretKey, at: path) { return Loaded(keyPair: made, created: true, path: path) }
        // Another relay published its key first: use that one.
        guard let theirs = try load(path) else { throw ConfigError("relay key \(path) vanished while starting; start again") }
        return Loaded(keyPair: theirs, created: false, path: path)
    }

    /// Makes `directory` and its missing parents with mode 0700; refuses one that group or others may write to.
    static func makeDirectory(_ directory: String) throws(ConfigError) {
        guard !directory.isEmpty else { throw ConfigError("state_dir is empty") }
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw ConfigError("cannot create state directory \(directory) (\(prefix): \(errorText())): set state_dir (--state-dir, PARLEY_STATE_DIR) to a directory this user may create")
            }
        }
        var info = stat()
        guard stat(directory, &info) == 0 else { throw ConfigError("cannot read state directory \(directory): \(errorText())") }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw ConfigError("state_dir \(directory) is not a directory") }
        guard info.st_mode & 0o022 == 0 else {
            throw ConfigError("state directory \(directory) may be written by group or others (mode \(octal(info.st_mode))): chmod 700 \(directory)")
        }
    }

    /// The key pair in the file at `path`; nil when there is no such file.
    static func load(_ path: String) throws(ConfigError) -> X25519KeyPair? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw ConfigError("cannot open relay key \(path): \(errorText())")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw ConfigError("cannot read relay key \(path): \(errorText())") }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ConfigError("relay key \(path) is not a regular file") }
        guard info.st_mode & 0o077 == 0 else {
            throw ConfigError("relay key \(path) may be read by group or others (mode \(octal(info.st_mode))): chmod 600 \(path), and make a new key (move the file away) if others may have read it")
        }
        let size = Int(info.st_size)
        guard size == X25519KeyPair.keyLength else {
            throw ConfigError("relay key \(path) is \(size) bytes, not \(X25519KeyPair.keyLength): it is not a relay key (move it away and a new key is made)")
        }
        var secret = [UInt8](repeating: 0, count: X25519KeyPair.keyLength)
        var filled = 0
        while filled < secret.count {
            let n = secret.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw ConfigError("cannot read relay key \(path): \(n == 0 ? "it ended early" : errorText())") }
            filled += n
        }
        guard let pair = X25519KeyPair(secretKey: secret) else { throw ConfigError("relay key \(path) is not an X25519 secret key") }
        return pair
    }

    /// Writes `secret` to a temporary file and links it to `path`; false when `path` appeared meanwhile.
    static func publish(_ secret: [UInt8], at path: String) throws(ConfigError) -> Bool {
        let suffix = Base64URL.encode(Crypto.randomBytes(6))
        let temporary = String(path[..<path.lastIndex(of: "/")!]) + "/.\(fileName).\(getpid()).\(suffix)"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw ConfigError("cannot create relay key \(temporary): \(errorText())") }
        defer { unlink(temporary) }
        var written = 0
        while written < secret.count {
            let n = secret.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let why = errorText()
                close(fd)
                throw ConfigError("cannot write relay key \(temporary): \(why)")
            }
            written += n
        }
        let synced = fsync(fd) == 0 ? 0 : errno
        guard close(fd) == 0, synced == 0 else { throw ConfigError("cannot write relay key \(temporary): \(errorText())") }
        if link(temporary, path) == 0 { return true }
        if errno == EEXIST { return false }
        // A file system without hard links: rename, which would replace a key that appeared in between.
        guard rename(temporary, path) == 0 else { throw ConfigError("cannot create relay key \(path): \(errorText())") }
        return true
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }

    private static func octal(_ mode: mode_t) -> String {
        let bits = String(mode & 0o777, radix: 8)
        return String(repeating: "0", count: max(0, 4 - bits.count)) + bits
    }
}
