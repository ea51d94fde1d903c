import COpus

/// Why a libopus call (or the argument check in front of it) failed: libopus's negative error code and a message that
/// starts with `opus_strerror(code)` and says what was being done. Only built on failure, so the happy path never allocates.
public struct OpusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The libopus error code (`OPUS_BAD_ARG`, `OPUS_INVALID_PACKET`, …); always negative.
    public var code: Int32
    /// `opus_strerror(code)` followed by the context, e.g. `"invalid argument: frameSize 500 is not …"`.
    public var message: String

    /// An error with an explicit code and message.
    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// An error for `code`, its message built from `opus_strerror(code)` and `context`.
    init(code: Int32, context: String) {
        self.code = code
        self.message = "\(String(cString: opus_strerror(code))): \(context)"
    }

    /// An `OPUS_BAD_ARG` error raised by the Swift-side argument checks.
    static func badArgument(_ context: String) -> OpusError {
        OpusError(code: OPUS_BAD_ARG, context: context)
    }

    /// `message`, for logs and test failures.
    public var description: String { "OpusError(\(code)): \(message)" }

    /// `OPUS_BAD_ARG` (-1): an argument was invalid or out of range.
    public static let badArgumentCode: Int32 = OPUS_BAD_ARG
    /// `OPUS_BUFFER_TOO_SMALL` (-2): the output buffer cannot hold the result.
    public static let bufferTooSmallCode: Int32 = OPUS_BUFFER_TOO_SMALL
    /// `OPUS_INTERNAL_ERROR` (-3): libopus hit an internal error.
    public static let internalErrorCode: Int32 = OPUS_INTERNAL_ERROR
    /// `OPUS_INVALID_PACKET` (-4): the packet is corrupted or not Opus.
    public static let invalidPacketCode: Int32 = OPUS_INVALID_PACKET
    /// `OPUS_UNIMPLEMENTED` (-5): the request number is not supported.
    public static let unimplementedCode: Int32 = OPUS_UNIMPLEMENTED
    /// `OPUS_ALLOC_FAIL` (-7): libopus could not allocate its state.
    public static let allocationFailedCode: Int32 = OPUS_ALLOC_FAIL
}
