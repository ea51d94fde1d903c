import Foundation
import Glibc
import ParleyNet
import Testing

/// `PrivateFile` against the real kernel in a scratch directory, and against scripted calls for what a test cannot
/// make the kernel do (a file system without hard links, a failing fsync).
@Suite("PrivateFile: 0700 directories, no-follow reads, complete files linked into place and never over another")
struct PrivateFileTests {
    static func scratch() -> String { NSTemporaryDirectory() + "parley-private-\(getpid())-\(UUID().uuidString)" }

    @Test("publish links a complete 0600 file into place, leaves no temporary behind, and never replaces one already there")
    func publishOnce() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let status = try PrivateFile.makeDirectory(directory + "/a/b")
        #expect(status.isDirectory && status.permissions == 0o700)
        let path = directory + "/a/b/secret"
        #expect(try PrivateFile.publish([1, 2, 3], at: path))
        #expect(try PrivateFile.publish([4, 5, 6], at: path) == false)
        let read = try #require(try PrivateFile.read(path, limit: 16))
        #expect(read.bytes == [1, 2, 3])
        #expect(read.status.isRegularFile && read.status.permissions == 0o600 && read.status.size == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory + "/a/b") == ["secret"])
        #expect(try PrivateFile.read(directory + "/a/b/none", limit: 16) == nil)
        // Larger than the limit: the status, no bytes.
        let big = try #require(try PrivateFile.read(path, limit: 2))
        #expect(big.bytes.isEmpty && big.status.size == 3)
    }

    @Test("a symbolic link is not followed unless asked; a file where a directory should be is ENOTDIR")
    func noFollow() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try PrivateFile.makeDirectory(directory)
        #expect(try PrivateFile.publish([7], at: directory + "/target"))
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: directory + "/target")
        #expect(throws: SystemError("open \(directory)/link", ELOOP)) { _ = try PrivateFile.read(directory + "/link", limit: 16) }
        #expect(throws: SystemError("open \(directory)/target", ENOTDIR)) { _ = try PrivateFile.makeDirectory(directory + "/target") }
        // Asked to follow links (TLS files behind certbot's links), it reads the target and reports the target's mode.
        let followed = try #require(try PrivateFile.read(directory + "/link", limit: 16, followingLinks: true))
        #expect(followed.bytes == [7] && followed.status.isRegularFile && followed.status.permissions == 0o600)
    }

    @Test("without hard links (EPERM from link) the file is renamed into place; the temporary name is always removed")
    func renameFallback() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try PrivateFile.makeDirectory(directory)
        let unlinked = Box<[String]>([])
        var calls = SystemCalls.kernel
        calls.link = { _, _ in -EPERM }
        calls.unlink = { path in unlinked.value.append(String(cString: path)); return Glibc.unlink(path) == 0 ? 0 : -errno }
        #expect(try PrivateFile.publish([9, 9], at: directory + "/secret", calls: calls))
        #expect(try PrivateFile.read(directory + "/secret", limit: 16)?.bytes == [9, 9])
        #expect(unlinked.value.count == 1 && unlinked.value[0].hasPrefix(directory + "/.secret."))
    }

    @Test("a failing fsync is an error, and nothing appears under the name")
    func fsyncFailure() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try PrivateFile.makeDirectory(directory)
        var calls = SystemCalls.kernel
        calls.fsync = { _ in -EIO }
        #expect(throws: SystemError.self) { _ = try PrivateFile.publish([1], at: directory + "/secret", calls: calls) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}
