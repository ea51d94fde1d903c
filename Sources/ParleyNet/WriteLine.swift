/// Writes a line to a file descriptor (stdout/stderr without the non-Sendable C globals).
public func writeLine(_ text: String, fd: Int32 = 1, calls: SystemCalls = .kernel) {
    var line = text
    line.append("\n")
    line.withUTF8 { buf in
        var offset = 0
        while offset < buf.count {
            let n = calls.write(fd, buf.baseAddress! + offset, buf.count - offset)
            if n <= 0 { return }
            offset += n
        }
    }
}
