import Foundation
import ParleyAuth
import ParleyRelay
import ParleyTestSupport
import Testing

@Suite("The relay's identity key in state_dir: made once (0700/0600), read back, refused when others may read it or it is no key")
struct RelayKeyFileTests {
    @Test("first start makes the directory (and its parents) 0700 and a 32-byte key file 0600")
    func firstStartMakesTheKey() throws {
        let scratch = ScratchDirectory()
        defer { scratch.remove() }
        let directory = scratch.path + "/state/parley-relay"
        let loaded = try RelayKeyFile.loadOrCreate(stateDirectory: directory)
        #expect(loaded.created)
        #expect(loaded.path == directory + "/relay-key")
        #expect(scratch.mode(scratch.path) == 0o700)
        #expect(scratch.mode(directory) == 0o700)
        #expect(scratch.mode(loaded.path) == 0o600)
        let bytes = try #require(FileManager.default.contents(atPath: loaded.path))
        #expect([UInt8](bytes) == loaded.keyPair.secretKey)
        #expect(loaded.keyPair.publicKey.count == 32)
        #expect(Base64URL.encode(loaded.keyPair.publicKey).utf8.count == 43)
        // Nothing else is left in the directory (the temporary file was removed after the link).
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["relay-key"])
    }

    @Test("a later start reads the same key back")
    func laterStartReadsTheSameKey() throws {
        let scratch = ScratchDirectory()
        defer { scratch.remove() }
        let first = try RelayKeyFile.loadOrCreate(stateDirectory: scratch.path)
        let second = try RelayKeyFile.loadOrCreate(stateDirectory: scratch.path + "/")
        #expect(!second.created)
        #expect(second.keyPair.publicKey == first.keyPair.publicKey)
        #expect(second.keyPair.secretKey == first.keyPair.secretKey)
    }

    @Test("relays starting at once on one state directory all end up with one key", arguments: [8])
    func concurrentStartsAgree(relays: Int) async throws {
        let scratch = ScratchDirectory()
        defer { scratch.remove() }
        let path = scratch.path
        let keys = await withTaskGroup(of: [UInt8]?.self) { group in
            for _ in 0..<relays { group.addTask { try? RelayKeyFile.loadOrCreate(stateDirectory: path).keyPair.publicKey } }
            var all: [[UInt8]?] = []
            for await k in group { all.append(k) }
            return all
        }
        #expect(keys.count == relays && keys.allSatisfy { $0 != nil })
        #expect(Set(keys.compactMap { $0 }).count == 1)
        #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["relay-key"])
    }

    @Test("a key file group or others may read (or write) is refused, naming the file and the fix", arguments: [0o640, 0o604, 0o620, 0o644])
    func looseKeyFileRefused(mode: Int) throws {
        let scratch = ScratchDirectory()
        defer { scratch.remove() }
        let made = try RelayKeyFile.loadOrCreate(stateDirectory: scratch.path)
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: made.path)
        do {
            _ = try RelayKeyFile.loadOrCreate(stateDirectory: scratch.path)
            Issue.record("a key file of mode \(String(mode, radix: 8)) was accepted")
        } catch {
            #expect(error.description.contains(made.path))
            #expect(error.description.contains("chmod 600"))
            #expect(error.description.contains("0" + String(mode, radix: 8)))
        }
    }

    @Test("a key file of the wrong size is refused, never replaced", arguments: [0, 31, 33, 64])
    func wrongSizeRefused(size: Int) throws {
        let scratch = ScratchDirectory()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = scratch.path + "/relay-key"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 9, count: size), attributes: [.posixPermissions: 0o600]))
        do {
            _ = try RelayKeyFile.loadOrCreate(stateDirectory: scratch.path)
            Issue.record("a \(size)-byte key file was accepted")
        } catch {
            #expect(error.description.contains("is \(size) bytes, not 32"))
        }
        #expect(FileManager.default.contents(atPath: path)?.count == size)
    }

    @Test("a state directory that cannot be created, is a file, or others may write to is refused")
    func badDirectoryRefused() throws {
        let scratch = ScratchDirectory()
        defer { scratch.remove() }
        try FileManager.default.createDirectory(atPath: scratch.path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = scratch.path + "/a-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        #expect(throws: ConfigError.self) { try RelayKeyFile.loadOrCreate(stateDirectory: file) }
        #expect(throws: ConfigError.self) { try RelayKeyFile.loadOrCreate(stateDirectory: file + "/below") }
        #expect(throws: ConfigError.self) { try RelayKeyFile.loadOrCreate(stateDirectory: "/proc/parley-relay") }
        let shared = scratch.path + "/shared"
        try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o777])
        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: shared)
        do {
            _ = try RelayKeyFile.loadOrCreate(stateDirectory: shared)
            Issue.record("a world-writable state directory was accepted")
        } catch {
            #expect(error.description.contains("chmod 700 \(shared)"))
        }
        #expect(!FileManager.default.fileExists(atPath: shared + "/relay-key"))
    }

    @Test("the default state directory: XDG_STATE_HOME, else ~/.local/state, /var/lib for root, none without HOME")
    func defaultDirectory() {
        #expect(RelayKeyFile.defaultStateDirectory(environment: ["XDG_STATE_HOME": "/x/state", "HOME": "/home/a"], userID: 1000)
                == "/x/state/parley-relay")
        #expect(RelayKeyFile.defaultStateDirectory(environment: ["XDG_STATE_HOME": "relative", "HOME": "/home/a/"], userID: 1000)
                == "/home/a/.local/state/parley-relay")
        #expect(RelayKeyFile.defaultStateDirectory(environment: ["HOME": "/root"], userID: 0) == "/var/lib/parley-relay")
        #expect(RelayKeyFile.defaultStateDirectory(environment: [:], userID: 1000) == nil)
    }

    @Test("state_dir comes from the file, PARLEY_STATE_DIR or --state-dir; an empty one is refused")
    func configKey() throws {
        var c = RelayConfig()
        #expect(c.stateDir == nil)
        try c.load(environment: ["PARLEY_STATE_DIR": "/srv/parley"])
        #expect(c.stateDir == "/srv/parley")
        try c.set("state_dir", "/elsewhere")
        #expect(c.stateDir == "/elsewhere")
        #expect(throws: ConfigError.self) { try c.set("state_dir", "") }
    }
}
