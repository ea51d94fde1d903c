/// An errno value from a failed system call, with the call's name.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call that failed.
    public var call: String
    /// errno.
    public var code: Int32
    /// A system error.
    public init(_ call: String, _ code: Int32) { self.call = call; self.code = code }
    /// "bind: Address already in use".
    public var description: String { "\(call): \(SystemCalls.kernel.errorText(code))" }
}
