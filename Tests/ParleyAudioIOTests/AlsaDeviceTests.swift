import Foundation
import Testing
@testable import ParleyAudioIO

/// Paths for the headless ALSA devices of `Samples/asoundrc`, and the environment that points alsa-lib at them.
///
/// alsa-lib reads `ALSA_CONFIG_PATH` once per process, so it is set once, before the first device is opened;
/// `PARLEY_ALSA_IN`/`PARLEY_ALSA_OUT` are read by the config's `@func getenv` at every open.
struct AlsaTestEnvironment: Sendable {
    let input: String
    let output: String

    static let shared: AlsaTestEnvironment = {
        let samples = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Samples/asoundrc").path
        let directory = TestSignals.temporaryDirectory("alsa")
        let environment = AlsaTestEnvironment(input: directory + "/in.raw", output: directory + "/out.raw")
        setenv("ALSA_CONFIG_PATH", samples, 1)
        setenv("PARLEY_ALSA_IN", environment.input, 1)
        setenv("PARLEY_ALSA_OUT", environment.output, 1)
        return environment
    }()
}

@Suite(.serialized) struct AlsaDeviceTests {
    let environment = AlsaTestEnvironment.shared

    @Test func captureDeliversTheInputFileTone() throws {
        let tone = TestSignals.sine(frequency: 1000, amplitude: 0.5, count: 48_000 * 5)
        TestSignals.writeFile(environment.input, TestSignals.bytes(tone))

        let device = try AlsaDevice(name: "parley_in", direction: .capture)
        #expect(device.sampleRate == 48_000)
        #expect(device.channels == 1)
        #expect(device.periodFrames == 480)
        var captured: [Int16] = []
        var frame = [Int16](repeating: 0, count: 960)
        for _ in 0..<50 {
            try frame.withUnsafeMutableBufferPointer { try device.read(into: $0, frames: 960) }
            captured += frame
        }
        device.close()

        #expect(captured.count == 48_000)
        let atTone = TestSignals.goertzel(captured, frequency: 1000)
        let offTone = TestSignals.goertzel(captured, frequency: 1500)
        #expect(atTone > 0.05)
        #expect(offTone < atTone / 1000)
        #expect(captured == Array(tone.prefix(48_000)))
        #expect(device.overruns == 0)
        #expect(device.delayFrames() == 0)
    }

    @Test func playbackWritesThePatternByteForByte() throws {
        let pattern = TestSignals.whiteNoise(amplitude: 30_000, count: 480 * 25)
        let device = try AlsaDevice(name: "parley_out", direction: .playback)
        #expect(device.periodFrames == 480)
        try pattern.withUnsafeBufferPointer { all in
            for start in stride(from: 0, to: all.count, by: 480) {
                try device.write(UnsafeBufferPointer(rebasing: all[start..<start + 480]), frames: 480)
            }
        }
        // What is queued never exceeds the device's buffer (4 periods by default), and a closed device reports none.
        let queued = device.delayFrames()
        #expect(queued <= 4 * device.periodFrames, "\(queued) frames queued in a \(4 * device.periodFrames)-frame buffer")
        device.close()
        #expect(device.delayFrames() == 0)
        #expect(device.underruns == 0)

        // The file plugin with format "raw" writes the samples with no header.
        #expect(TestSignals.readFile(environment.output) == TestSignals.bytes(pattern))
    }

    @Test func unknownDeviceIsAClearError() {
        #expect(throws: AudioIOError("cannot open ALSA device parley_no_such_device: No such file or directory")) {
            _ = try AlsaDevice(name: "parley_no_such_device", direction: .capture)
        }
    }

    @Test func closedDeviceThrows() throws {
        TestSignals.writeFile(environment.input, [UInt8](repeating: 0, count: 48_000))
        let device = try AlsaDevice(name: "parley_in", direction: .capture)
        device.close()
        device.close()
        var frame = [Int16](repeating: 0, count: 480)
        #expect(throws: AudioIOError("ALSA device parley_in is closed")) {
            try frame.withUnsafeMutableBufferPointer { try device.read(into: $0, frames: 480) }
        }
    }

    @Test func systemDevicesStillResolve() throws {
        // `null` comes from the system alsa.conf that Samples/asoundrc includes.
        let device = try AlsaDevice(name: "null", direction: .playback, periodFrames: 960, periods: 2)
        #expect(device.periodFrames == 960)
        let silence = [Int16](repeating: 0, count: 960 * 3)
        try silence.withUnsafeBufferPointer { try device.write($0, frames: 960 * 3) }
        device.close()
    }

    @Test func listNamesTheHeadlessDevices() {
        let devices = AlsaDevice.list()
        #expect(devices.contains { $0.name == "parley_in" && $0.description.contains("capture") })
        #expect(devices.contains { $0.name == "parley_out" })
        #expect(!devices.contains { $0.name == "parley_in_raw" })
        #expect(devices.allSatisfy { !$0.description.contains("\n") })
    }
}
