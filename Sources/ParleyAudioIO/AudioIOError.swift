/// An error from an audio device, an audio file or a DSP state, carrying one clear line for the user.
///
/// Messages name the thing that failed and why, e.g. `cannot open ALSA device foo: No such file or directory`
/// or `cannot write /tmp/a.wav: No space left on device`.
public struct AudioIOError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The one-line, human-readable message.
    public var message: String
    /// The same as `message`.
    public var description: String { message }

    /// Creates an error with the given message.
    public init(_ message: String) {
        self.message = message
    }
}
