import Foundation
import ParleyNet
import ParleyWire

/// What the person sees: a live view when both ends of the terminal are a TTY (and `--no-tui` is not given), or one
/// line per event otherwise (pipes, CI). The live view puts the terminal in raw mode and restores it on `close()`.
final class TerminalUI {
    let interactive: Bool
    private var saved = termios()
    private var log: [String] = []
    private var lastDraw = Instant.origin
    private var dirty = true
    /// The text being typed after `t`, or nil when not typing.
    var typing: String?
    /// The header lines of the live view (room, members, speakers), set by the command.
    var status: [String] = [] { didSet { dirty = true } }
    /// The key help shown at the bottom.
    var keys = "m mute/unmute · t type a message · q leave"

    init(noTUI: Bool) {
        interactive = !noTUI && isatty(0) == 1 && isatty(1) == 1
        guard interactive else { return }
        tcgetattr(0, &saved)
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 0
            cc[Int(VTIME)] = 0
        }
        tcsetattr(0, TCSANOW, &raw)
        writeRaw("\u{1B}[?25l")  // hide the cursor
    }

    /// Restores the terminal.
    func close() {
        guard interactive else { return }
        tcsetattr(0, TCSANOW, &saved)
        writeRaw("\u{1B}[?25h\n")
    }

    /// Reports one event: a line of output, or a line in the live view's log.
    func event(_ line: String) {
        if interactive {
            log.append(line)
            if log.count > 200 { log.removeFirst(log.count - 200) }
            dirty = true
        } else {
            writeLine(line)
        }
    }

    /// Reports a change in the link to the relay (silent, back): a line in the live view's log, or a line on
    /// standard error without it, where a person watching a script's output looks for trouble.
    func notice(_ line: String) {
        if interactive { event(line) } else { writeLine("parley: " + line, fd: 2) }
    }

    /// Rings the terminal bell (incoming call).
    func bell() { writeRaw("\u{7}") }

    /// Reads one key if one is waiting (live view only).
    func key() -> UInt8? {
        guard interactive else { return nil }
        var byte: UInt8 = 0
        return read(0, &byte, 1) == 1 ? byte : nil
    }

    /// Redraws the live view at most 10 times a second.
    func draw(now: Instant) {
        guard interactive, dirty, now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        dirty = false
        var size = winsize()
        let rows = ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_row > 0 ? Int(size.ws_row) : 24
        var screen = "\u{1B}[H\u{1B}[2J"
        for line in status { screen += line + "\r\n" }
        screen += String(repeating: "─", count: 40) + "\r\n"
        let room = max(1, rows - status.count - 4)
        for line in log.suffix(room) { screen += line + "\r\n" }
        screen += "\u{1B}[\(rows - 1);1H"
        screen += typing.map { "message: \($0)▏" } ?? keys
        writeRaw(screen)
    }

    /// Marks the view as needing a redraw.
    func touch() { dirty = true }

    private func writeRaw(_ s: String) {
        var s = s
        s.withUTF8 { buf in
            var offset = 0
            while offset < buf.count {
                let n = write(1, buf.baseAddress! + offset, buf.count - offset)
                if n <= 0 { return }
                offset += n
            }
        }
    }
}
