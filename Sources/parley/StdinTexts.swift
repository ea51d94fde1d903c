import Foundation
import ParleyClientCore

/// `parley join` without its live view (no terminal, or `--no-tui`): each line typed or piped to it is a room text,
/// sent once the room is joined. The end of stdin leaves the room once what was read is sent and answered — but only
/// when a line was read, or stdin is a terminal (Ctrl-D): a join run from a script with stdin at /dev/null, or closed,
/// stays for its `--duration` (or until its `--input` ends, or Ctrl-C) as before. A line `/quit` leaves too. A terminal
/// is read only while this process is in its foreground: a join started with `&` from a shell would otherwise be
/// stopped (SIGTTIN) at its first read.
final class StdinTexts {
    private var lines = TextLines()
    private let isTerminal = isatty(0) == 1
    /// Lines read and not yet sent (the room is not joined yet, or they came between two ticks).
    private(set) var waiting: [TextLines.Line] = []
    /// Lines read so far (empty ones are not counted).
    private(set) var linesRead = 0
    /// Stdin ended (or cannot be read): it is no longer watched.
    private(set) var ended = false
    /// The person asked to leave: `/quit`, or the end of what they typed or piped.
    private(set) var wantsToLeave = false

    /// Whether to poll stdin now.
    var watched: Bool { !ended && (!isTerminal || tcgetpgrp(0) == getpgrp()) }

    /// Reads what stdin holds; call only when poll said it is readable, so the read does not wait.
    func read() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { Foundation.read(0, $0.baseAddress, $0.count) }
        if n > 0 {
            take(lines.feed(buffer[..<n]))
            return
        }
        if n < 0 && (errno == EINTR || errno == EAGAIN) { return }
        take(lines.finish())
        ended = true
        if linesRead > 0 || isTerminal { wantsToLeave = true }
    }

    /// Takes the lines waiting to be sent.
    func takeWaiting() -> [TextLines.Line] {
        defer { waiting = [] }
        return waiting
    }

    /// Puts back lines that could not be sent yet (the signalling channel was full), ahead of the rest.
    func putBack(_ unsent: [TextLines.Line]) { waiting = unsent + waiting }

    private func take(_ new: [TextLines.Line]) {
        for line in new where !wantsToLeave {  // nothing after /quit
            if case .text(let text) = line, text.trimmingCharacters(in: .whitespaces) == "/quit" {
                wantsToLeave = true
                return
            }
            linesRead += 1
            waiting.append(line)
        }
    }
}
