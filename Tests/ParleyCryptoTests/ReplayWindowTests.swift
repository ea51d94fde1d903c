import ParleyCrypto
import Testing

/// The sliding anti-replay bitmap (RFC 6479, WireGuard's layout): at most once, late within the window, never too old.
@Suite("ReplayWindow")
struct ReplayWindowTests {
    @Test("in order, each counter once")
    func inOrder() throws {
        var window = ReplayWindow()
        #expect(window.highest == nil)
        for counter in UInt64(0)..<5000 { try window.mark(counter) }
        #expect(window.highest == 4999)
        #expect(throws: NoiseError.replayed) { try window.check(4999) }
        #expect(throws: NoiseError.replayed) { try window.check(4999 - ReplayWindow.size + 1) }
        #expect(throws: NoiseError.tooOld) { try window.check(4999 - ReplayWindow.size) }
    }

    @Test("reordered within the window: every late counter accepted once")
    func reordered() throws {
        var window = ReplayWindow()
        try window.mark(2047)
        for counter in stride(from: UInt64(2046), through: 0, by: -1) { try window.mark(counter) }
        for counter in UInt64(0)...2047 { #expect(throws: NoiseError.replayed) { try window.check(counter) } }
        try window.mark(2048)
        #expect(throws: NoiseError.tooOld) { try window.check(0) }
        #expect(throws: NoiseError.replayed) { try window.check(1) }
    }

    @Test("a jump far ahead forgets everything behind the new window, and gaps stay acceptable",
          arguments: [UInt64(64), 2048, 2111, 4096, 1 << 40])
    func jump(distance: UInt64) throws {
        var window = ReplayWindow()
        try window.mark(10)
        try window.mark(10 + distance)
        if distance < ReplayWindow.size {
            #expect(throws: NoiseError.replayed) { try window.check(10) }
            try window.mark(11)
        } else {
            #expect(throws: NoiseError.tooOld) { try window.check(10) }
        }
        // Every counter just below the new highest is new (blocks cleared on the way, none aliased).
        for counter in (10 + distance - min(distance - 1, ReplayWindow.size - 1))..<(10 + distance) where counter != 11 {
            try window.check(counter)
        }
    }

    @Test("block boundaries: 63→64, 127→128, and a wrap of the 33-block ring")
    func blockBoundaries() throws {
        var window = ReplayWindow()
        for counter: UInt64 in [63, 64, 127, 128, 33 * 64 - 1, 33 * 64, 33 * 64 + 1] { try window.mark(counter) }
        #expect(throws: NoiseError.replayed) { try window.check(33 * 64) }
        #expect(throws: NoiseError.tooOld) { try window.check(64) }
        try window.check(0 + 33 * 64 - 100)
    }

    @Test("2^64−1 is reserved; 2^64−2 is the last counter")
    func limit() throws {
        var window = ReplayWindow()
        #expect(throws: NoiseError.nonceExhausted) { try window.mark(UInt64.max) }
        try window.mark(UInt64.max - 1)
        #expect(throws: NoiseError.replayed) { try window.mark(UInt64.max - 1) }
        try window.mark(UInt64.max - 2)
        #expect(throws: NoiseError.tooOld) { try window.check(0) }
    }
}
