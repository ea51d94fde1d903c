import ParleyClientCore
import ParleyWire
import Testing

@Suite("Lines typed or piped to parley join without its live view: one room text each")
struct TextLinesTests {
    @Test("lines split at \\n (and \\r\\n), across reads; a character split across reads is whole; no empty lines")
    func splitting() {
        var lines = TextLines()
        #expect(lines.feed(Array("hello\nsecond li".utf8)) == [.text("hello")])
        #expect(lines.feed(Array("ne\r\n\n\r\ncaf".utf8) + [0xC3]) == [.text("second line")])
        #expect(lines.feed([0xA9] + Array("\n".utf8)) == [.text("café")])
        #expect(lines.finish() == [])
    }

    @Test("the last line without a newline comes out at the end of the stream")
    func lastLine() {
        var lines = TextLines()
        #expect(lines.feed(Array("one\ntwo".utf8)) == [.text("one")])
        #expect(lines.finish() == [.text("two")])
        #expect(lines.finish() == [])
    }

    @Test("invalid UTF-8 is repaired, not sent as it came")
    func invalidUTF8() {
        var lines = TextLines()
        #expect(lines.feed([0x61, 0xFF, 0x62, 0x0A]) == [.text("a\u{FFFD}b")])
    }

    @Test("a line as long as a text may be is sent; one byte longer is not, and what follows it is read as before",
          arguments: [0, 1])
    func longestLine(over: Int) {
        var lines = TextLines()
        let line = [UInt8](repeating: UInt8(ascii: "x"), count: Signalling.maxTextBytes + over)
        let out = lines.feed(line + Array("\r\nnext\n".utf8))
        #expect(out.first == (over == 0 ? .text(String(decoding: line, as: UTF8.self)) : .tooLong(bytes: line.count)))
        #expect(out.dropFirst() == [.text("next")])
    }

    @Test("a line without end is counted, not kept (past one text's bytes the rest is dropped): one tooLong")
    func bounded() {
        var lines = TextLines()
        let chunk = [UInt8](repeating: UInt8(ascii: "z"), count: 65_536)
        for _ in 0..<16 { #expect(lines.feed(chunk).isEmpty) }
        #expect(lines.feed([0x0A]) == [.tooLong(bytes: 16 * 65_536)])
        #expect(lines.finish() == [])
    }
}
