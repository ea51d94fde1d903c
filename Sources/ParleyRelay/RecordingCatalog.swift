import Foundation
import ParleyNet
import ParleyRecording
import ParleyRelayCore
import Synchronization

/// Where recordings live and how the API finds them:
///
///     <state_dir>/recordings/               0700
///         <id>/                             a recording: 16 hex digits, random (the API's id)
///             recording.json                its manifest: room, mode, times, why it stopped, its files
///             t<ssrc>.opus                  a member's track (8 hex digits: its SSRC), Ogg Opus
///             mix.opus                      the room's shared mix (mix and hybrid rooms), Ogg Opus
///
/// A file's API id is `<id>-mix` or `<id>-t<ssrc>`; ids are checked character by character before any path is
/// made from them, so no request can name anything outside the folder.
public struct RecordingCatalog: Sendable {
    /// `<state_dir>/recordings`.
    public let directory: String

    /// Write errors of the recordings now open (recording name → what failed), noted by the recorder as they happen:
    /// a full disk also stops their manifests from being rewritten, so `list` adds them to what the manifests say.
    public let writeErrors = RecordingWriteErrors()

    /// The catalog under `stateDirectory`.
    public init(stateDirectory: String) { directory = stateDirectory + "/recordings" }

    /// Free space a recording needs to start (below it, `POST …/recording` answers 507: the disk is full).
    public static let minimumFreeBytes: Int64 = 1 << 20

    /// Bytes free for the relay on the file system of the recordings (of the state directory before the first).
    public func freeBytes() -> Int64? {
        let path = FileManager.default.fileExists(atPath: directory) ? directory : (directory as NSString).deletingLastPathComponent
        return (try? FileManager.default.attributesOfFileSystem(forPath: path))?[.systemFreeSize].flatMap { ($0 as? NSNumber)?.int64Value }
    }

    static let manifestName = "recording.json"
    static let mixFileName = "mix.opus"
    static func trackFileName(ssrc: UInt32) -> String { "t" + hex(UInt64(ssrc), digits: 8) + ".opus" }

