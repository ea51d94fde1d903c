import Glibc

/// The only place this target makes file syscalls: open/read/write/pwrite/close with EINTR retried and
/// failures turned into `AudioIOError`s carrying the errno text.
final class POSIXFile {
    private(set) var fd: CInt
    let path: String

    /// The errno text, e.g. "No space left on device".
    static func errnoText(_ code: CInt = errno) -> String {
        String(cString: strerror(code))
    }

    /// `open(2)` for reading.
    static func openForReading(_ path: String) throws(AudioIOError) -> POSIXFile {
        let fd = retryingEINTR { open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { throw AudioIOError("cannot open \(path): \(errnoText())") }
        return POSIXFile(fd: fd, path: path)
    }

    /// `open(2)` for writing, creating or truncating the file.
    static func createTruncating(_ path: String) throws(AudioIOError) -> POSIXFile {
        let fd = retryingEINTR { open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
        guard fd >= 0 else { throw AudioIOError("cannot create \(path): \(errnoText())") }
        return POSIXFile(fd: fd, path: path)
    }

    /// Reads the whole file from the current offset to its end.
    func readToEnd() throws(AudioIOError) -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { raw in
                POSIXFile.retryingEINTR { read(fd, raw.baseAddress, raw.count) }
            }
            if n < 0 { throw AudioIOError("cannot read \(path): \(POSIXFile.errnoText())") }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// Writes all of `bytes` at the current offset (retrying short writes).
    func writeAll(_ bytes: UnsafeRawBufferPointer) throws(AudioIOError) {
        var done = 0
        while done < bytes.count {
            let n = POSIXFile.retryingEINTR { write(fd, bytes.baseAddress! + done, bytes.count - done) }
            if n < 0 { throw AudioIOError("cannot write \(path): \(POSIXFile.errnoText())") }
            if n == 0 { throw AudioIOError("cannot write \(path): \(POSIXFile.errnoText(ENOSPC))") }
            done += n
        }
    }

    /// Writes all of `bytes` at `offset` without moving the file offset (`pwrite(2)`).
    func writeAll(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(AudioIOError) {
        var done = 0
        while done < bytes.count {
            let n = POSIXFile.retryingEINTR {
                pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            }
            if n < 0 { throw AudioIOError("cannot write \(path): \(POSIXFile.errnoText())") }
            if n == 0 { throw AudioIOError("cannot write \(path): \(POSIXFile.errnoText(ENOSPC))") }
            done += n
        }
    }

    init(fd: CInt, path: String) {
        self.fd = fd
        self.path = path
    }

    /// Whether `close()` has not been called yet.
    var isOpen: Bool { fd >= 0 }

    /// Writes all of `bytes` at the current offset.
    func writeAll(_ bytes: [UInt8]) throws(AudioIOError) {
        let failure: AudioIOError? = bytes.withUnsafeBytes { raw in
            do throws(AudioIOError) { try writeAll(raw) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// Writes all of `bytes` at `offset` without moving the file offset.
    func writeAll(_ bytes: [UInt8], at offset: Int) throws(AudioIOError) {
        let failure: AudioIOError? = bytes.withUnsafeBytes { raw in
            do throws(AudioIOError) { try writeAll(raw, at: offset) } catch { return error }
            return nil
        }
        if let failure { throw failure }
    }

    /// `close(2)`. Not retried on EINTR: on Linux the descriptor is released either way. Later calls do nothing.
    func close() throws(AudioIOError) {
        guard fd >= 0 else { return }
        let result = Glibc.close(fd)
        fd = -1
        if result != 0 { throw AudioIOError("cannot close \(path): \(POSIXFile.errnoText())") }
    }

    deinit {
        if fd >= 0 { _ = Glibc.close(fd) }
    }

    private static func retryingEINTR<T: BinaryInteger>(_ call: () -> T) -> T {
        while true {
            let result = call()
            if result < 0 && errno == EINTR { continue }
            return result
        }
    }
}
