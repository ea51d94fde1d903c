import ParleyWire

/// Lines of text from a byte stream: `parley join` without its live view sends each line typed or piped to it as a
/// room text. Bytes in, whole lines out (without their "\n" or "\r\n"; invalid UTF-8 repaired with U+FFFD, as the
/// relay would refuse it). A line never grows past `Signalling.maxTextBytes`: the bytes beyond are dropped up to the
/// next newline and the line comes out as `tooLong`, so a stream without newlines holds a bounded amount here.
public struct TextLines: Sendable {
    /// One line.
    public enum Line: Equatable, Sendable {
        /// A line to send (empty lines are skipped).
        case text(String)
        /// A line longer than a text may be: `bytes` of it were seen (at least), none is sent.
        case tooLong(bytes: Int)
    }

    private var pending: [UInt8] = []
    /// Bytes of the current line dropped past the limit (0: none), and whether the last of them was "\r".
    private var dropped = 0
    private var droppedReturn = false

    /// Nothing read yet.
    public init() {}

    /// Takes `bytes`; returns the lines they complete, in order.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Line] {
        var lines: [Line] = []
        for byte in bytes {
            if byte == UInt8(ascii: "\n") {
                if let line = take() { lines.append(line) }
            } else if pending.count < Signalling.maxTextBytes + 1 {  // one over: a "\r" may still be dropped at the end
                pending.append(byte)
            } else {
                dropped += 1
                droppedReturn = byte == UInt8(ascii: "\r")
            }
        }
        return lines
    }

    /// The end of the stream: the last line, if it had no newline.
    public mutating func finish() -> [Line] {
        take().map { [$0] } ?? []
    }

    /// The line in progress, emptied.
    private mutating func take() -> Line? {
        defer { pending.removeAll(keepingCapacity: true); dropped = 0 }
        if dropped > 0 { return .tooLong(bytes: pending.count + dropped - (droppedReturn ? 1 : 0)) }
        if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
        guard pending.count <= Signalling.maxTextBytes else { return .tooLong(bytes: pending.count) }
        guard !pending.isEmpty else { return nil }
        return .text(String(decoding: pending, as: UTF8.self))
    }
}
