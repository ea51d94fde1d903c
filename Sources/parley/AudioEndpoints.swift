import Foundation
import ParleyAudioIO
import ParleyNet

/// Where the client's microphone audio comes from: an ALSA device, a WAV file (paced in real time by the loop),
/// a test tone, or nothing (listen-only). Every source yields 20 ms frames of 48 kHz mono S16.
enum CaptureSource {
    case device(AlsaDevice)
    case file(samples: [Int16], loop: Bool, position: Int)
    case tone(frequency: Double, amplitude: Double, phase: Double)
    case none

    /// Fills `frame` (960 samples); returns false when a non-looping file has ended (the frame is then silence).
    mutating func next(into frame: UnsafeMutableBufferPointer<Int16>) throws(AudioIOError) -> Bool {
        switch self {
        case .device(let d):
            try d.read(into: frame, frames: frame.count)
            return true
        case .file(let samples, let loop, var position):
            var ended = false
            for i in 0..<frame.count {
                if position >= samples.count {
                    if loop && !samples.isEmpty { position = 0 } else { ended = true }
                }
                frame[i] = position < samples.count ? samples[position] : 0
                if position < samples.count { position += 1 }
            }
            self = .file(samples: samples, loop: loop, position: position)
            return !ended
        case .tone(let frequency, let amplitude, var phase):
            let step = 2 * Double.pi * frequency / 48_000
            for i in 0..<frame.count {
                frame[i] = Int16(max(-32_767, min(32_767, amplitude * 32_767 * sin(phase))))
                phase += step
                if phase > 2 * Double.pi { phase -= 2 * Double.pi }
            }
            self = .tone(frequency: frequency, amplitude: amplitude, phase: phase)
            return true
        case .none:
            frame.update(repeating: 0)
            return true
        }
    }

    var isDevice: Bool { if case .device = self { true } else { false } }
}

/// Where what the person hears goes: an ALSA device, a WAV file (48 kHz mono S16, header kept valid as it grows), or
/// nowhere.
enum PlaybackSink {
    case device(AlsaDevice)
    case file(WAVWriter)
    case none

    func play(_ frame: UnsafeBufferPointer<Int16>) throws(AudioIOError) {
        switch self {
        case .device(let d): try d.write(frame, frames: frame.count)
        case .file(let w): try w.write(frame)
        case .none: break
        }
    }

    /// Keeps a WAV file's header valid (called every second and at exit).
    func checkpoint() throws(AudioIOError) {
        if case .file(let w) = self { try w.updateHeader() }
    }

    func finish() throws(AudioIOError) {
        switch self {
        case .file(let w): try w.finish()
        case .device(let d): d.close()
        case .none: break
        }
    }
}

/// The audio options every talking command shares (`join`, `listen`, `call`).
struct AudioOptions {
    static let valued: Set<String> = ["device", "capture-device", "playback-device", "input", "output", "tone", "amplitude",
                                       "bitrate", "complexity", "min-delay"]
    static let switches: Set<String> = ["loop", "echo-cancel", "denoise", "no-denoise", "agc", "no-playback", "dtx",
        "no-dtx",
                                        "no-red"]
    static let usage = """
      audio: [--device PCM | --capture-device PCM --playback-device PCM] [--input FILE.wav [--loop]] [--output FILE.wav]
             [--tone HZ [--amplitude 0..1]] [--echo-cancel] [--denoise|--no-denoise] [--agc] [--no-playback]
             [--bitrate BPS] [--complexity 0..10] [--dtx|--no-dtx] [--min-delay MS] [--no-red]
             Without --input/--tone the microphone is the ALSA capture device (default "default"); without --output the
             ALSA playback device plays. --input replaces capture (any WAV, resampled), --output records what you hear
             (48 kHz mono WAV), --no-playback discards it. Noise suppression is on for a microphone, off for files/tones;
             DTX (nothing sent in silence) is on except for --tone (Opus takes a steady tone for background noise).
             --min-delay holds every receive buffer at least MS (0...1000) behind the network: more delay, no stretching
             below it (default 0: the buffers adapt to the path). --no-red: neither ask for nor send RFC 2198
             redundancy (by default a lossy path's packets carry the two frames before them, where the relay agrees).
    """

