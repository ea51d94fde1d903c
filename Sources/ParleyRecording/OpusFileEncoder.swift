import COpusEnc

/// An Ogg Opus file encoded from PCM with Debian's libopusenc (48 kHz mono), written through `sink` (the caller's file:
/// the recorder's owner-only, never-followed files). Owned by one thread.
public final class OpusFileEncoder {
    /// Where the encoded pages go: true when written.
    public typealias Sink = (UnsafeRawBufferPointer) -> Bool

    private final class Box {
        let sink: Sink
        var failed = false
        init(_ sink: @escaping Sink) { self.sink = sink }
    }

    private var encoder: OpaquePointer?
    private let box: Box
    private let comments: OpaquePointer?

    private static let write: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<UInt8>?, Int32) -> Int32 = { user, bytes, count in
        guard let user else { return 1 }
        let box = Unmanaged<Box>.fromOpaque(user).takeUnretainedValue()
        guard box.sink(UnsafeRawBufferPointer(start: bytes, count: Int(count))) else { box.failed = true; return 1 }
        return 0
    }
    private static let close: @convention(c) (UnsafeMutableRawPointer?) -> Int32 = { _ in 0 }

    /// An encoder writing to `sink`, with `tags` ("KEY=value") in its comment header.
    public init(tags: [String], sink: @escaping Sink) throws(OpusFileError) {
        box = Box(sink)
        comments = ope_comments_create()
        for t in tags {
            guard let eq = t.firstIndex(of: "=") else { continue }
            _ = ope_comments_add(comments, String(t[..<eq]), String(t[t.index(after: eq)...]))
        }
        var callbacks = OpusEncCallbacks(write: Self.write, close: Self.close)
        var error: Int32 = 0
        encoder = ope_encoder_create_callbacks(&callbacks, Unmanaged.passUnretained(box).toOpaque(), comments, 48_000, 1, 0, &error)
        guard encoder != nil, error == 0 else {
            ope_comments_destroy(comments)
            throw OpusFileError(message: "libopusenc: " + String(cString: ope_strerror(error)))
        }
    }

    deinit {
        ope_encoder_destroy(encoder)
        ope_comments_destroy(comments)
    }

    /// Encodes `pcm` (48 kHz mono).
    public func write(_ pcm: UnsafeBufferPointer<Int16>) throws(OpusFileError) {
        let rc = ope_encoder_write(encoder, pcm.baseAddress, Int32(pcm.count))
        guard rc == 0, !box.failed else { throw OpusFileError(message: box.failed ? "the file could not be written" : String(cString: ope_strerror(rc))) }
    }

    /// Encodes what is buffered and writes the last page.
    public func finish() throws(OpusFileError) {
        let rc = ope_encoder_drain(encoder)
        guard rc == 0, !box.failed else { throw OpusFileError(message: box.failed ? "the file could not be written" : String(cString: ope_strerror(rc))) }
    }
}

/// Encoding or writing an Opus file failed.
public struct OpusFileError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}
