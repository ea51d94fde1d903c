import Foundation
import Testing

extension ProcessTests.BrowserTests {
    @Test("images in a room with a page: the page's picked image reaches a parley join, saved under its id at the size the page fetched; the page shows a parley join's image")
    func pageImages() throws {
        let (relay, server, base) = try relay()
        defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
        let api = ["PARLEY_URL": base]
        let room = "web-\(UInt32.random(in: 0...UInt32.max))"
        let inbox = "\(dir)/rec-images", image = "\(dir)/pic.png"
        try Data(ProcessTests.ImageTextIntegrationTests.png).write(to: URL(fileURLWithPath: image))
        let rec = try Spawned("parley", ["join", room, "--identity", "rec", "--server", server, "--mode", "forward", "--listen-only",
                                         "--no-playback", "--no-tui", "--images-dir", inbox, "--duration", "20"], environment: api)
        #expect(rec.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(rec.stdout)\(rec.stderr)")
        let token = try mint(["--identity", "web", "--room", room])
        // The page sends its text 2 s into its report, with a PNG it drew: uploaded, then its id in the room text.
        let browser = try Browser(base: base, room: room, token: token, listen: false, seconds: 8, fakeAudio: try toneFile(440, seconds: 12),
                                  profile: "\(dir)/chromium", query: "&identity=web&say=with%20a%20picture&image=1")
        defer { browser.stop() }
        #expect(rec.waitFor(seconds: 15) { $0.contains("text from web: with a picture [1 image]") }, "\(rec.stdout)\n\(browser.log)")
        #expect(rec.waitFor(seconds: 5) { $0.contains("image from web saved to \(inbox)/") }, "\(rec.stdout)\(rec.stderr)")
        let saved = try #require(rec.lines.first { $0.hasPrefix("image from web saved to ") }.map { String($0.dropFirst(24)) })

        // A parley join says a text with the test PNG: the page fetches it with its token and shows it.
        let snd = try Spawned("parley", ["join", room, "--identity", "snd", "--server", server, "--say", "pic", "--image", image,
                                         "--tone", "500", "--no-playback", "--no-tui", "--duration", "3"], environment: api)
        #expect(snd.wait(seconds: 10) == 0, "\(snd.stdout)\(snd.stderr)")
        let result = try #require(browser.result(seconds: 25), "no result from the page:\n\(browser.log)")
        let texts = (result["texts"] as? [[String]] ?? []).map { $0.joined(separator: ": ") }
        #expect(texts.contains("snd: pic") && texts.contains("web: with a picture"), "\(texts)")
        let shown = result["images"] as? [[Any]] ?? []
        #expect(shown.contains { $0.first as? String == "snd" && $0.last as? Int == ProcessTests.ImageTextIntegrationTests.png.count },
                "\(shown)\n\(browser.log)")
        // The page's own image came back to it through the room's events; the file rec saved is those bytes.
        let own = try #require(shown.first { $0.first as? String == "web" }, "\(shown)\n\(browser.log)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: saved))
        #expect(bytes.count == own.last as? Int && saved.hasSuffix("/\(own[1] as? String ?? "?").png"), "\(own) vs \(saved)")
        #expect(bytes.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        rec.signal(SIGINT)
        #expect(rec.wait(seconds: 5) == 0, "\(rec.stderr)")
    }
}
