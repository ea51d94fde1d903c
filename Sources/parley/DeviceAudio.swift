import Foundation
import ParleyAudioIO
import ParleyClientCore
import ParleyNet
import ParleyWire

/// The client's audio devices (or files, a tone) at the edge of `ClientEngine`: one 20 ms frame at a time, capture
/// → voice processing → the engine, and the engine's mix → playback. Owns the buffers both sides share.
final class DeviceAudio {
    let capture: CaptureSource
    private var captureState: CaptureSource
    let playback: PlaybackSink
    let processor: VoiceProcessor?
    let listenOnly: Bool
    private let frame = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 960)
    private let played = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 960)
    private var lastCheckpoint = Instant.origin
    private let audio: AudioOptions
    private(set) var inputEnded = false
    /// With PARLEY_TIMELINE set, the monotonic times of the first captured (sent) frame and of the first played frame
    /// go to stderr, so a benchmark can measure mouth-to-ear latency between two processes on one machine.
    private let timeline = ProcessInfo.processInfo.environment["PARLEY_TIMELINE"] != nil
    private var captureStart: Instant?, playbackStart: Instant?

    init(audio: AudioOptions, listenOnly: Bool) {
        self.audio = audio
        self.listenOnly = listenOnly
        capture = audio.openCapture(listenOnly: listenOnly)
        captureState = capture
        playback = audio.openPlayback()
        var options = VoiceProcessor.Options()
        options.denoise = audio.denoise
        options.agc = audio.agc
        options.echoCancel = audio.echoCancel
        options.vad = false  // speexdsp's VAD is a placeholder ("replaced by a hack"); voice comes from the level
        let anyProcessing = audio.denoise || audio.agc || audio.echoCancel
        processor = listenOnly || !anyProcessing ? nil : try? VoiceProcessor(options: options)
        frame.initialize(repeating: 0)
        played.initialize(repeating: 0)
    }

    deinit {
        frame.deallocate()
        played.deallocate()
    }

    /// The engine's configuration for these audio options.
    static func configuration(room: String, audio: AudioOptions, listenOnly: Bool, muted: Bool, reconnect: Bool,
                              security: SignallingSession.Security) -> ClientEngine.Configuration {
        var c = ClientEngine.Configuration(room: room)
        c.security = security
        c.listenOnly = listenOnly
        c.muted = muted
        c.reconnect = reconnect
        c.bitrate = audio.bitrate
        c.complexity = audio.complexity
        c.dtx = audio.dtx
        c.redundancy = audio.redundancy
        c.jitter.minimumDelay = .milliseconds(audio.minimumDelayMilliseconds)
        return c
    }

    /// One 20 ms tick: capture (a file or tone only once in the room, so nothing of it is lost to the join; a device
    /// all along so it never overruns), let the engine send it and mix what arrived, play the mix.
    func tick(now: Instant, engine: ClientEngine) throws(AudioIOError) {
        guard engine.phase == .inSession else { return }  // waiting to rejoin: devices rest, as the engine does
        let joined = engine.inRoom
        var captured: UnsafeBufferPointer<Int16>?
        var level: UInt8 = 127
        if !listenOnly, joined || capture.isDevice {
            if !(try captureState.next(into: frame)) { inputEnded = true }
            if timeline, joined, captureStart == nil {
                captureStart = now
                writeLine("timeline capture_start_ns \(now.nanoseconds)", fd: 2)
            }
            _ = processor?.process(frame, playedReference: audio.echoCancel ? UnsafeBufferPointer(played) : nil)
            level = audioLevel(UnsafeBufferPointer(frame))
            captured = UnsafeBufferPointer(frame)
        }
        guard engine.media(now: now, captured: captured, level: level, into: played.baseAddress!) else { return }
        try playback.play(UnsafeBufferPointer(played))
        if timeline, playbackStart == nil {
            playbackStart = now
            writeLine("timeline playback_start_ns \(now.nanoseconds)", fd: 2)
        }
        if now - lastCheckpoint >= .seconds(1) {
            lastCheckpoint = now
            try playback.checkpoint()
        }
    }

    /// Device xruns so far.
    var xruns: (over: Int, under: Int) {
        var over = 0, under = 0
        if case .device(let d) = capture { over = d.overruns }
        if case .device(let d) = playback { under = d.underruns }
        return (over, under)
    }

    /// Finalises the output file (valid WAV even after Ctrl-C).
    func finish() {
        do { try playback.finish() } catch { writeLine("parley: \(error.message)", fd: 2) }
    }
}
