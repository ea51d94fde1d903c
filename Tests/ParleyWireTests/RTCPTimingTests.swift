import Testing
@testable import ParleyWire

@Suite("NTP time and round trips (RFC 3550 §4, §6.4.1)")
struct NTPTimestampTests {
    @Test func fromUnixMilliseconds() {
        #expect(NTPTimestamp(unixMilliseconds: 0).bits == 2_208_988_800 << 32)
        // 1.5 s after the Unix epoch: half a second is 0x8000_0000 of the fraction.
        #expect(NTPTimestamp(unixMilliseconds: 1_500).bits == (UInt64(2_208_988_801) << 32 | 0x8000_0000))
        #expect(NTPTimestamp(unixMilliseconds: 1_500).middle == UInt32(truncatingIfNeeded: 2_208_988_801 << 16) | 0x8000)
        // 250 ms: a quarter of 2^32.
        #expect(NTPTimestamp(unixMilliseconds: 250).bits & 0xFFFF_FFFF == 0x4000_0000)
    }

    @Test func compactUnits() {
        #expect(NTPTimestamp.compactUnits(.milliseconds(5_250)) == 0x0005_4000)
        #expect(NTPTimestamp.compactUnits(-.seconds(1)) == 0)
        #expect(NTPTimestamp.compactUnits(.seconds(100_000)) == UInt32.max)
    }

    @Test func roundTripOfTheRFCExample() {
        // A = 0xb710:8000, LSR = 0xb705:2000, DLSR = 0x0005:4000: 6.125 s.
        #expect(NTPTimestamp.roundTrip(arrival: 0xB710_8000, lastSR: 0xB705_2000, delaySinceLastSR: 0x0005_4000) == .milliseconds(6_125))
        // Across the 32-bit wrap of the middle word.
        #expect(NTPTimestamp.roundTrip(arrival: 0x0000_1000, lastSR: 0xFFFF_F000, delaySinceLastSR: 0x0000_1000) == .nanoseconds(0x1000 * 1_000_000_000 / 65_536))
        #expect(NTPTimestamp.roundTrip(arrival: 0xB710_8000, lastSR: 0, delaySinceLastSR: 0) == nil)        // no SR named
        #expect(NTPTimestamp.roundTrip(arrival: 0xB705_2000, lastSR: 0xB705_2000, delaySinceLastSR: 1) == nil)  // negative
    }
}

@Suite("RTCP report interval (RFC 3550 §6.3.1, §A.7)")
struct RTCPIntervalTests {
    /// 64 kbit/s session: 8,000 bytes/s, RTCP 400 bytes/s.
    static let calculator = RTCPInterval(sessionBandwidth: 8_000, minimum: .seconds(1))

    @Test func floorForSmallSessions() {
        #expect(Self.calculator.deterministic(members: 2, senders: 1, weSent: true, averageSize: 100) == .seconds(1))
        #expect(Self.calculator.deterministic(members: 2, senders: 1, weSent: true, averageSize: 100, initial: true) == .milliseconds(500))
    }

    @Test func receiversShareSeventyFivePercent() {
        // 100 members, 1 sender: a receiver's share is 300 bytes/s among 99 receivers of 200-byte reports: 66 s.
        #expect(Self.calculator.deterministic(members: 100, senders: 1, weSent: false, averageSize: 200) == .seconds(66))
        // The one sender gets 100 bytes/s to itself: 2 s.
        #expect(Self.calculator.deterministic(members: 100, senders: 1, weSent: true, averageSize: 200) == .seconds(2))
    }

    @Test func manySendersShareEverything() {
        // 40 of 100 send (> 25 %): all 100 share 400 bytes/s: 50 s for 200-byte reports, senders and receivers alike.
        #expect(Self.calculator.deterministic(members: 100, senders: 40, weSent: true, averageSize: 200) == .seconds(50))
        #expect(Self.calculator.deterministic(members: 100, senders: 40, weSent: false, averageSize: 200) == .seconds(50))
    }

    @Test(arguments: [(0.0, 0.410_42), (0.5, 0.820_83), (0.999_999, 1.231_24)])
    func randomizedAndCompensated(unit: Double, seconds: Double) {
        let t = RTCPInterval.randomized(.seconds(1), unit: unit)
        #expect(abs(t.seconds - seconds) < 0.000_01)
    }

    @Test func seededDrawsStayInRange() {
        var random = SeededRandomNumberGenerator(seed: 7)
        var sum = 0.0
        for _ in 0..<1_000 {
            let t = Self.calculator.next(members: 2, senders: 1, weSent: false, averageSize: 100, using: &random)
            #expect(t >= Interval(seconds: 0.5 / RTCPInterval.compensation) && t <= Interval(seconds: 1.5 / RTCPInterval.compensation))
            sum += t.seconds
        }
        #expect(abs(sum / 1_000 - 1 / RTCPInterval.compensation) < 0.03)   // mean Td / (e − 3/2)
        var again = SeededRandomNumberGenerator(seed: 7)
        var first = SeededRandomNumberGenerator(seed: 7)
        #expect(Self.calculator.next(members: 2, senders: 1, weSent: false, averageSize: 100, using: &again)
            == Self.calculator.next(members: 2, senders: 1, weSent: false, averageSize: 100, using: &first))
    }

    @Test func averageSize() {
        #expect(RTCPInterval.averageSize(100, adding: 260) == 110)
    }
}
