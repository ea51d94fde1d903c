import Glibc

/// A new owner-only file written from start to end (a recording's track): made with `O_EXCL` (never over another
/// file, never through a symbolic link), each `append` one `write(2)` of whole units (Ogg pages), so a process killed
/// at any moment leaves a file that ends on a unit boundary unless the disk filled mid-write. Not thread-safe: one
/// owner thread. Every call through `SystemCalls`.
public final class AppendFile {
    /// Its path.
    public let path: String
    private var fd: Int32
    private let calls: SystemCalls
    /// Bytes written.
    public private(set) var size = 0

    /// Creates the file at `path` (mode 0600); EEXIST when something is there already.
    public init(creating path: String, calls: SystemCalls = .kernel) throws(SystemError) {
        self.path = path
        self.calls = calls
        fd = path.withCString { calls.openFile($0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw SystemError("open \(path)", -fd) }
    }

    deinit { if fd >= 0 { _ = calls.close(fd) } }

    /// Writes all of `bytes` (retrying short writes); ENOSPC and other failures are thrown, what was written stays.
    public func append(_ bytes: [UInt8]) throws(SystemError) {
        guard fd >= 0 else { throw SystemError("write \(path)", EBADF) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { calls.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n == -Int(EINTR) { continue }
            guard n > 0 else { throw SystemError("write \(path)", n < 0 ? Int32(-n) : EIO) }
            written += n
            size += n
        }
    }

    /// Flushes to disk and closes; later appends fail.
    public func close() {
        guard fd >= 0 else { return }
        _ = calls.fsync(fd)
        _ = calls.close(fd)
        fd = -1
    }
}

extension PrivateFile {
    /// Replaces the file at `path` with `bytes` in one step (a temporary file beside it, mode 0600, flushed, then
    /// `rename(2)` over it): a reader sees the old file or the new one, never a part.
    public static func replace(_ bytes: [UInt8], at path: String, calls: SystemCalls = .kernel) throws(SystemError) {
        let temporary = path + ".\(String(UInt64.random(in: 0...UInt64.max), radix: 36)).tmp"
        let file = try AppendFile(creating: temporary, calls: calls)
        do {
            try file.append(bytes)
        } catch {
            file.close()
            _ = temporary.withCString { calls.unlink($0) }
            throw error
        }
        file.close()
        let rc = temporary.withCString { t in path.withCString { calls.rename(t, $0) } }
        guard rc == 0 else {
            _ = temporary.withCString { calls.unlink($0) }
            throw SystemError("rename \(path)", -rc)
        }
    }
}
