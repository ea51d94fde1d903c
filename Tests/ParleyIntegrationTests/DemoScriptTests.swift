import Foundation
import ParleyAudioIO
import Testing

extension ProcessTests {
    /// `Samples/demo.sh` as someone trying Parley runs it: a relay and two bots, nothing left behind.
    @Suite("Samples/demo.sh")
    struct DemoScriptTests {
        @Test("the demo's relay keeps its state in a temporary directory removed at exit; each line says whose it is")
        func demo() throws {
            let dir = FileManager.default.temporaryDirectory
                .appendingPathComponent("parley-demo-\(UInt32.random(in: 0...UInt32.max))").path
            try FileManager.default.createDirectory(atPath: dir + "/tmp", withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            // A state directory the relay would take from the environment were it not given its own (as root the
            // default is /var/lib/parley-relay); mktemp's directories go to TMPDIR, which must be empty at the end.
            let env = ["TMPDIR": dir + "/tmp", "PARLEY_STATE_DIR": dir + "/not-here", "PARLEY_DEMO_OUT": dir + "/out",
                       "PARLEY_BIN_DIR": Spawned.binary("parley").deletingLastPathComponent().path]
            let demo = try Spawned(script: "Samples/demo.sh", [], environment: env)
            #expect(demo.wait(seconds: 40) == 0, "\(demo.stdout)\(demo.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir + "/not-here"))
            #expect(try FileManager.default.contentsOfDirectory(atPath: dir + "/tmp").isEmpty)
            // The programs' lines, each with its owner; the script's own summary after them.
            let programs = demo.stdout.components(separatedBy: "\n").prefix { !$0.isEmpty }
            let owned = { (line: String) in ["[relay] ", "[alice] ", "[bob] "].contains { line.hasPrefix($0) } }
            #expect(programs.allSatisfy(owned), "\(demo.stdout)")
            #expect(programs.contains { $0.hasPrefix("[relay] ") && $0.contains("ready on udp") }, "\(demo.stdout)")
            #expect(programs.contains("[bob] alice joined") && programs.contains("[alice] left demo"), "\(demo.stdout)")
            #expect(demo.stdout.contains("bob heard:  \(dir)/out/bob-heard.wav"))
            #expect(try WAVReader(path: dir + "/out/bob-heard.wav").readAllMono48k().count > 48_000 * 5)
        }
    }
}
