import Foundation

/// A fresh directory under the system's temporary directory, made by whoever writes into it first and removed by
/// `remove()`.
public struct ScratchDirectory: Sendable {
    /// The directory's path (no trailing slash); nothing exists there yet.
    public let path: String

    /// A path no other test (or test process) uses.
    public init() {
        path = NSTemporaryDirectory() + "parley-key-test-\(getpid())-\(UUID().uuidString)"
    }

    /// Removes the directory and everything in it.
    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// The permission bits of `file` (0o600…), or -1 when it cannot be read.
    public func mode(_ file: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: file))?[.posixPermissions] as? Int) ?? -1
    }
}
