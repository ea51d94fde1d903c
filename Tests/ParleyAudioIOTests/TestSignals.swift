import Foundation

/// Signal generators and measurements shared by the tests.
enum TestSignals {
    /// `count` samples of a sine of `amplitude` (1 = full scale) at `frequency` Hz.
    static func sine(frequency: Double, amplitude: Double, count: Int, sampleRate: Double = 48_000, phase: Int = 0) -> [Int16] {
        (0..<count).map { index in
            Int16((amplitude * 32767 * sin(2 * Double.pi * frequency * Double(index + phase) / sampleRate)).rounded())
        }
    }

    /// Deterministic white noise (a 64-bit LCG), uniform in ±`amplitude` (in LSBs).
    static func whiteNoise(amplitude: Int, count: Int, seed: UInt64 = 0x9E37_79B9_7F4A_7C15) -> [Int16] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let unit = Double(state >> 11) / Double(1 << 53) * 2 - 1
            return Int16(unit * Double(amplitude))
        }
    }

    /// Goertzel power of `frequency` in `samples`, normalised so a full-scale sine is about 0.25.
    static func goertzel<C: Collection>(_ samples: C, frequency: Double, sampleRate: Double = 48_000) -> Double where C.Element == Int16 {
        let coefficient = 2 * cos(2 * Double.pi * frequency / sampleRate)
        var s1 = 0.0, s2 = 0.0
        for sample in samples {
            let s0 = Double(sample) / 32768 + coefficient * s1 - s2
            s2 = s1
            s1 = s0
        }
        let n = Double(samples.count)
        return (s1 * s1 + s2 * s2 - coefficient * s1 * s2) / (n * n)
    }

    /// Mean square energy.
    static func energy<C: Collection>(_ samples: C) -> Double where C.Element == Int16 {
        samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))
    }

    /// Little-endian bytes of Int16 samples (the raw S16_LE format).
    static func bytes(_ samples: [Int16]) -> [UInt8] {
        samples.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: UInt16(bitPattern: $0) >> 8)] }
    }

    /// A fresh private directory for one test.
    static func temporaryDirectory(_ name: String = #function) -> String {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        let path = NSTemporaryDirectory() + "parley-audio-\(getpid())-\(safe)-\(UUID().uuidString.prefix(8))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func readFile(_ path: String) -> [UInt8] {
        [UInt8](FileManager.default.contents(atPath: path) ?? Data())
    }

    static func writeFile(_ path: String, _ bytes: [UInt8]) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    static func uint32(_ bytes: [UInt8], _ offset: Int) -> Int {
        Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
    }
}
