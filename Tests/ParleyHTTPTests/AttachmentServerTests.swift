import Foundation
import Glibc
import ParleyAuth
import ParleyRelay
import ParleyRelayCore
import ParleyTestSupport
import ParleyWire
import Testing
@testable import ParleyHTTP

/// One HTTP/1.1 exchange on its own loopback connection, bytes as given: headers now, the body when the test says.
final class RawExchange {
    let fd: Int32

    init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var a = sockaddr_in()
        a.sin_family = sa_family_t(AF_INET)
        a.sin_port = port.bigEndian
        a.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let ok = withUnsafePointer(to: &a) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard ok == 0 else { throw POSIXError(.ECONNREFUSED) }
    }

    /// Sends the request line and headers (`Connection: close` added), and nothing of a body.
    func headers(_ method: String, _ target: String, _ fields: [String]) {
        send(Array("\(method) \(target) HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\(fields.map { $0 + "\r\n" }.joined())\r\n".utf8))
    }

    /// Sends `bytes` as they are; false when the connection is gone.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// The answer, read until the server closes or `seconds` pass: its status (0: none), headers and body.
    func answer(within seconds: Double) -> (status: Int, head: String, body: [UInt8]) {
        let deadline = Date().addingTimeInterval(seconds)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while deadline.timeIntervalSinceNow > 0 {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(deadline.timeIntervalSinceNow * 1000) + 1) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += buffer[..<n]
        }
        // A "100 Continue" before the answer is skipped.
        var text = out
        while let end = Self.headEnd(text), String(decoding: text[..<end], as: UTF8.self).hasPrefix("HTTP/1.1 100") { text = Array(text[(end + 4)...]) }
        guard let end = Self.headEnd(text) else { return (0, "", []) }
        let head = String(decoding: text[..<end], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, head, Array(text[(end + 4)...]))
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        return (0...(bytes.count - 4)).first { bytes[$0] == 13 && bytes[$0 + 1] == 10 && bytes[$0 + 2] == 13 && bytes[$0 + 3] == 10 }
    }

    deinit { close(fd) }
}

/// The HTTP server in front of the router, on loopback, with the real file store: bodies read only once admitted and
/// only up to the limit, places bounded, slow uploads cut off, path tricks answered 404.
@Suite("Attachments: the HTTP server over loopback — bodies after admission, 413/503 at once, places given back")
struct AttachmentServerTests {
    let scratch = ScratchDirectory()
    let stats = HTTPStats()
    static let limit = 4096
    static let member = "Authorization: " + AttachmentRouteTests.token()

    func server(uploads: Int = 4, uploadSeconds: Int = 120) throws -> HTTPServer {
        var limits = HTTPLimits()
        limits.attachmentUploads = uploads
        limits.attachmentUploadSeconds = uploadSeconds
        let log = MemoryLogSink(threshold: .error)
        let router = HTTPRouter(backend: CoreBackend(), verifier: TokenVerifier(keys: ["k": RouterTests.secret]), signer: nil,
                                config: RelayCoreConfig(), httpStats: stats,
                                attachments: AttachmentFiles(stateDirectory: scratch.path, log: log), attachmentMaxBytes: Self.limit)
        return try HTTPServer(address: PeerAddress(ipv4: 127, 0, 0, 1, port: 0), router: router, events: EventHub(),
                              limits: limits, stats: stats, log: log)
    }

    func upload(_ port: UInt16, _ bytes: [UInt8], type: String = "image/png") throws -> (status: Int, head: String, body: [UInt8]) {
        let c = try RawExchange(port: port)
        c.headers("POST", "/v1/attachments", [Self.member, "Content-Type: \(type)", "Content-Length: \(bytes.count)"])
        c.send(bytes)
        return c.answer(within: 5)
    }

