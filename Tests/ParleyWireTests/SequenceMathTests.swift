import Testing
import ParleyWire

@Suite("Sequence and timestamp math")
struct SequenceMathTests {
    static let sequenceComparisons: [(UInt16, UInt16, Bool)] = [
        // (a, b, a is newer than b)
        (1, 0, true),
        (0, 65535, true),          // wrapped forward by one
        (65535, 0, false),         // one behind, across the wrap
        (5, 65530, true),          // 11 ahead across the wrap
        (65530, 5, false),
        (0, 0, false),             // equal is not newer
        (0x7FFF, 0, true),         // last distance that counts as newer
        (0x8000, 0, false),        // exactly half the range: older
        (0, 0x8000, false),        // ...in both directions
        (0, 0x8001, true),
        (65535, 0x8000, true),     // 32767 ahead
    ]

    @Test(arguments: sequenceComparisons)
    func sequenceNewer(a: UInt16, b: UInt16, newer: Bool) {
        #expect(isNewer(a, than: b) == newer)
    }

    static let timestampComparisons: [(UInt32, UInt32, Bool)] = [
        (1, 0, true),
        (0, UInt32.max, true),               // 2^32−1 → 0
        (UInt32.max, 0, false),
        (100, UInt32.max - 100, true),
        (UInt32.max - 100, 100, false),
        (7, 7, false),
        (0x7FFF_FFFF, 0, true),
        (0x8000_0000, 0, false),
        (0, 0x8000_0000, false),
    ]

    @Test(arguments: timestampComparisons)
    func timestampNewer(a: UInt32, b: UInt32, newer: Bool) {
        #expect(isNewer(a, than: b) == newer)
    }

    static let distances: [(UInt16, UInt16, Int)] = [
        // (from, to, signed distance)
        (0, 1, 1),
        (65535, 0, 1),
        (0, 65535, -1),
        (65530, 5, 11),
        (5, 65530, -11),
        (100, 90, -10),
        (0, 0x7FFF, 32767),
        (0, 0x8000, -32768),
        (1234, 1234, 0),
    ]

    @Test(arguments: distances)
    func distance(from: UInt16, to: UInt16, expected: Int) {
        #expect(sequenceDistance(from: from, to: to) == expected)
        #expect((-32768...32767).contains(sequenceDistance(from: from, to: to)))
    }

    static let sequenceRuns: [([UInt16], [Int64])] = [
        // (input sequence numbers, unwrapped values)
        ([7], [7]),
        ([65534, 65535, 0, 1], [65534, 65535, 65536, 65537]),          // forward across the wrap
        ([65535, 0, 65535, 1], [65535, 65536, 65535, 65537]),          // late packet from before the wrap
        ([0, 65535, 1], [0, -1, 1]),                                   // reordered before the first value
        ([1, 0, 65535, 65534], [1, 0, -1, -2]),                        // backwards across the wrap
        ([0, 30000, 60000, 24464, 54464, 18928], [0, 30000, 60000, 90000, 120000, 150000]), // two wraps
        ([10, 10, 10], [10, 10, 10]),                                  // duplicates
    ]

    @Test(arguments: sequenceRuns)
    func sequenceUnwrapper(input: [UInt16], expected: [Int64]) {
        var unwrapper = SequenceUnwrapper()
        #expect(input.map { unwrapper.unwrap($0) } == expected)
    }

    static let timestampRuns: [([UInt32], [Int64])] = [
        ([UInt32.max - 1, UInt32.max, 0, 1], [4_294_967_294, 4_294_967_295, 4_294_967_296, 4_294_967_297]),
        ([UInt32.max, 0, UInt32.max, 960], [4_294_967_295, 4_294_967_296, 4_294_967_295, 4_294_967_296 + 960]),
        ([0, UInt32.max, UInt32.max - 959], [0, -1, -960]),            // backwards across the wrap
        ([0, 0x7000_0000, 0xE000_0000, 0x5000_0000, 0xC000_0000],
         [0, 0x7000_0000, 0xE000_0000, 0x1_5000_0000, 0x1_C000_0000]), // big forward steps
    ]

    @Test(arguments: timestampRuns)
    func timestampUnwrapper(input: [UInt32], expected: [Int64]) {
        var unwrapper = TimestampUnwrapper()
        #expect(input.map { unwrapper.unwrap($0) } == expected)
    }

    @Test func errorsHaveReasons() {
        let all: [WireError] = [
            .truncated, .badVersion, .badPadding, .badCSRCCount, .badExtension, .badLength, .unknownType,
            .bufferTooSmall, .badField,
        ]
        #expect(Set(all.map(\.reason)).count == all.count)
        #expect(all.allSatisfy { !$0.reason.isEmpty })
    }
}
