import CSpeexDSP

/// libspeexdsp preprocessor on 20 ms mono frames: noise suppression, AGC, VAD; and optional echo cancellation.
///
/// `process` does not allocate. `@unchecked Sendable`: may be handed to another thread, but used by one thread at a time
/// (the speex states carry history from frame to frame).
public final class VoiceProcessor: @unchecked Sendable {
    /// Which stages run.
    public struct Options: Sendable {
        /// Noise suppression.
        public var denoise = true
        /// Automatic gain control.
        public var agc = false
        /// Voice activity detection (when off, `process` always returns true).
        public var vad = true
        /// Acoustic echo cancellation against the played-back signal.
        public var echoCancel = false
        /// How long an echo the canceller models, in milliseconds (its filter length).
        public var echoTailMilliseconds = 200
        /// The defaults: denoise and VAD on, AGC and echo cancellation off.
        public init() {}
    }

    /// Samples per frame (960 = 20 ms at 48 kHz).
    public let frameSamples: Int
    private let preprocess: OpaquePointer
    private let echo: OpaquePointer?
    private let echoOutput: UnsafeMutableBufferPointer<Int16>
    private let silentReference: UnsafeMutableBufferPointer<Int16>

    /// Creates the speex states for `frameSamples`-sample frames at `sampleRate` Hz.
    ///
    /// - Throws: `cannot create …` when libspeexdsp refuses the parameters.
    public init(frameSamples: Int = 960, sampleRate: Int = 48_000, options: Options = Options()) throws(AudioIOError) {
        precondition(frameSamples > 0 && sampleRate > 0)
        guard let preprocess = speex_preprocess_state_init(Int32(frameSamples), Int32(sampleRate)) else {
            throw AudioIOError("cannot create speex preprocessor for \(frameSamples)-sample frames at \(sampleRate) Hz")
        }
        var echo: OpaquePointer?
        if options.echoCancel {
            let tail = max(frameSamples, options.echoTailMilliseconds * sampleRate / 1000)
            guard let state = speex_echo_state_init(Int32(frameSamples), Int32(tail)) else {
                speex_preprocess_state_destroy(preprocess)
                throw AudioIOError("cannot create speex echo canceller with a \(options.echoTailMilliseconds) ms tail")
            }
            var rate = Int32(sampleRate)
            _ = parley_echo_ctl_int(state, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
            _ = parley_preprocess_set_echo_state(preprocess, state)
            echo = state
        }
        func set(_ request: Int32, _ on: Bool) {
            var value: Int32 = on ? 1 : 0
            _ = parley_preprocess_ctl_int(preprocess, request, &value)
        }
        set(SPEEX_PREPROCESS_SET_DENOISE, options.denoise)
        set(SPEEX_PREPROCESS_SET_AGC, options.agc)
        // libspeexdsp prints "The VAD has been replaced by a hack…" on stderr on every SET_VAD, whatever the value;
        // its VAD starts off, so it is asked for only when wanted (a microphone join, with VAD off, prints nothing).
        if options.vad { set(SPEEX_PREPROCESS_SET_VAD, true) }
        set(SPEEX_PREPROCESS_SET_DEREVERB, false)

        self.frameSamples = frameSamples
        self.preprocess = preprocess
        self.echo = echo
        echoOutput = .allocate(capacity: echo == nil ? 0 : frameSamples)
        silentReference = .allocate(capacity: echo == nil ? 0 : frameSamples)
        silentReference.initialize(repeating: 0)
        echoOutput.initialize(repeating: 0)
    }

    deinit {
        speex_preprocess_state_destroy(preprocess)
        if let echo { speex_echo_state_destroy(echo) }
        echoOutput.deallocate()
        silentReference.deallocate()
    }

    /// Processes one captured frame in place (after echo cancellation against `playedReference` when enabled: the frame that was played back at the same time); returns the VAD decision (true = speech).
    ///
    /// `frame` (and `playedReference`, when given) must hold exactly `frameSamples` samples. With echo cancellation on,
    /// a `nil` reference means nothing was played (silence is used, keeping the canceller's timeline).
    public func process(_ frame: UnsafeMutableBufferPointer<Int16>, playedReference: UnsafeBufferPointer<Int16>?) -> Bool {
        precondition(frame.count == frameSamples, "frame must hold frameSamples samples")
        if let echo {
            let reference = playedReference ?? UnsafeBufferPointer(silentReference)
            precondition(reference.count == frameSamples, "playedReference must hold frameSamples samples")
            speex_echo_cancellation(echo, frame.baseAddress, reference.baseAddress, echoOutput.baseAddress)
            _ = frame.update(fromContentsOf: echoOutput)
        }
        return speex_preprocess_run(preprocess, frame.baseAddress) != 0
    }
}
