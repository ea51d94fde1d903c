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

    /// The last full screen drawn (the live view clears the screen with ESC [H ESC [2J before each redraw).
    var lastScreen: String {
        let all = output
        guard let r = all.range(of: "\u{1B}[H\u{1B}[2J", options: .backwards) else { return all }
        return String(all[r.upperBound...])
    }

    /// The live view's header in the last screen: its lines above the rule (─).
    var header: [String] {
        // Lines end "\r\n", which the pty's output processing (ONLCR) turns into "\r\r\n".
        // Split by scalars: "\r\n" is one Character, so a Character split would not see the "\n".
        let lines = lastScreen.unicodeScalars.filter { $0 != "\r" }.split(separator: "\n").map { String(String.UnicodeScalarView($0)) }
        return Array(lines.prefix { !$0.hasPrefix("─") })
    }

    /// Everything the program drew so far.
    var output: String { lock.withLock { String(decoding: screen, as: UTF8.self) } }

    func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        process.waitUntilExit()
        close(master)
    }
}