    /// A recording's id as people see it: the core's spelling (`RecordingTap.name`), which its members are told.
    public static func name(_ id: UInt64) -> String { RecordingTap.name(id) }
    static func hex(_ v: UInt64, digits: Int) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: max(0, digits - s.count)) + s
    }

    func folder(of id: UInt64) -> String { directory + "/" + Self.name(id) }

    /// One file of a recording, as `GET /v1/recordings` lists it.
    public struct Entry: Sendable, Equatable {
        /// The file's id (`GET /v1/recordings/{id}`).
        public var id: String
        /// The recording it belongs to, and its room.
        public var recording: String, room: String, mode: String
        /// `track` (one member) or `mix`.
        public var kind: String
        /// A track's member.
        public var identity: String?, name: String?
        /// Bytes on disk now, and the audio's length so far.
        public var size: Int, durationMilliseconds: Int64
        /// Unix ms; `stoppedAt` nil while it runs.
        public var startedAt: Int64, stoppedAt: Int64?
        /// Why it stopped, and a file's write error.
        public var reason: String?, error: String?
    }

    /// Every file of every recording, newest recording first. Unreadable manifests are skipped.
    public func list() -> [Entry] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var entries: [(Int64, Entry)] = []
        for name in names where Self.isRecordingName(name) {
            let folder = directory + "/" + name
            guard let read = try? PrivateFile.read(folder + "/" + Self.manifestName, limit: 1 << 20), read.status.isRegularFile,
                  let json = try? JSONSerialization.jsonObject(with: Data(read.bytes)) as? [String: Any],
                  let files = json["files"] as? [[String: Any]] else { continue }
            let started = (json["started_at_ms"] as? NSNumber)?.int64Value ?? 0
            for f in files {
                guard let file = f["file"] as? String, let kind = f["kind"] as? String, let stem = file.split(separator: ".").first else { continue }
                let id = name + "-" + stem
                guard Self.isFileID(id) else { continue }
                var size = 0
                if let info = try? FileManager.default.attributesOfItem(atPath: folder + "/" + file) { size = (info[.size] as? NSNumber)?.intValue ?? 0 }
                entries.append((started, Entry(id: id, recording: name, room: json["room"] as? String ?? "", mode: json["mode"] as? String ?? "",
                                               kind: kind, identity: f["identity"] as? String, name: f["name"] as? String, size: size,
                                               durationMilliseconds: (f["duration_ms"] as? NSNumber)?.int64Value ?? 0, startedAt: started,
                                               stoppedAt: (json["stopped_at_ms"] as? NSNumber)?.int64Value, reason: json["reason"] as? String,
                                               error: f["error"] as? String)))
            }
        }
        let errors = writeErrors.all()
        return entries.sorted { $0.0 != $1.0 ? $0.0 > $1.0 : $0.1.id < $1.1.id }.map { _, e in
            var e = e
            if e.error == nil, let why = errors[e.recording] { e.error = why }
            return e
        }
    }

    /// Closes the manifests of recordings a relay never finished (it was killed, or the machine lost power): each
    /// file's duration from its last complete Ogg page, its size from the disk, `stopped_at_ms` now, and why. Startup
    /// only (before the recorder runs). Returns the recordings closed.
    public func finishInterrupted(unixMilliseconds: Int64) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var finished: [String] = []
        for name in names.sorted() where Self.isRecordingName(name) {
            let folder = directory + "/" + name, manifestPath = folder + "/" + Self.manifestName
            guard let read = try? PrivateFile.read(manifestPath, limit: 1 << 20), read.status.isRegularFile,
                  var json = try? JSONSerialization.jsonObject(with: Data(read.bytes)) as? [String: Any],
                  json["stopped_at_ms"] == nil, let files = json["files"] as? [[String: Any]] else { continue }
            json["files"] = files.map { f -> [String: Any] in
                var f = f
                guard let file = f["file"] as? String, Self.isFileID(name + "-" + (file.split(separator: ".").first.map(String.init) ?? "")),
                      let handle = FileHandle(forReadingAtPath: folder + "/" + file) else { return f }
                defer { try? handle.close() }
                let size = (try? handle.seekToEnd()) ?? 0
                try? handle.seek(toOffset: size > 65_536 ? size - 65_536 : 0)
                let tail = (try? handle.readToEnd()) ?? Data()
                if let granule = OggPageScan.lastGranule(Array(tail)) {
                    f["duration_ms"] = max(0, granule - Int64(OpusHeaderPackets.preSkip)) / 48
                }
                f["bytes"] = Int(size)
                return f
            }
            json["stopped_at_ms"] = unixMilliseconds
            json["reason"] = "interrupted: the relay stopped without closing it; each file plays to its last complete page"
            guard let data = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]),
                  (try? PrivateFile.replace(Array(data), at: manifestPath)) != nil else { continue }
            finished.append(name)
        }
        return finished
    }

    /// Adds a file to a finished recording's manifest (the mixed rendition, made after it was written).
    static func addToManifest(folder: String, entry: [String: Any]) {
        let path = folder + "/" + manifestName
        guard let read = try? PrivateFile.read(path, limit: 1 << 20), read.status.isRegularFile,
              var json = try? JSONSerialization.jsonObject(with: Data(read.bytes)) as? [String: Any] else { return }
        json["files"] = (json["files"] as? [[String: Any]] ?? []) + [entry]
        guard let data = try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys]) else { return }
        try? PrivateFile.replace(Array(data), at: path)
    }

    /// 16 lowercase hex digits.
    static func isRecordingName(_ s: String) -> Bool {
        s.utf8.count == 16 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// `<16 hex>-mix` or `<16 hex>-t<8 hex>`, nothing else.
    public static func isFileID(_ id: String) -> Bool {
        let parts = id.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, isRecordingName(String(parts[0])) else { return false }
        let tail = parts[1]
        if tail == "mix" { return true }
        guard tail.utf8.count == 9, tail.first == "t" else { return false }
        return tail.utf8.dropFirst().allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// The path of the file with API id `id`, or nil for an id that is not one (checked before any path is made).
    public func path(ofFile id: String) -> String? {
        guard Self.isFileID(id) else { return nil }
        let parts = id.split(separator: "-")
        return directory + "/" + parts[0] + "/" + parts[1] + ".opus"
    }
}

/// What the recorder could not write, by recording (shared by the recorder thread and the API's threads).
public final class RecordingWriteErrors: Sendable {
    private let errors = Mutex<[String: String]>([:])
    public init() {}
    /// Notes the first write error of `recording`.
    public func note(_ recording: String, _ error: String) {
        errors.withLock { if $0[recording] == nil { $0[recording] = error } }
    }
    /// Forgets `recording` (its manifest, written at last, holds its errors).
    public func forget(_ recording: String) { _ = errors.withLock { $0.removeValue(forKey: recording) } }
    func all() -> [String: String] { errors.withLock { $0 } }
}
