import ParleyClientCore
import Testing

@Suite("The live view's message line decodes UTF-8")
struct LineEditorTests {
    /// Feeds `bytes` one at a time, as a raw-mode terminal delivers them; returns the outcomes that were not `.editing`.
    static func type(_ bytes: [UInt8], into editor: inout LineEditor) -> [LineEditor.Outcome] {
        bytes.map { editor.feed($0) }.filter { $0 != .editing }
    }

    @Test("`café ☕⏎` typed byte by byte arrives as café ☕, not as one character per byte")
    func multiByteCharacters() {
        var editor = LineEditor()
        let bytes: [UInt8] = [0x63, 0x61, 0x66,  // c a f
                              0xC3, 0xA9,        // é  (U+00E9)
                              0x20,              // space
                              0xE2, 0x98, 0x95,  // ☕ (U+2615)
                              0x0D]              // Enter
        #expect(Self.type(bytes, into: &editor) == [.finished("café ☕")])
        #expect(editor.text.isEmpty)
    }

    @Test("a four-byte character, and Backspace removing a whole character, not a byte")
    func fourBytesAndBackspace() {
        var editor = LineEditor()
        _ = Self.type([0x68, 0x69, 0x20, 0xF0, 0x9F, 0x98, 0x80], into: &editor)  // "hi 😀" (U+1F600)
        #expect(editor.text == "hi 😀")
        _ = editor.feed(0x7F)  // DEL
        #expect(editor.text == "hi ")
        _ = Self.type([0xC3, 0xBC, 0x08, 0x61], into: &editor)  // ü, BS, a
        #expect(editor.text == "hi a")
    }

    @Test("an unfinished sequence shows nothing until its last byte")
    func partialSequence() {
        var editor = LineEditor()
        _ = editor.feed(0xE2)
        _ = editor.feed(0x98)
        #expect(editor.text == "")
        _ = editor.feed(0x95)
        #expect(editor.text == "☕")
    }

    @Test("malformed bytes become U+FFFD; Esc cancels; control bytes are ignored", arguments: [
        ([0x80, 0x61] as [UInt8], "\u{FFFD}a"),        // a stray continuation byte
        ([0xC3, 0x61], "\u{FFFD}a"),                   // a lead byte cut short by ASCII
        ([0xFF, 0x62], "\u{FFFD}b"),                   // a byte UTF-8 never uses
        ([0x01, 0x09, 0x63], "c"),                     // ^A and Tab are not text
    ])
    func malformed(bytes: [UInt8], text: String) {
        var editor = LineEditor()
        _ = Self.type(bytes, into: &editor)
        #expect(editor.text == text)
        #expect(editor.feed(27) == .cancelled)
        #expect(editor.text.isEmpty)
    }
}
