/// The live view's message line: the bytes a terminal in raw mode delivers one `read` at a time in, the typed text out.
///
/// Terminals send UTF-8, so one character may take two to four bytes (`é` is C3 A9, `☕` is E2 98 95): the editor keeps
/// an unfinished sequence until its last byte arrives and only then appends the character, instead of taking each
/// byte for a character of its own (which turned `café` into `cafÃ©`). Enter sends, Esc cancels, Backspace (DEL or
/// BS) removes the last character; other control bytes are ignored. A malformed sequence becomes U+FFFD.
public struct LineEditor: Sendable, Equatable {
    /// What one byte did to the line.
    public enum Outcome: Sendable, Equatable {
        /// Still typing (the text may have changed).
        case editing
        /// Enter: the finished line (possibly empty); the editor is empty again.
        case finished(String)
        /// Esc: the line was dropped; the editor is empty again.
        case cancelled
    }

    /// The text typed so far (complete characters only).
    public private(set) var text = ""
    /// The bytes of a character not yet complete, and how many it needs.
    private var pending: [UInt8] = []
    private var needed = 0

    /// An empty line.
    public init() {}

    /// Takes one byte from the terminal.
    public mutating func feed(_ byte: UInt8) -> Outcome {
        if !pending.isEmpty {
            if byte & 0xC0 == 0x80 {  // a continuation byte
                pending.append(byte)
                if pending.count == needed {
                    text += String(decoding: pending, as: UTF8.self)
                    pending.removeAll(keepingCapacity: true)
                }
                return .editing
            }
            pending.removeAll(keepingCapacity: true)  // cut short: the lead byte is lost, this byte starts afresh
            text.unicodeScalars.append("\u{FFFD}")
        }
        switch byte {
        case 10, 13:
            let line = text
            text = ""
            return .finished(line)
        case 27:
            text = ""
            return .cancelled
        case 127, 8:
            if !text.isEmpty { text.removeLast() }
        case 0x20..<0x7F:
            text.unicodeScalars.append(Unicode.Scalar(byte))
        case 0xC2...0xDF: begin(byte, length: 2)
        case 0xE0...0xEF: begin(byte, length: 3)
        case 0xF0...0xF4: begin(byte, length: 4)
        case 0x80...0xFF:
            text.unicodeScalars.append("\u{FFFD}")  // a stray continuation byte or a byte UTF-8 never uses
        default:
            break  // other control bytes
        }
        return .editing
    }

    private mutating func begin(_ lead: UInt8, length: Int) {
        pending = [lead]
        needed = length
    }
}
