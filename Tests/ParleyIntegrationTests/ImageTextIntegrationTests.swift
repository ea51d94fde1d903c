import Foundation
import Testing

/// Images on texts between real processes: `parley message --image` uploads and sends the id, `parley listen` fetches
/// the image and saves it; the check is that an image round-trips byte for byte.
extension ProcessTests {
    @Suite("Images on direct texts: parley message --image, parley listen --images-dir")
    struct ImageTextIntegrationTests {
        func name() -> String { "u\(UInt32.random(in: 0...UInt32.max))" }
        let bot = ["--tone", "500", "--no-playback"]

        /// A 2×2 RGB PNG (red and blue), 73 bytes: signature, IHDR, one IDAT, IEND.
        static let png: [UInt8] = [
            0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A,                                       // signature
            0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02,
            0x08, 0x02, 0x00, 0x00, 0x00, 0xFD, 0xD4, 0x9A, 0x73,                                 // IHDR 2×2, 8-bit RGB
            0x00, 0x00, 0x00, 0x10, 0x49, 0x44, 0x41, 0x54, 0x78, 0xDA, 0x63, 0xF8, 0xCF, 0x00, 0x04, 0xFF,
            0x19, 0x20, 0x14, 0x00, 0x1B, 0xF2, 0x03, 0xFD, 0x3E, 0x97, 0x5D, 0xA4,               // IDAT
            0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,               // IEND
        ]

        @Test("an image round-trips byte for byte: uploaded by message --image, saved by listen as <id>.png in a 0700 folder")
        func roundTrip() throws {
            let folder = NSTemporaryDirectory() + "parley-images-\(getpid())-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let (relay, server) = try startRelay(environment: ["PARLEY_STATE_DIR": folder + "/state"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let api = ["PARLEY_URL": try #require(httpBase(of: relay), "\(relay.stdout)")]
            let image = folder + "/photo.png", inbox = folder + "/bob/images"
            try Data(Self.png).write(to: URL(fileURLWithPath: image))
            let bob = name(), alice = name()

            let listen = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--images-dir", inbox, "--duration", "20"] + bot,
                                     environment: api)
            #expect(listen.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let sent = try Spawned("parley", ["message", bob, "a photo", "--image", image, "--identity", alice, "--server", server], environment: api)
            #expect(sent.wait(seconds: 10) == 0, "\(sent.stdout)\(sent.stderr)")
            #expect(sent.stdout.contains("delivered"))
            let id = try #require(sent.lines.first { $0.hasPrefix("uploaded ") }?.split(separator: " ").last.map(String.init), "\(sent.stdout)")
            let saved = "\(inbox)/\(id).png"
            #expect(listen.waitFor(seconds: 5) { $0.contains("image from \(alice) saved to \(saved)") }, "\(listen.stdout)\(listen.stderr)")
            #expect(listen.stdout.contains("direct text from \(alice): a photo [1 image]"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: saved)) == Data(Self.png))
            #expect(try FileManager.default.attributesOfItem(atPath: inbox)[.posixPermissions] as? Int == 0o700)

            // An image-only text: no TEXT, the same bytes under a new id (from someone else: alice's next texts wait until
            // bob accepts her chat request, as any texts do on a relay that keeps them).
            let carol = name()
            let only = try Spawned("parley", ["message", bob, "--image", image, "--identity", carol, "--server", server], environment: api)
            #expect(only.wait(seconds: 10) == 0, "\(only.stdout)\(only.stderr)")
            let second = try #require(only.lines.first { $0.hasPrefix("uploaded ") }?.split(separator: " ").last.map(String.init))
            #expect(second != id)
            #expect(listen.waitFor(seconds: 5) { $0.contains("saved to \(inbox)/\(second).png") }, "\(listen.stdout)\(listen.stderr)")
            #expect(listen.stdout.contains("direct text from \(carol): [1 image]"))
            #expect(try Data(contentsOf: URL(fileURLWithPath: "\(inbox)/\(second).png")) == Data(Self.png))
            listen.signal(SIGINT)
            #expect(listen.wait(seconds: 5) == 0)
        }

