/// Writes a 16-bit PCM WAV file (48 kHz mono by default) as samples arrive.
///
/// The header is written at once with zero sizes and patched by `updateHeader()`; call that periodically so that a
/// program killed mid-recording leaves a valid file. Plain POSIX I/O, no buffering beyond the kernel's.
///
/// `@unchecked Sendable`: may be handed to another thread, but used by one thread at a time.
public final class WAVWriter: @unchecked Sendable {
    /// Frames written so far.
    public private(set) var framesWritten: Int = 0
    private let file: POSIXFile
    private let path: String
    private let channels: Int
    private var headerFrames = -1

    /// Creates/truncates `path` and writes a 44-byte header for 48 kHz mono S16 (or the given rate/channels).
    ///
    /// - Throws: `cannot create X: <errno text>` or `cannot write X: <errno text>`.
    public init(path: String, sampleRate: Int = 48_000, channels: Int = 1) throws(AudioIOError) {
        precondition(sampleRate > 0 && channels > 0 && channels <= 65_535)
        self.path = path
        self.channels = channels
        file = try POSIXFile.createTruncating(path)
        let header = WAVHeader.canonical(sampleRate: sampleRate, channels: channels, dataBytes: 0)
        try file.writeAll(header)
        headerFrames = 0
    }

    deinit {
        if file.isOpen { try? updateHeader() }
    }

    /// Appends interleaved samples (`pcm.count` must be a multiple of `channels`).
    ///
    /// - Throws: `cannot write X: No space left on device` etc. (errno text), or `cannot write X: the file is finished`.
    public func write(_ pcm: UnsafeBufferPointer<Int16>) throws(AudioIOError) {
        precondition(pcm.count % channels == 0, "sample count not a multiple of the channel count")
        guard file.isOpen else { throw AudioIOError("cannot write \(path): the file is finished") }
        guard !pcm.isEmpty else { return }
        #if _endian(little)
        try file.writeAll(UnsafeRawBufferPointer(pcm))
        #else
        let littleEndian = pcm.map { $0.littleEndian }
        try file.writeAll(littleEndian.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] })
        #endif
        framesWritten += pcm.count / channels
    }

    /// Patches the RIFF and data sizes so the file is valid; called by `finish()`; also call it periodically (e.g. every second) so an interrupted program leaves a valid file. Safe to call repeatedly.
    ///
    /// Two `pwrite`s of 4 bytes; does nothing when the sizes are already current or the file is finished.
    public func updateHeader() throws(AudioIOError) {
        guard file.isOpen, headerFrames != framesWritten else { return }
        let dataBytes = framesWritten * channels * 2
        var riff: [UInt8] = []
        WAVHeader.appendUInt32(&riff, WAVHeader.riffSize(dataBytes: dataBytes))
        var data: [UInt8] = []
        WAVHeader.appendUInt32(&data, WAVHeader.clampedSize(dataBytes))
        try file.writeAll(riff, at: WAVHeader.riffSizeOffset)
        try file.writeAll(data, at: WAVHeader.dataSizeOffset)
        headerFrames = framesWritten
    }

    /// Patches the header and closes the file. Later calls do nothing; later writes throw.
    public func finish() throws(AudioIOError) {
        guard file.isOpen else { return }
        do throws(AudioIOError) {
            try updateHeader()
        } catch {
            try? file.close()
            throw error
        }
        try file.close()
    }
}
