import Foundation
import Glibc

/// A TCP connection to a loopback port, opened from a chosen loopback source address (127.0.0.2, ...: every
/// 127/8 address is local on Linux, so one test plays several clients), for the attacks on the HTTP API: idle
/// connections, a slowloris, an event-stream reader that stops reading. Plain blocking syscalls; the test owns it.
final class RawTCP {
    let fd: Int32

    /// Connects to 127.0.0.1:`port` from `source`; `receiveBuffer` (bytes) is set before connecting, so the window
    /// the relay sees stays that small.
    init(port: UInt16, from source: String = "127.0.0.1", receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawTCPError("socket: errno \(errno)") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var local = Self.address(source, port: 0)
        var remote = Self.address("127.0.0.1", port: port)
        let bound = withUnsafePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        let connected = withUnsafePointer(to: &remote) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, connected == 0 else {
            let e = errno
            Glibc.close(fd)
            throw RawTCPError("bind/connect from \(source) to port \(port): errno \(e)")
        }
    }

    static func address(_ ip: String, port: UInt16) -> sockaddr_in {
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        inet_pton(AF_INET, ip, &a.sin_addr)
        return a
    }

    /// Sends all of `text`; false when the connection is gone.
    @discardableResult
    func send(_ text: String) -> Bool { send(bytes: Array(text.utf8)) }

    /// Sends all of `bytes`; false when the connection is gone.
    @discardableResult
    func send(bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Whatever arrives within `seconds` (stops early at end of stream); `eof` tells whether the peer closed.
    func read(seconds: Double, until done: (String) -> Bool = { _ in false }) -> (text: String, eof: Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 || done(String(decoding: out, as: UTF8.self)) { return (String(decoding: out, as: UTF8.self), false) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&p, 1, Int32(left * 1000) + 1) <= 0 { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (String(decoding: out, as: UTF8.self), true) }
            out += buffer[..<n]
        }
    }

    /// True when the peer has closed (or reset) the connection and nothing is left to read; never blocks.
    var closedByPeer: Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    deinit { Glibc.close(fd) }
}

struct RawTCPError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// An HTTP/1.1 client on one kept-alive connection: a request, then its answer read up to `Content-Length`.
final class KeepAliveHTTP {
    let connection: RawTCP
    let token: String

    init(port: UInt16, token: String) throws {
        connection = try RawTCP(port: port)
        self.token = token
    }

    /// Sends one request and returns the status (0 when the connection failed).
    func request(_ method: String, _ path: String, body: String = "") -> Int {
        let head = "\(method) \(path) HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer \(token)\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n"
        guard connection.send(head + body) else { return 0 }
        let answer = connection.read(seconds: 5) { text in
            guard let end = text.range(of: "\r\n\r\n") else { return false }
            let length = text[..<end.lowerBound].split(separator: "\r\n")
                .first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            return text.utf8.count - text[..<end.upperBound].utf8.count >= length
        }
        return Int(answer.text.split(separator: " ").dropFirst().first ?? "") ?? 0
    }
}

/// The relay process's thread count and resident memory (KiB) from /proc.
func processStatus(_ pid: Int32) -> (threads: Int, rssKiB: Int) {
    let text = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    func field(_ name: String) -> Int {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
        return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? 0
    }
    return (field("Threads"), field("VmRSS"))
}

/// The HTTP port in a relay's ready line (`..., http HOST:PORT; ...`, or `https HOST:PORT`).
func httpPort(of relay: Spawned) -> UInt16? {
    guard let line = relay.lines.first(where: { $0.contains("ready on udp") }),
          let range = line.range(of: #"https? [0-9.]+:[0-9]+"#, options: .regularExpression) else { return nil }
    return UInt16(line[range].split(separator: ":").last ?? "")
}

/// One sample's value in Prometheus text (`name value` lines), or nil when absent.
func metric(_ text: String, _ name: String) -> Double? {
    text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
}

/// This machine's first IPv4 address outside 127/8, if it has one.
func nonLoopbackIPv4() -> String? {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0 else { return nil }
    defer { freeifaddrs(list) }
    var p = list
    while let a = p {
        defer { p = a.pointee.ifa_next }
        guard let sa = a.pointee.ifa_addr, sa.pointee.sa_family == sa_family_t(AF_INET) else { continue }
        var sin = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
        if UInt32(bigEndian: sin.sin_addr.s_addr) >> 24 == 127 { continue }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        inet_ntop(AF_INET, &sin.sin_addr, &text, socklen_t(INET_ADDRSTRLEN))
        return String(cString: text)
    }
    return nil
}
