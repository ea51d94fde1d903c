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

            // A PNG of 100,000 bytes: the 1×1 image with zeros before its IEND chunk (sniffing decodes nothing).
            let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
                                0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, 0x00, 0x00, 0x00, 0x3A, 0x7E, 0x9B, 0x55]
                + [UInt8](repeating: 0, count: 100_000 - 45)
                + [0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82]
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
            try Data(png + [UInt8](repeating: 0, count: 150_000)).write(to: URL(fileURLWithPath: big))
            #expect(try curlFile("POST", base + "/v1/attachments", token: ann, headers: ["Content-Type: image/png"], upload: big,
                                 output: answer) == 413)
            #expect(try curlFile("GET", base + "/v1/attachments/AAAAAAAAAAAAAAAAAAAAAA", token: bob, output: answer) == 404)
            #expect(try curlFile("GET", base + "/v1/attachments/..%2Frelay-key", token: bob, output: answer) == 404)
            #expect(try FileManager.default.contentsOfDirectory(atPath: state + "/attachments/ids") == [id])
        }
    }
}
