import Foundation
import Glibc
import Testing

/// A program on a pseudo-terminal: stdin, stdout and stderr are the pty's slave side, so it sees a terminal and shows
/// its live view; the test types into the master side and reads the screen from it.
final class OnTerminal: @unchecked Sendable {
    // Invariant: `screen` changes only under `lock`, from the reader thread.
    let process = Process()
    private let master: Int32
    private let lock = NSLock()
    private var screen = Data()
    private var reader: Thread?

    init(_ executable: String, _ arguments: [String]) throws {
        // posix_openpt/grantpt/unlockpt/ptsname, spelled with the Linux ioctls they wrap (Glibc's module map leaves
        // them out): TIOCSPTLCK = _IOW('T', 0x31, int), TIOCGPTN = _IOR('T', 0x30, unsigned int).
        struct NoPTY: Error {}
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0, number: UInt32 = 0
        guard master >= 0, ioctl(master, UInt(0x4004_5431), &unlock) == 0, ioctl(master, UInt(0x8004_5430), &number) == 0 else {
            throw NoPTY()
        }
        let slave = open("/dev/pts/\(number)", O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw NoPTY() }
        let handle = FileHandle(fileDescriptor: slave, closeOnDealloc: true)
        process.executableURL = Spawned.binary(executable)
        process.arguments = arguments
        process.standardInput = handle
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        let master = master
        // Keep reading, or the live view's redraws fill the pty and the program blocks on its writes.
        let thread = Thread { [weak self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(master, &buffer, buffer.count)
                if n <= 0 { return }
                guard let self else { return }
                self.lock.withLock { self.screen.append(contentsOf: buffer[0..<n]) }
            }
        }
        thread.start()
        reader = thread
    }

    /// Types `bytes` as a person at the keyboard would.
    func type(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Waits until what was drawn satisfies `predicate`, at most `seconds`.
    func waitFor(seconds: Double, _ predicate: (String) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if predicate(output) { return true }
            Thread.sleep(forTimeInterval: 0.05)  // the screen has no event to wait on; a short poll
        }
        return predicate(output)
    }

    /// Everything the program drew so far.
    var output: String { lock.withLock { String(decoding: screen, as: UTF8.self) } }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        close(master)
    }
}

extension ProcessTests {
    @Suite("Text typed in the live view (a real terminal: a pty)")
    struct LiveViewTextTests {
        @Test("`t café ☕⏎` in alice's live view reaches bob as café ☕, UTF-8 end to end")
        func utf8RoundTrip() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let room = "pty-\(UInt32.random(in: 0...UInt32.max))"
            let bob = try Spawned("parley", ["join", room, "--identity", "bob", "--server", server, "--listen-only", "--no-playback",
                                             "--duration", "15", "--no-tui"])
            defer { bob.signal(SIGINT); bob.wait(seconds: 5) }
            #expect(bob.waitFor(seconds: 5) { $0.contains("joined \(room)") })
            let alice = try OnTerminal("parley", ["join", room, "--identity", "alice", "--server", server, "--listen-only",
                                                  "--no-playback", "--duration", "15"])
            defer { alice.stop() }
            #expect(bob.waitFor(seconds: 5) { $0.contains("alice joined") }, "\(bob.stdout)")
            alice.type(Array("t".utf8))
            alice.type(Array("café ☕".utf8))  // C3 A9 and E2 98 95: several bytes a character
            alice.type([0x0D])                 // Enter
            #expect(bob.waitFor(seconds: 5) { $0.contains("text from alice: café ☕") }, "bob: \(bob.stdout)")
            #expect(!bob.stdout.contains("Ã"))
            #expect(alice.waitFor(seconds: 5) { $0.contains("you: café ☕") }, "\(alice.output)")  // her own log says it too
            alice.type(Array("q".utf8))
            alice.process.waitUntilExit()
            #expect(alice.process.terminationStatus == 0)
        }
    }
}