    func json(_ body: [UInt8]) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }

    func eventually(seconds: Double = 3, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return condition()
    }

    @Test("upload then download over a socket, byte for byte, into <state_dir>/attachments; identical bytes, one blob")
    func roundTrip() throws {
        defer { scratch.remove() }
        let http = try server()
        defer { http.stop() }
        let image = TestImages.png(size: 3000)
        let created = try upload(http.port, image)
        #expect(created.status == 201)
        let id = try #require(json(created.body)["id"] as? String)
        #expect(created.head.contains("Location: /v1/attachments/\(id)"))
        let c = try RawExchange(port: http.port)
        c.headers("GET", "/v1/attachments/\(id)", [AttachmentServerTests.member])
        let fetched = c.answer(within: 5)
        #expect(fetched.status == 200 && fetched.body == image)
        #expect(fetched.head.contains("Content-Type: image/png") && fetched.head.contains("X-Content-Type-Options: nosniff"))
        #expect(try upload(http.port, image).status == 201)
        let blobs = try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/attachments/blobs")
        #expect(blobs == [Crypto.hex(Crypto.sha256(image))])
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/attachments/ids").count == 2)
        #expect(http.places.held(.upload) == 0 && http.places.held(.download) == 0)
    }

    @Test("no token, or a bad one: 401 while the body is still unsent (a declared 5 MB), no upload place taken",
          arguments: [nil, "Authorization: Bearer not.a.token"] as [String?])
    func unauthorisedBeforeBody(auth: String?) throws {
        defer { scratch.remove() }
        let http = try server()
        defer { http.stop() }
        let c = try RawExchange(port: http.port)
        c.headers("POST", "/v1/attachments", (auth.map { [$0] } ?? []) + ["Content-Type: image/png", "Content-Length: 5000000",
                                                                          "Expect: 100-continue"])
        let answer = c.answer(within: 2)
        #expect(answer.status == 401)
        #expect(http.places.held(.upload) == 0)
        #expect(!FileManager.default.fileExists(atPath: scratch.path + "/attachments"))
    }

    @Test("a declared length over attachment_max_bytes: 413 before a byte of the body is sent")
    func tooLongByContentLength() throws {
        defer { scratch.remove() }
        let http = try server()
        defer { http.stop() }
        let c = try RawExchange(port: http.port)
        c.headers("POST", "/v1/attachments", [Self.member, "Content-Type: image/png", "Content-Length: \(Self.limit + 1)"])
        let answer = c.answer(within: 2)
        #expect(answer.status == 413 && String(decoding: answer.body, as: UTF8.self).contains("attachment_max_bytes"))
        #expect(http.places.held(.upload) == 0)
    }

    @Test("a chunked body that grows past the limit: dropped as it comes, its place given back at once, 413 at its end")
    func tooLongByStreamedBody() throws {
        defer { scratch.remove() }
        let http = try server(uploads: 1)
        defer { http.stop() }
        let c = try RawExchange(port: http.port)
        c.headers("POST", "/v1/attachments", [Self.member, "Content-Type: image/png", "Transfer-Encoding: chunked"])
        let image = TestImages.png(size: Self.limit + 1000)
        c.send(Array("\(String(image.count, radix: 16))\r\n".utf8) + image + Array("\r\n".utf8))
        // Past the limit, the one upload place is free again while this body still arrives.
        #expect(eventually { http.places.held(.upload) == 0 })
        #expect(try upload(http.port, TestImages.png).status == 201)
        c.send(Array("0\r\n\r\n".utf8))
        let answer = c.answer(within: 3)
        #expect(answer.status == 413)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.path + "/attachments/ids").count == 1)
    }

    @Test("every upload place held: the next upload is answered 503 at once, and counted; the places come back")
    func placesBounded() throws {
        defer { scratch.remove() }
        let http = try server(uploads: 2)
        defer { http.stop() }
        let holders = try (0..<2).map { _ in try RawExchange(port: http.port) }
        for h in holders {
            h.headers("POST", "/v1/attachments", [Self.member, "Content-Type: image/png", "Content-Length: \(TestImages.png.count)"])
            h.send(Array(TestImages.png.prefix(10)))
        }
        #expect(eventually { http.places.held(.upload) == 2 })
        let start = Date()
        let shed = try upload(http.port, TestImages.png)
        #expect(shed.status == 503 && String(decoding: shed.body, as: UTF8.self).contains("too many attachment uploads"))
        #expect(Date().timeIntervalSince(start) < 1)
        #expect(stats.snapshot.requestsShed == 1)
        for h in holders { h.send(Array(TestImages.png.dropFirst(10))) }
        for h in holders { #expect(h.answer(within: 5).status == 201) }
        #expect(eventually { http.places.held(.upload) == 0 })
        #expect(try upload(http.port, TestImages.png).status == 201)
    }

    @Test("an upload that trickles past attachmentUploadSeconds is cut off, and its place comes back")
    func slowUploadCutOff() throws {
        defer { scratch.remove() }
        let http = try server(uploads: 1, uploadSeconds: 1)
        defer { http.stop() }
        let c = try RawExchange(port: http.port)
        c.headers("POST", "/v1/attachments", [Self.member, "Content-Type: image/png", "Content-Length: \(TestImages.png.count)"])
        c.send(Array(TestImages.png.prefix(10)))
        #expect(eventually { http.places.held(.upload) == 1 })
        Thread.sleep(forTimeInterval: 1.3)
        c.send(Array(TestImages.png[10..<20]))
        #expect(c.answer(within: 3).status == 0)  // closed without an answer: libmicrohttpd cannot answer mid-body
        #expect(eventually { http.places.held(.upload) == 0 })
        #expect(try upload(http.port, TestImages.png).status == 201)
    }

    @Test("path tricks on the wire (percent-encoded dots and slashes) reach no file: 404", arguments: [
        "/v1/attachments/..%2F..%2Frelay-key", "/v1/attachments/%2e%2e%2f%2e%2e%2frelay-key", "/v1/attachments/%2E%2E",
        "/v1/attachments/../../relay-key", "/v1/attachments/..%2fblobs%2f", "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA%00",
        "/v1/attachments/%41AAAAAAAAAAAAAAAAAAAAA/..", "/v1/attachments//etc/passwd",
    ])
    func pathTricksOnTheWire(target: String) throws {
        defer { scratch.remove() }
        let secret = Array("not for members".utf8)
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true)
        try Data(secret).write(to: URL(fileURLWithPath: scratch.path + "/relay-key"))
        let http = try server()
        defer { http.stop() }
        #expect(try upload(http.port, TestImages.png).status == 201)
        let c = try RawExchange(port: http.port)
        c.headers("GET", target, [Self.member])
        let answer = c.answer(within: 3)
        #expect(answer.status == 404 || answer.status == 400, "\(answer.head)")
        #expect(!String(decoding: answer.body, as: UTF8.self).contains("not for members"))
        #expect(http.places.held(.download) == 0)
    }

    @Test("the places: taken up to their capacity per kind, given back")
    func places() {
        let p = AttachmentPlaces(uploads: 2, downloads: 1)
        #expect(p.take(.upload) && p.take(.upload) && !p.take(.upload))
        #expect(p.take(.download) && !p.take(.download))
        p.give(.upload)
        #expect(p.held(.upload) == 1 && p.take(.upload))
        p.give(.download)
        #expect(p.held(.download) == 0 && p.capacity(.upload) == 2 && p.capacity(.download) == 1)
    }
}
