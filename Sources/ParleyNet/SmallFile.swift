/// Whole-file reads of small files that report no size, such as those in /proc (open, read until end of file, close).
public enum SmallFile {
    /// The bytes of the file at `path`, or nil when it cannot be opened.
    public static func contents(of path: String, calls: SystemCalls = .kernel) -> [UInt8]? {
        let fd = path.withCString { calls.openForReading($0) }
        guard fd >= 0 else { return nil }
        defer { _ = calls.close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { calls.read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            bytes += chunk[0..<n]
        }
        return bytes
    }
}
