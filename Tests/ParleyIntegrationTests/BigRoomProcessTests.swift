import Foundation
import ParleyAudioIO
import Testing

extension ProcessTests {
    /// A room whose listeners are shared among the relay's workers for sending (`FanOutTable.shares`), through real
    /// processes: every listener hears the speaker, whichever worker's thread sent to it.
    @Suite("Big rooms: listeners shared among the workers, and an audience room")
    struct BigRoomProcessTests {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-big-\(UInt32.random(in: 0...UInt32.max))").path

        init() throws { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) }

        @Test("two workers share an audience room's four listeners (spread threshold 2): each records the speaker's tone, and the speaker sees the count, not four joins")
        func sharedListeners() throws {
            let (relay, server) = try startRelay(workers: 2, environment: ["PARLEY_SPREAD_THRESHOLD": "2", "PARLEY_AUDIENCE_UPDATE_INTERVAL_MS": "500"])
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "big-\(UInt32.random(in: 0...UInt32.max))"
            let speaker = try Spawned("parley", ["join", room, "--identity", "host", "--server", server, "--audience", "--tone", "440",
                                                 "--no-playback", "--no-tui", "--duration", "9"])
            #expect(speaker.waitFor(seconds: 5) { $0.contains("joined \(room)") }, "\(speaker.stdout)\(speaker.stderr)")
            let listeners = try (0..<4).map { k in
                try Spawned("parley", ["join", room, "--identity", "l\(k)", "--server", server, "--audience", "--listen-only",
                                       "--output", "\(dir)/l\(k).wav", "--no-tui", "--duration", "6"])
            }
            for l in listeners { #expect(l.wait(seconds: 15) == 0, "\(l.stdout)\(l.stderr)") }
            for k in 0..<4 {
                let heard = try WAVReader(path: "\(dir)/l\(k).wav").readAllMono48k()
                let share = goertzelShare(loudestSecond(heard), frequency: 440)
                #expect(share > 0.5, "listener \(k): 440 Hz share \(share) of \(heard.count) samples")
            }
            #expect(speaker.waitFor(seconds: 3) { $0.contains("4 listening") }, "\(speaker.stdout)")
            // The other worker sent to its share: two of the four listeners, every packet.
            let base = try #require(httpBase(of: relay))
            let metrics = try curl("GET", base + "/metrics").body
            let shared = metrics.split(separator: "\n").first { $0.hasPrefix("parley_packets_forwarded_by_other_workers_total ") }
                .flatMap { Double($0.split(separator: " ")[1]) } ?? 0
            #expect(shared > 200, "\(metrics.split(separator: "\n").filter { $0.contains("forwarded") })")
            #expect(!speaker.stdout.contains("l0 joined"), "\(speaker.stdout)")
        }
    }
}
