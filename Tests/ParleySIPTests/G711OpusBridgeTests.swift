import Foundation
import ParleySIP
import Testing

@Suite("SIP: G.711 to Opus and back")
struct G711OpusBridgeTests {
    /// 20 ms of a 440 Hz tone at 8 kHz, phase carried over by `frame`.
    static func tone(frame: Int, amplitude: Double = 8_000) -> [Int16] {
        (0..<160).map { i in Int16(amplitude * sin(2 * Double.pi * 440 * Double(frame * 160 + i) / 8_000)) }
    }

    /// The share of `samples`' energy in a tone at `frequency` (8 kHz audio; the correlation with it, through
    /// Parseval: a pure tone of whole cycles gives 1).
    static func share(_ samples: [Int16], at frequency: Double) -> Double {
        var re = 0.0, im = 0.0, energy = 0.0
        for (i, s) in samples.enumerated() {
            let a = 2 * Double.pi * frequency * Double(i) / 8_000
            re += Double(s) * cos(a)
            im += Double(s) * sin(a)
            energy += Double(s) * Double(s)
        }
        let n = Double(samples.count)
        return energy > 0 ? 2 * (re * re + im * im) / (n * energy) : 0
    }

    @Test(arguments: [G711Law.mu, .a])
    func aToneGoesThroughBothWays(law: G711Law) throws {
        // A phone's tone, coded as G.711 by a second bridge's path (G.711 encode through Opus decode is the
        // room-to-phone direction), into Opus and back out as G.711.
        let phone = try G711OpusBridge(law: law), room = try G711OpusBridge(law: law)
        var heard: [Int16] = []
        var opus = [UInt8](repeating: 0, count: 1_500), g711 = [UInt8](repeating: 0, count: 2_880)
        // The phone's G.711: a tone through the µ/A-law table of `room` (an Opus packet of the tone decoded by it).
        let source = try OpusPacketSource(), listener = try OpusPacketSource()
        for frame in 0..<60 {
            let pcm = Self.tone(frame: frame)
            let n = source.encode(pcm, into: &opus)
            let g = room.g711(fromOpus: UnsafeRawBufferPointer(start: opus, count: n),
                              into: UnsafeMutableRawBufferPointer(start: &g711, count: g711.count))
            #expect(g == 160)
            #expect(phone.push(g711: UnsafeRawBufferPointer(start: g711, count: g)))
            let o = phone.popOpus(into: UnsafeMutableRawBufferPointer(start: &opus, count: opus.count))
            #expect(o > 0 && o < 200)  // 24 kb/s: 60 bytes a packet, give or take
            #expect(phone.lastLevel < 30)  // -dBov of a tone at a quarter of full scale: 15
            let back = try listener.decode(UnsafeRawBufferPointer(start: opus, count: o))
            if frame >= 10 { heard += back }
        }
        let share = Self.share(heard, at: 440)
        #expect(share > 0.9, "440 Hz share \(share)")
    }

    @Test func anyPacketSizeIn20msFramesOut() throws {
        let bridge = try G711OpusBridge(law: .a)
        var out = [UInt8](repeating: 0, count: 1_500)
        func pop() -> Int { bridge.popOpus(into: UnsafeMutableRawBufferPointer(start: &out, count: out.count)) }
        let thirty = [UInt8](repeating: 0xD5, count: 240)  // 30 ms of A-law silence, as SIPp's pcap sends
        var frames = 0
        for _ in 0..<4 {
            #expect(bridge.push(g711: UnsafeRawBufferPointer(start: thirty, count: 240)))
            while pop() > 0 { frames += 1 }
        }
        #expect(frames == 6)  // 120 ms
        #expect(bridge.push(g711: UnsafeRawBufferPointer(start: thirty, count: 100)))
        #expect(pop() == 0)  // 100 samples wait
        bridge.dropPending()
        #expect(bridge.push(g711: UnsafeRawBufferPointer(start: thirty, count: 80)))
        #expect(pop() == 0)  // 80, not 180: what waited was dropped
    }

    @Test func wrongSizesAreRefused() throws {
        let bridge = try G711OpusBridge(law: .mu)
        var out = [UInt8](repeating: 0, count: 1_500)
        for size in [0, 481, 1_000] {
            let g = [UInt8](repeating: 0xFF, count: size)
            #expect(!bridge.push(g711: UnsafeRawBufferPointer(start: g, count: size)))
        }
        let garbage: [UInt8] = [0xFF, 0xFF, 0xFF]
        #expect(bridge.g711(fromOpus: UnsafeRawBufferPointer(start: garbage, count: 3),
                            into: UnsafeMutableRawBufferPointer(start: &out, count: out.count)) == 0)
        #expect(bridge.concealedG711(into: UnsafeMutableRawBufferPointer(start: &out, count: out.count)) == 160)
    }
}
