import CALSA
import Glibc

/// 48 kHz S16 PCM device through alsa-lib, blocking reads/writes of whole periods; recovers xruns with snd_pcm_recover and counts them.
///
/// The device is opened in blocking mode with interleaved S16 (native endian) access. The rate, period and buffer are asked
/// for with the `_near` calls, so the properties hold what the device actually granted (through a `plug` or `default`
/// device they are what was asked for).
///
/// `@unchecked Sendable`: the handle may be created on one thread and handed to another, but it must be used by one
/// thread at a time (alsa-lib PCM handles are not thread-safe). Reads/writes do not allocate.
public final class AlsaDevice: @unchecked Sendable {
    /// Whether the device records or plays.
    public enum Direction: Sendable {
        /// Recording (`SND_PCM_STREAM_CAPTURE`).
        case capture
        /// Playing (`SND_PCM_STREAM_PLAYBACK`).
        case playback
    }

    /// The ALSA PCM name, e.g. `default`, `hw:0,0`, `parley_in`.
    public let name: String
    /// Capture or playback.
    public let direction: Direction
    /// The granted sample rate in Hz.
    public let sampleRate: Int
    /// Channels per frame (samples are interleaved).
    public let channels: Int
    /// The granted period size in frames.
    public let periodFrames: Int
    /// Capture overruns (and suspends) recovered so far.
    public private(set) var overruns: Int = 0
    /// Playback underruns (and suspends) recovered so far.
    public private(set) var underruns: Int = 0

    private var pcm: OpaquePointer?

    /// Opens and configures `name`.
    ///
    /// - Throws: `cannot open ALSA device X: <snd_strerror>` when `snd_pcm_open` fails, or
    ///   `cannot configure ALSA device X: <what>: <snd_strerror>` when the device refuses the format.
    public init(name: String, direction: Direction, sampleRate: Int = 48_000, channels: Int = 1,
                periodFrames: Int = 480, periods: Int = 4) throws(AudioIOError) {
        precondition(sampleRate > 0 && channels > 0 && periodFrames > 0 && periods > 0)
        self.name = name
        self.direction = direction
        self.channels = channels

        AlsaDevice.silenceLibraryErrors
        var handle: OpaquePointer?
        let stream = direction == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK
        let openResult = snd_pcm_open(&handle, name, stream, 0)
        guard openResult >= 0, let handle else {
            throw AudioIOError("cannot open ALSA device \(name): \(AlsaDevice.text(openResult))")
        }

        do throws(AudioIOError) {
            let granted = try AlsaDevice.configure(handle, name: name, direction: direction, sampleRate: sampleRate,
                                                   channels: channels, periodFrames: periodFrames, periods: periods)
            self.sampleRate = granted.rate
            self.periodFrames = granted.periodFrames
        } catch {
            snd_pcm_close(handle)
            throw error
        }
        self.pcm = handle
    }

    deinit {
        close()
    }

    /// Installs a no-op ALSA error handler once per process (before the first ALSA call): without it alsa-lib prints
    /// its own `ALSA lib …` lines on stderr for every failed lookup, around the one-line error this type throws.
    private static let silenceLibraryErrors: Void = { _ = parley_alsa_silence_errors() }()

    /// Reads exactly `frames` frames (interleaved) — retries short reads, recovers -EPIPE/-ESTRPIPE with snd_pcm_recover (counted as overruns).
    ///
    /// `pcm` must hold at least `frames * channels` samples. Blocks until the frames have arrived.
    public func read(into pcm: UnsafeMutableBufferPointer<Int16>, frames: Int) throws(AudioIOError) {
        precondition(direction == .capture, "read(into:frames:) on a playback device")
        precondition(frames >= 0 && pcm.count >= frames * channels, "buffer smaller than frames * channels")
        guard let handle = self.pcm else { throw AudioIOError("ALSA device \(name) is closed") }
        var done = 0
        while done < frames {
            let n = snd_pcm_readi(handle, pcm.baseAddress! + done * channels, snd_pcm_uframes_t(frames - done))
            if n >= 0 {
                done += Int(n)
                continue
            }
            try recover(handle, Int32(n), operation: "read from")
        }
    }

    /// Writes exactly `frames` frames; recovers underruns (counted).
    ///
    /// `pcm` must hold at least `frames * channels` samples. Blocks while the device's buffer is full.
    public func write(_ pcm: UnsafeBufferPointer<Int16>, frames: Int) throws(AudioIOError) {
        precondition(direction == .playback, "write(_:frames:) on a capture device")
        precondition(frames >= 0 && pcm.count >= frames * channels, "buffer smaller than frames * channels")
        guard let handle = self.pcm else { throw AudioIOError("ALSA device \(name) is closed") }
        var done = 0
        while done < frames {
            let n = snd_pcm_writei(handle, pcm.baseAddress! + done * channels, snd_pcm_uframes_t(frames - done))
            if n >= 0 {
                done += Int(n)
                continue
            }
            try recover(handle, Int32(n), operation: "write to")
        }
    }

    /// Frames queued for playback (snd_pcm_delay), for latency accounting; 0 for capture.
    ///
    /// Also 0 when the device is closed or the delay cannot be read (e.g. right after an underrun).
    public func delayFrames() -> Int {
        guard direction == .playback, let handle = pcm else { return 0 }
        var delay: snd_pcm_sframes_t = 0
        guard snd_pcm_delay(handle, &delay) == 0 else { return 0 }
        return max(0, Int(delay))
    }

