import ParleyWire
import Testing

@Suite("HotLines: the cache lines a wakeup's packets used, noted for the next wakeup")
struct HotLinesTests {
    @Test("a span is noted as the 64-byte lines it covers, each once, aligned down")
    func spansBecomeLines() {
        let hot = HotLines(capacity: 16)
        let base = UnsafeMutableRawPointer.allocate(byteCount: 512, alignment: 64)
        defer { base.deallocate() }
        hot.note(UnsafeRawPointer(base + 60), bytes: 10)   // bytes 60..69: two lines
        hot.note(UnsafeRawPointer(base + 128), bytes: 128)  // exactly two lines
        hot.note(UnsafeRawPointer(base + 300), bytes: 0)    // an empty span still names its line
        let expected = [0, 64, 128, 192, 256].map { UnsafeRawPointer(base + $0) }
        #expect(hot.count == expected.count)
        #expect((0..<hot.count).map { hot.lines[$0] } == expected)
    }

    @Test("a burst past the capacity stops noting; clear starts over")
    func capacityAndClear() {
        let hot = HotLines(capacity: 4)
        let base = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 64)
        defer { base.deallocate() }
        hot.note(UnsafeRawPointer(base), bytes: 1024)
        #expect(hot.count == 4)
        #expect(hot.lines[3] == UnsafeRawPointer(base + 192))
        hot.clear()
        #expect(hot.count == 0)
        final class Box { var a = 0, b = 0 }
        let box = Box()
        hot.note(object: box, bytes: 8)
        #expect(hot.count == 1)
        let address = UInt(bitPattern: Unmanaged.passUnretained(box).toOpaque())
        #expect(hot.lines[0] == UnsafeRawPointer(bitPattern: address & ~63))
    }
}
