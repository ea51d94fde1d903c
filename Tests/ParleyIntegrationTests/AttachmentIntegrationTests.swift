import Foundation
import Testing

/// curl sending the file at `upload` (when given) as the body with `headers`, and saving the answer's body to `output`;
/// returns the status (0 when no HTTP answer came).
func curlFile(_ method: String, _ url: String, token: String?, headers: [String] = [], upload: String? = nil, output: String) throws -> Int {
    let p = Process()
    p.executableURL = try ExternalProgram.curl.url()
    var args = ["-s", "-X", method, "-o", output, "-w", "%{http_code}", "--max-time", "10", url]
    if let token { args += ["-H", "Authorization: Bearer \(token)"] }
    for h in headers { args += ["-H", h] }
    if let upload { args += ["--data-binary", "@" + upload] }
    p.arguments = args
    let out = Pipe()
    p.standardOutput = out
    try p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    return Int(String(decoding: data, as: UTF8.self)) ?? 0
}

/// A 1×1 grey PNG of exactly `size` bytes (at least 79): signature, IHDR, IDAT, a private ancillary chunk `prVt` of
/// `fill` bytes (another fill, other bytes), IEND, each chunk with its CRC (computed here).
func pngOf(size: Int, fill: UInt8 = 0) -> [UInt8] {
    func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        }
        return crc ^ 0xFFFF_FFFF
    }
    func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] { be(UInt32(data.count)) + Array(type.utf8) + data + be(crc32(Array(type.utf8) + data)) }
    let head: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", [0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0])
        + chunk("IDAT", [0x78, 0x9C, 0x63, 0x60, 0x00, 0x00, 0x00, 0x02, 0x00, 0x01])
    let end = chunk("IEND", [])
    return head + chunk("prVt", [UInt8](repeating: fill, count: size - head.count - end.count - 12)) + end
}

extension ProcessTests {
    @Suite("Attachments with a real relay and curl")
    struct AttachmentIntegrationTests {
        @Test("a member uploads an image with curl, another member's token fetches it byte for byte; it is kept in state_dir/attachments")
        func uploadAndFetch() throws {
            let folder = NSTemporaryDirectory() + "parley-attachments-\(getpid())-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let state = folder + "/state"
            let (relay, _) = try startRelay(environment: ["PARLEY_STATE_DIR": state, "PARLEY_ATTACHMENT_MAX_BYTES": "200000"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay), "\(relay.stdout)")
            let ann = try mint(["--identity", "ann", "--room", "lobby"])
            let bob = try mint(["--identity", "bob", "--room", "elsewhere"])

            // A PNG of 100,000 bytes: the 1×1 image with a private ancillary chunk of zeros before its IEND chunk.
            let png = pngOf(size: 100_000)
            let image = folder + "/image.png", answer = folder + "/answer.json", fetched = folder + "/fetched.png"
            try Data(png).write(to: URL(fileURLWithPath: image))

            #expect(try curlFile("POST", base + "/v1/attachments", token: ann, headers: ["Content-Type: image/png"], upload: image,
                                 output: answer) == 201)
            let created = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: answer))) as? [String: Any])
            let id = try #require(created["id"] as? String)
            #expect(created["size"] as? Int == 100_000 && created["content_type"] as? String == "image/png")
            #expect(try curlFile("GET", base + "/v1/attachments/\(id)", token: bob, output: fetched) == 200)
            #expect(try Data(contentsOf: URL(fileURLWithPath: fetched)) == Data(png))
            let sha = try #require(created["sha256"] as? String)
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/attachments/blobs") == [sha])
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/attachments/ids") == [id])

            // Refusals a user meets: no token, a type that is not what the bytes are, too large, an unknown id.
            #expect(try curlFile("POST", base + "/v1/attachments", token: nil, headers: ["Content-Type: image/png"], upload: image,
                                 output: answer) == 401)
            #expect(try curlFile("POST", base + "/v1/attachments", token: ann, headers: ["Content-Type: image/jpeg"], upload: image,
                                 output: answer) == 415)
            #expect(try String(contentsOfFile: answer, encoding: .utf8).contains("content_type_mismatch"))
            let big = folder + "/big.png"
            try Data(pngOf(size: 250_000)).write(to: URL(fileURLWithPath: big))
            #expect(try curlFile("POST", base + "/v1/attachments", token: ann, headers: ["Content-Type: image/png"], upload: big,
                                 output: answer) == 413)
            #expect(try curlFile("GET", base + "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA", token: bob, output: answer) == 404)
            #expect(try curlFile("GET", base + "/v1/attachments/..%2Frelay-key", token: bob, output: answer) == 404)
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/attachments/ids") == [id])
        }
    }
}
