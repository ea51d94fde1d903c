import Glibc

/// Files only their owner may read, for secrets a program keeps across restarts (the relay's identity key): a
/// directory made 0700, a file read without following a symbolic link, and a new file that appears under its name in
/// one step, complete, and never over one already there.
///
/// Blocking calls, every one through `SystemCalls`: at startup, or on a thread that may wait on the disk (the HTTP API's
/// threads store attachments with them), never on a worker loop. Permission policy (which modes to refuse) is the
/// caller's: these report the mode they found.
public enum PrivateFile {
    /// A file's type and permission bits (`st_mode`) and its size.
    public struct Status: Equatable, Sendable {
        /// `st_mode`: the type (`isRegularFile`, `isDirectory`) and the permission bits (`permissions`).
        public var mode: UInt32
        /// Size in bytes.
        public var size: Int
        /// The permission bits, e.g. 0o600.
        public var permissions: UInt32 { mode & 0o7777 }
        /// A regular file.
        public var isRegularFile: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
        /// A directory.
        public var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
    }

    /// Makes `directory` and each missing parent with mode 0700 (one that exists is left as it is) and returns the
    /// status of `directory`; ENOTDIR when it is not a directory.
    public static func makeDirectory(_ directory: String, calls: SystemCalls = .kernel) throws(SystemError) -> Status {
        var prefix = directory.hasPrefix("/") ? "" : "."
        for component in directory.split(separator: "/") {
            prefix += "/" + component
            let rc = prefix.withCString { calls.makeDirectory($0, 0o700) }
            if rc < 0 && rc != -EEXIST { throw SystemError("mkdir \(prefix)", -rc) }
        }
        let fd = directory.withCString { calls.openFile($0, O_RDONLY | O_DIRECTORY, 0) }
        guard fd >= 0 else { throw SystemError("open \(directory)", -fd) }
        defer { _ = calls.close(fd) }
        return try status(fd, directory, calls: calls)
    }

    /// The status of the file at `path` and, when it is a regular file of at most `limit` bytes, its bytes; nil when
    /// there is no such file. A symbolic link is refused (`O_NOFOLLOW`: ELOOP), not followed, unless `followingLinks`
    /// (files another tool keeps up to date behind a link, such as certbot's TLS keys): then the status is the target's.
    public static func read(_ path: String, limit: Int, followingLinks: Bool = false,
                            calls: SystemCalls = .kernel) throws(SystemError) -> (status: Status, bytes: [UInt8])? {
        let fd = path.withCString { calls.openFile($0, O_RDONLY | (followingLinks ? 0 : O_NOFOLLOW), 0) }
        if fd == -ENOENT { return nil }
        guard fd >= 0 else { throw SystemError("open \(path)", -fd) }
        defer { _ = calls.close(fd) }
        let found = try status(fd, path, calls: calls)
        guard found.isRegularFile, found.size <= limit else { return (found, []) }
        var bytes = [UInt8](repeating: 0, count: found.size)
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { calls.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 { throw SystemError("read \(path)", Int32(-n)) }
            if n == 0 { break }
            filled += n
        }
        if filled < bytes.count { bytes.removeLast(bytes.count - filled) }  // in place: no second copy of a secret
        return (found, bytes)
    }

    /// Writes `bytes` to a new file beside `path` (mode 0600, `O_EXCL`), flushes it to disk, and links it to `path`
    /// (`link(2)`, which never replaces a file); the temporary name is removed either way. False when `path` existed
    /// already (another process published first: read theirs). On a file system without hard links it renames instead.
    public static func publish(_ bytes: [UInt8], at path: String, calls: SystemCalls = .kernel) throws(SystemError) -> Bool {
        let slash = path.lastIndex(of: "/")
        let folder = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        // Uniqueness only: O_EXCL turns a collision into an error, never into two writers of one file.
        let temporary = folder + ".\(name).\(String(UInt64.random(in: 0...UInt64.max), radix: 36))"
        let fd = temporary.withCString { calls.openFile($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600) }
        guard fd >= 0 else { throw SystemError("open \(temporary)", -fd) }
        defer { _ = temporary.withCString { calls.unlink($0) } }
        var written = 0
        var failure: SystemError?
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { calls.write(fd, $0.baseAddress! + written, $0.count - written) }
            guard n > 0 else { failure = SystemError("write \(temporary)", n < 0 ? Int32(-n) : EIO); break }
            written += n
        }
        if failure == nil, case let rc = calls.fsync(fd), rc < 0 { failure = SystemError("fsync \(temporary)", -rc) }
        if calls.close(fd) < 0, failure == nil { failure = SystemError("close \(temporary)", EIO) }
        if let failure { throw failure }
        let linked = temporary.withCString { t in path.withCString { calls.link(t, $0) } }
        if linked == 0 { return true }
        if linked == -EEXIST { return false }
        guard linked == -EPERM || linked == -EOPNOTSUPP || linked == -ENOSYS else { throw SystemError("link \(path)", -linked) }
        let renamed = temporary.withCString { t in path.withCString { calls.rename(t, $0) } }
        guard renamed == 0 else { throw SystemError("rename \(path)", -renamed) }
        return true
    }

    private static func status(_ fd: Int32, _ path: String, calls: SystemCalls) throws(SystemError) -> Status {
        var info = stat()
        let rc = calls.fileStatus(fd, &info)
        guard rc == 0 else { throw SystemError("fstat \(path)", -rc) }
        return Status(mode: UInt32(info.st_mode), size: Int(info.st_size))
    }
}