    /// Closes the device; playback first drains what is queued. Safe to call more than once; `deinit` calls it.
    public func close() {
        guard let handle = pcm else { return }
        pcm = nil
        if direction == .playback {
            _ = snd_pcm_drain(handle)
        }
        snd_pcm_close(handle)
    }

    /// PCM names from snd_device_name_hint("pcm") with their descriptions (for `parley devices`).
    ///
    /// Descriptions that alsa-lib spreads over several lines are joined with " — ". Empty when no hints are available.
    public static func list() -> [(name: String, description: String)] {
        silenceLibraryErrors
        var hints: UnsafeMutablePointer<UnsafeMutableRawPointer?>?
        guard snd_device_name_hint(-1, "pcm", &hints) == 0, let hints else { return [] }
        defer { snd_device_name_free_hint(hints) }
        var devices: [(name: String, description: String)] = []
        var index = 0
        while let hint = hints[index] {
            index += 1
            guard let name = takeString(snd_device_name_get_hint(hint, "NAME")) else { continue }
            let description = takeString(snd_device_name_get_hint(hint, "DESC")) ?? ""
            let oneLine = description.split(separator: "\n").map(String.init).joined(separator: " — ")
            devices.append((name: name, description: oneLine))
        }
        return devices
    }

    // MARK: - Private

    private func recover(_ handle: OpaquePointer, _ code: Int32, operation: String) throws(AudioIOError) {
        let isXrun = code == -EPIPE || code == -ESTRPIPE
        guard isXrun || code == -EINTR || code == -EAGAIN else {
            throw AudioIOError("cannot \(operation) ALSA device \(name): \(AlsaDevice.text(code))")
        }
        let result = snd_pcm_recover(handle, code, 1)
        guard result >= 0 else {
            throw AudioIOError("cannot recover ALSA device \(name): \(AlsaDevice.text(result))")
        }
        if isXrun {
            if direction == .capture { overruns += 1 } else { underruns += 1 }
        }
    }

    private static func configure(_ handle: OpaquePointer, name: String, direction: Direction, sampleRate: Int,
                                  channels: Int, periodFrames: Int, periods: Int)
        throws(AudioIOError) -> (rate: Int, periodFrames: Int) {
        func check(_ result: Int32, _ what: String) throws(AudioIOError) {
            if result < 0 { throw AudioIOError("cannot configure ALSA device \(name): \(what): \(text(result))") }
        }

        var hwOrNil: OpaquePointer?
        try check(snd_pcm_hw_params_malloc(&hwOrNil), "hw params")
        guard let hw = hwOrNil else { throw AudioIOError("cannot configure ALSA device \(name): out of memory") }
        defer { snd_pcm_hw_params_free(hw) }

        try check(snd_pcm_hw_params_any(handle, hw), "no configurations")
        try check(snd_pcm_hw_params_set_access(handle, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "interleaved access")
        try check(snd_pcm_hw_params_set_format(handle, hw, SND_PCM_FORMAT_S16), "S16 format")
        try check(snd_pcm_hw_params_set_channels(handle, hw, UInt32(channels)), "\(channels) channel(s)")
        var rate = UInt32(sampleRate)
        try check(snd_pcm_hw_params_set_rate_near(handle, hw, &rate, nil), "rate \(sampleRate)")
        var period = snd_pcm_uframes_t(periodFrames)
        try check(snd_pcm_hw_params_set_period_size_near(handle, hw, &period, nil), "period of \(periodFrames) frames")
        var bufferFrames = snd_pcm_uframes_t(Int(period) * periods)
        try check(snd_pcm_hw_params_set_buffer_size_near(handle, hw, &bufferFrames), "buffer of \(periods) periods")
        try check(snd_pcm_hw_params(handle, hw), "hw params")
        try check(snd_pcm_hw_params_get_period_size(hw, &period, nil), "period size")
        try check(snd_pcm_hw_params_get_buffer_size(hw, &bufferFrames), "buffer size")

        var swOrNil: OpaquePointer?
        try check(snd_pcm_sw_params_malloc(&swOrNil), "sw params")
        guard let sw = swOrNil else { throw AudioIOError("cannot configure ALSA device \(name): out of memory") }
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(handle, sw), "sw params")
        try check(snd_pcm_sw_params_set_avail_min(handle, sw, period), "avail min")
        // Playback starts once two periods are queued (or the whole buffer, if smaller), so the first write
        // does not underrun at once; capture starts on the first read.
        let start = direction == .playback ? min(bufferFrames, period * 2) : 1
        try check(snd_pcm_sw_params_set_start_threshold(handle, sw, start), "start threshold")
        try check(snd_pcm_sw_params(handle, sw), "sw params")
        try check(snd_pcm_prepare(handle), "prepare")
        return (Int(rate), Int(period))
    }

    /// `snd_strerror` text for a negative alsa-lib result.
    static func text(_ code: Int32) -> String {
        guard let cString = snd_strerror(code) else { return "error \(code)" }
        return String(cString: cString)
    }

    /// Copies and frees a malloc'd C string from alsa-lib.
    private static func takeString(_ cString: UnsafeMutablePointer<CChar>?) -> String? {
        guard let cString else { return nil }
        defer { free(cString) }
        return String(cString: cString)
    }
}
