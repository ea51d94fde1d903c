import Testing
import Glibc
@testable import ParleyAudioIO

@Suite struct AudioLevelTests {
    @Test func fullScaleSquareIsZero() {
        let square = (0..<960).map { $0 % 48 < 24 ? Int16(32767) : Int16(-32767) }
        #expect(square.withUnsafeBufferPointer { audioLevel($0) } == 0)
    }

    @Test func silenceIs127() {
        let silence = [Int16](repeating: 0, count: 960)
        #expect(silence.withUnsafeBufferPointer { audioLevel($0) } == 127)
        #expect([Int16]().withUnsafeBufferPointer { audioLevel($0) } == 127)
    }

    @Test func minus20dBFSSineIsAbout23() {
        let sine = TestSignals.sine(frequency: 1000, amplitude: 0.1, count: 960)
        let level = sine.withUnsafeBufferPointer { audioLevel($0) }
        #expect((22...24).contains(level))
    }
}