        @Test("an image to someone away is kept with its text: their listen saves it when they come online")
        func keptForLater() throws {
            let folder = NSTemporaryDirectory() + "parley-images-\(getpid())-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let (relay, server) = try startRelay(environment: ["PARLEY_STATE_DIR": folder + "/state"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let api = ["PARLEY_URL": try #require(httpBase(of: relay), "\(relay.stdout)")]
            let image = folder + "/photo.png", inbox = folder + "/inbox"
            try Data(Self.png).write(to: URL(fileURLWithPath: image))
            let bob = name(), alice = name()

            let sent = try Spawned("parley", ["message", bob, "--image", image, "--identity", alice, "--server", server], environment: api)
            #expect(sent.wait(seconds: 10) == 0, "\(sent.stdout)\(sent.stderr)")
            #expect(sent.stdout.contains("stored"), "\(sent.stdout)")
            let id = try #require(sent.lines.first { $0.hasPrefix("uploaded ") }?.split(separator: " ").last.map(String.init))
            let listen = try Spawned("parley", ["listen", "--identity", bob, "--server", server, "--images-dir", inbox, "--duration", "20"] + bot,
                                     environment: api)
            #expect(listen.waitFor(seconds: 8) { $0.contains("image from \(alice) saved to \(inbox)/\(id).png") }, "\(listen.stdout)\(listen.stderr)")
            #expect(listen.stdout.contains("direct text from \(alice) (sent "))
            #expect(try Data(contentsOf: URL(fileURLWithPath: "\(inbox)/\(id).png")) == Data(Self.png))
            listen.signal(SIGINT)
            #expect(listen.wait(seconds: 5) == 0)
        }

        @Test("a download that fails is one line on stderr and listen goes on; a file that is no image (or none) sends nothing")
        func failures() throws {
            let folder = NSTemporaryDirectory() + "parley-images-\(getpid())-\(UUID().uuidString)"
            defer { try? FileManager.default.removeItem(atPath: folder) }
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let (relay, server) = try startRelay(environment: ["PARLEY_STATE_DIR": folder + "/state"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let api = ["PARLEY_URL": try #require(httpBase(of: relay), "\(relay.stdout)")]
            let image = folder + "/photo.png", text = folder + "/notes.txt", posing = folder + "/notes.png"
            try Data(Self.png).write(to: URL(fileURLWithPath: image))
            try Data("not an image".utf8).write(to: URL(fileURLWithPath: text))
            try Data("not an image".utf8).write(to: URL(fileURLWithPath: posing))
            let carol = name(), alice = name()

            // Carol's client looks for the API where nothing listens: her download fails, she stays online.
            let listen = try Spawned("parley", ["listen", "--identity", carol, "--server", server, "--images-dir", folder + "/carol",
                                                "--duration", "20"] + bot, environment: ["PARLEY_URL": "http://127.0.0.1:1"])
            #expect(listen.waitFor(seconds: 5) { $0.contains("waiting for calls") })
            let sent = try Spawned("parley", ["message", carol, "hi", "--image", image, "--identity", alice, "--server", server], environment: api)
            #expect(sent.wait(seconds: 10) == 0, "\(sent.stdout)\(sent.stderr)")
            #expect(listen.waitForStderr(seconds: 5) { $0.contains("from \(alice) not saved: cannot reach the relay at http://127.0.0.1:1") },
                    "\(listen.stderr)")
            #expect(listen.stderr.split(separator: "\n").filter { $0.contains("not saved") }.count == 1)
            #expect(!FileManager.default.fileExists(atPath: folder + "/carol"))
            let again = try Spawned("parley", ["message", carol, "still there?", "--identity", name(), "--server", server], environment: api)
            #expect(again.wait(seconds: 10) == 0)
            #expect(listen.waitFor(seconds: 3) { $0.contains("still there?") })

            let notImage = try Spawned("parley", ["message", carol, "x", "--image", text, "--identity", alice, "--server", server], environment: api)
            #expect(notImage.wait(seconds: 5) == 2)
            #expect(notImage.stderr.contains("is not a PNG, JPEG, WebP or GIF image"))
            // Named like an image: the type comes from the extension, and the relay, which reads the bytes, refuses it.
            let named = try Spawned("parley", ["message", carol, "x", "--image", posing, "--identity", alice, "--server", server], environment: api)
            #expect(named.wait(seconds: 5) == 3)
            #expect(named.stderr.contains("the relay refused the image \(posing): 415 unsupported_media_type"), "\(named.stderr)")
            let missing = try Spawned("parley", ["message", carol, "--image", folder + "/none.png", "--identity", alice, "--server", server],
                                      environment: api)
            #expect(missing.wait(seconds: 5) == 1)
            listen.signal(SIGINT)
            #expect(listen.wait(seconds: 5) == 0)
            #expect(!listen.stdout.contains("direct text from \(alice): x"), "nothing went out for a file that is no image")
        }
    }
}