    var captureDevice = "default"
    var playbackDevice = "default"
    var input: String?
    var output: String?
    var loop = false
    var tone: Double?
    var amplitude = 0.3
    var echoCancel = false
    var denoise: Bool
    var agc = false
    var noPlayback = false
    var dtx: Bool
    var bitrate: Int32 = 56_000
    var complexity: Int32 = 10
    var minimumDelayMilliseconds: Int64 = 0
    /// Ask for RFC 2198 redundancy at join (`--no-red` turns it off).
    var redundancy = true
    /// Whether the command takes `--listen-only` (`join`), so the hint after a device failed may suggest it.
    var offersListenOnly = false

    init(_ o: Options) {
        if let d = o["device"] { captureDevice = d; playbackDevice = d }
        if let d = o["capture-device"] { captureDevice = d }
        if let d = o["playback-device"] { playbackDevice = d }
        input = o["input"]
        output = o["output"]
        loop = o.has("loop")
        if let t = o["tone"] {
            guard let f = Double(t), (20...20_000).contains(f) else { fail("--tone must be a frequency in 20...20000 Hz") }
            tone = f
        }
        if let a = o["amplitude"] {
            guard let v = Double(a), (0...1).contains(v) else { fail("--amplitude must be in 0...1") }
            amplitude = v
        }
        if let b = o["bitrate"] {
            guard let v = Int32(b), (6_000...510_000).contains(v) else { fail("--bitrate must be 6000...510000") }
            bitrate = v
        }
        if let c = o["complexity"] {
            guard let v = Int32(c), (0...10).contains(v) else { fail("--complexity must be 0...10") }
            complexity = v
        }
        if let m = o["min-delay"] {
            guard let v = Int64(m), (0...1_000).contains(v) else { fail("--min-delay must be 0...1000 (milliseconds)") }
            minimumDelayMilliseconds = v
        }
        echoCancel = o.has("echo-cancel")
        denoise = o.has("denoise") || (!o.has("no-denoise") && o["input"] == nil && o["tone"] == nil)
        agc = o.has("agc")
        redundancy = !o.has("no-red")
        noPlayback = o.has("no-playback")
        dtx = o.has("dtx") || (!o.has("no-dtx") && o["tone"] == nil)
    }

    /// Opens the capture side (nil source = listen-only); exits with a one-line error on failure.
    func openCapture(listenOnly: Bool) -> CaptureSource {
        if listenOnly { return .none }
        if let tone { return .tone(frequency: tone, amplitude: amplitude, phase: 0) }
        if let input {
            do {
                let samples = try WAVReader(path: input).readAllMono48k()
                return .file(samples: samples, loop: loop, position: 0)
            } catch {
                fail("cannot read \(input): \(error.message)", code: 1)
            }
        }
        do {
            return .device(try AlsaDevice(name: captureDevice, direction: .capture, periodFrames: 480, periods: 4))
        } catch {
            fail(error.message + "\n" + Self.noDeviceHint(capture: true, offersListenOnly: offersListenOnly), code: 1)
        }
    }

    /// Opens the playback side; exits with a one-line error on failure.
    func openPlayback() -> PlaybackSink {
        if noPlayback { return .none }
        if let output {
            do {
                return .file(try WAVWriter(path: output))
            } catch {
                fail(error.message, code: 1)
            }
        }
        do {
            return .device(try AlsaDevice(name: playbackDevice, direction: .playback, periodFrames: 480, periods: 4))
        } catch {
            fail(error.message + "\n" + Self.noDeviceHint(capture: false, offersListenOnly: offersListenOnly), code: 1)
        }
    }

    /// The one line said after a device failed to open: what to use instead of a sound card — to talk (after the
    /// microphone failed), for what you hear, and, where the command takes it, to only listen.
    static func noDeviceHint(capture: Bool, offersListenOnly: Bool) -> String {
        "parley: no usable sound device: "
            + (capture
                ? "talk with --tone HZ or --input FILE.wav (and --output FILE.wav or --no-playback for what you hear)"
                : "record what you hear with --output FILE.wav, or discard it with --no-playback")
            + (offersListenOnly ? "; only listen with --listen-only --output FILE.wav" : "")
            + "; or point ALSA at Samples/asoundrc (see its header)"
    }

    /// Devices are real-time only when both ends are ALSA; files and tones are paced by the loop's clock.
    var usesDevices: Bool { input == nil && tone == nil }
}
