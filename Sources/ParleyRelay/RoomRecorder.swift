import Foundation
import ParleyAuth
import ParleyNet
import ParleyRecording
import ParleyRelayCore
import ParleyWire
import Synchronization

/// Writes room recordings: the recorder thread takes what each worker's core put in its `RecordingTap` (moved here by
/// the worker after each batch, `submit`), places each stream's packets on the recording's timeline (`TrackTimeline`)
/// and writes Ogg Opus pages (`OggOpusStream`) to files under `<state_dir>/recordings/<id>/` (`RecordingCatalog`),
/// flushing every second, so a relay killed at any moment leaves files that play to their last page. The file and
/// disk work stays off the workers: a full disk or a slow one costs a worker nothing but dropped records (counted).
public final class RoomRecorder: @unchecked Sendable {
    // Invariant: `open` (and every file in it) is touched only by the recorder thread (`run`); workers touch only
    // `inbound` (a lock per worker, held for one append) and the atomics.
    /// Where recordings live.
    public let catalog: RecordingCatalog
    private let inbound: [InboundRecords]
    /// Most bytes waiting per worker; beyond, a worker's records are dropped (counted) until the recorder catches up.
    static let inboundCapacity = 32 << 20
    private let stopping = Atomic<Bool>(false)
    private let wakeup: WakeupSignal
    /// The recorder thread sleeps without a timeout (no recording open): a worker's records must wake it.
    private let sleeping = Atomic<Bool>(false)
    private let log: LogSink
    /// Records dropped because the recorder fell behind (a worker's inbound buffer was full).
    public let droppedRecords = Atomic<UInt64>(0)
    private var open: [UInt64: OpenRecording] = [:]
    /// Told each recording that ends, with its files (`recording.finished`, to the webhooks); set before the thread
    /// starts.
    nonisolated(unsafe) public var finished: (@Sendable (WebhookEvent) -> Void)?
    private var scratch: [UInt8] = []
    /// How often pages are flushed to the files (what a kill can lose at most, besides the reorder window).
    static let flushInterval = Interval.seconds(1)
    /// How often a running recording's manifest is rewritten (its durations).
    static let manifestInterval = Interval.seconds(5)

    /// A recorder for `workers` workers writing under `catalog`.
    public init(catalog: RecordingCatalog, workers: Int, log: LogSink) throws(SystemError) {
        self.catalog = catalog
        self.log = log
        inbound = (0..<max(1, workers)).map { _ in InboundRecords() }
        wakeup = try WakeupSignal()
    }

    /// Moves `tap`'s records to the recorder (a worker, after a batch). When the recorder has fallen too far behind,
    /// they are dropped and counted instead.
    func submit(worker: Int, tap: RecordingTap) {
        let full = inbound[min(worker, inbound.count - 1)].bytes.withLock { pending -> Bool in
            guard pending.count + tap.bytes.count <= Self.inboundCapacity else { return true }
            tap.take(into: &pending)
            return false
        }
        // Sequentially consistent with the thread's own store before it looks at `inbound` one last time: either it
        // sees these records, or this sees it asleep and wakes it.
        if !full && sleeping.load(ordering: .sequentiallyConsistent) { wakeup.signal() }
        if full {
            var discarded: [UInt8] = []
            tap.take(into: &discarded)
            droppedRecords.add(UInt64(RecordingTap.decode(discarded).count), ordering: .relaxed)
        }
    }

    /// Ends the thread once it has written everything submitted (call after the workers stopped).
    public func stop() {
        stopping.store(true, ordering: .releasing)
        wakeup.signal()
    }

    /// The recorder thread's loop: every 20 ms while a recording is open, what the workers submitted, then each open
    /// track's ready packets. With none open it sleeps until a worker submits a record or the relay stops: an idle
    /// recorder costs the workers' hot path nothing (woken every 20 ms it was 3 % of a busy relay's CPU).
    public func run() {
        let poller = Poller([wakeup.fd])
        while true {
            if open.isEmpty {
                sleeping.store(true, ordering: .sequentiallyConsistent)
                let waiting = inbound.contains { $0.bytes.withLock { !$0.isEmpty } }
                if !waiting && !stopping.load(ordering: .acquiring) { poller.wait(timeoutMilliseconds: -1) }
                sleeping.store(false, ordering: .relaxed)
            } else {
                poller.wait(timeoutMilliseconds: 20)
            }
            wakeup.drain()
            let last = stopping.load(ordering: .acquiring)
            for slot in inbound {
                slot.bytes.withLock { swap(&$0, &scratch) }
                if !scratch.isEmpty { apply(RecordingTap.decode(scratch)) }
                scratch.removeAll(keepingCapacity: true)
            }
            let now = Worker.monotonic()
            for recording in open.values { recording.pump(now: now, log: log) }
            if last {
                for recording in open.values { finish(recording, unixMilliseconds: Int64(Clock.unixMilliseconds()), reason: "the relay stopped") }
                for t in mixdowns { t.join() }
                return
            }
        }
    }

    private func apply(_ records: [RecordingTap.Record?]) {
        for record in records {
            switch record {
            case .started(let id, let room, let mode, let ms, let at, let mixdown)?:
                guard open[id] == nil else { continue }
                let recording = OpenRecording(id: id, room: room, mode: mode, startedUnixMilliseconds: ms, origin: at, mixdown: mixdown,
                                              folder: catalog.folder(of: id), errors: catalog.writeErrors)
                do {
                    _ = try PrivateFile.makeDirectory(recording.folder)
                } catch {
                    recording.failure = "cannot make \(recording.folder): \(error)"
                    catalog.writeErrors.note(recording.name, recording.failure!)
                    log.write(.error, "recording \(recording.name) of room \(room): \(recording.failure!)")
                }
                open[id] = recording
                recording.writeManifest(log: log)
            case .track(let id, let ssrc, let identity, let name)?:
                open[id]?.addTrack(ssrc: ssrc, identity: identity, name: name, log: log)
            case .packet(let id, let ssrc, let timestamp, let arrival, let payload)?:
                open[id]?.tracks[ssrc]?.timeline.insert(timestamp: timestamp, payload: payload, arrival: arrival)
            case .mix(let id, let timestamp, let at, let payload)?:
                guard let recording = open[id] else { continue }
                if recording.mix == nil { recording.addMix(log: log) }
                recording.mix?.timeline.insert(timestamp: timestamp, payload: payload, arrival: at)
            case .stopped(let id, let ms, let reason)?:
                if let recording = open[id] { finish(recording, unixMilliseconds: ms, reason: reason) }
            case nil:
                log.write(.error, "recorder: a record was cut short; the rest of the batch is skipped")
                return
            }
        }
    }

    private func finish(_ recording: OpenRecording, unixMilliseconds: Int64, reason: String) {
        recording.stoppedUnixMilliseconds = unixMilliseconds
        recording.reason = reason
        for file in recording.files { file.finish(log: log) }
        recording.writeManifest(log: log)
        open[recording.id] = nil
        log.write(.info, "recording \(recording.name) of room \(recording.room) written (\(recording.files.count) files): \(reason)")
        if let finished {
            let files: [[String: Any]] = recording.files.map { f in
                var e: [String: Any] = ["file": f.fileName, "kind": f.kind, "duration_ms": f.durationMilliseconds,
                                        "bytes": f.bytesWritten]
                if f.kind == "track" { e["identity"] = f.identity; e["name"] = f.name }
                if let failure = f.failure { e["error"] = failure }
                return e
            }
            finished(WebhookEvent.recordingFinished(id: WebhookEvent.newID(Crypto.randomBytes(16)),
                                                    name: recording.name, room: recording.room,
                                                    reason: reason, unixMilliseconds: unixMilliseconds, files: files))
        }
        if recording.mixdown, recording.mix == nil, !recording.tracks.isEmpty { startMixdown(recording) }
    }

    /// Threads making mixed renditions (joined by `stop`).
    private var mixdowns: [OSThread] = []

    /// A forward room's tracks mixed into `mix.opus` on a thread of its own (decoding and encoding a long recording
    /// takes a while; the recorder goes on), then listed in the manifest.
    private func startMixdown(_ recording: OpenRecording) {
        let folder = recording.folder, name = recording.name, room = recording.room, log = self.log
        let paths = recording.files.filter { $0.kind == "track" && $0.failure == nil }.map { folder + "/" + $0.fileName }
        let thread = try? OSThread(name: "parley-mixdown") {
            do {
                var tracks: [[UInt8]] = []
                for p in paths { if let read = try PrivateFile.read(p, limit: 1 << 30), read.status.isRegularFile { tracks.append(read.bytes) } }
                let file = try AppendFile(creating: folder + "/" + RecordingCatalog.mixFileName)
                let encoder = try OpusFileEncoder(tags: ["TITLE=\(room) (mixed from \(tracks.count) tracks)", "PARLEY_ROOM=\(room)",
                                                         "PARLEY_RECORDING=\(name)"]) { bytes in
                    (try? file.append(Array(bytes))) != nil
                }
                let samples = try Mixdown.mix(tracks, into: encoder)
                file.close()
                RecordingCatalog.addToManifest(folder: folder, entry: ["file": RecordingCatalog.mixFileName, "kind": "mix",
                                                                        "duration_ms": samples / 48, "bytes": file.size])
                log.write(.info, "recording \(name): mixed \(tracks.count) tracks into \(RecordingCatalog.mixFileName) (\(samples / 48) ms)")
            } catch {
                log.write(.error, "recording \(name): the mixed rendition failed: \(error)")
            }
        }
        if let thread { mixdowns.append(thread) } else { log.write(.error, "recording \(name): cannot start the mixdown thread") }
    }
}

/// One worker's records on their way to the recorder.
final class InboundRecords: Sendable {
    let bytes = Mutex<[UInt8]>([])
}

/// A recording being written (recorder thread only).
final class OpenRecording {
    let id: UInt64, room: String, mode: String, startedUnixMilliseconds: Int64, origin: Instant, mixdown: Bool, folder: String
    var name: String { RecordingCatalog.name(id) }
    var tracks: [UInt32: RecordedFile] = [:]
    var mix: RecordedFile?
    /// In the order they were made.
    var files: [RecordedFile] = []
    var stoppedUnixMilliseconds: Int64?
    var reason: String?
    var failure: String?
    var manifestWritten = Instant.origin
    /// Where write errors are noted for the API while the manifest may not be writable (a full disk).
    let errors: RecordingWriteErrors

    init(id: UInt64, room: String, mode: String, startedUnixMilliseconds: Int64, origin: Instant, mixdown: Bool, folder: String,
         errors: RecordingWriteErrors) {
        self.errors = errors
        self.id = id
        self.room = room
        self.mode = mode
        self.startedUnixMilliseconds = startedUnixMilliseconds
        self.origin = origin
        self.mixdown = mixdown
        self.folder = folder
    }

    func addTrack(ssrc: UInt32, identity: String, name: String, log: LogSink) {
        guard tracks[ssrc] == nil else { return }
        let file = RecordedFile(kind: "track", fileName: RecordingCatalog.trackFileName(ssrc: ssrc), identity: identity, name: name, ssrc: ssrc,
                                origin: origin, room: room, folder: folder, recording: self.name, errors: errors, log: log)
        tracks[ssrc] = file
        files.append(file)
        writeManifest(log: log)
    }

    func addMix(log: LogSink) {
        let file = RecordedFile(kind: "mix", fileName: RecordingCatalog.mixFileName, identity: "", name: "", ssrc: 0,
                                origin: origin, room: room, folder: folder, recording: name, errors: errors, log: log)
        mix = file
        files.append(file)
        writeManifest(log: log)
    }

    func pump(now: Instant, log: LogSink) {
        for file in files { file.pump(now: now, log: log) }
        if now - manifestWritten >= RoomRecorder.manifestInterval {
            writeManifest(log: log)
            manifestWritten = now
        }
    }

    /// `recording.json`: what the API lists, rewritten in one step.
    func writeManifest(log: LogSink) {
        guard failure == nil else { return }
        var entries: [[String: Any]] = []
        for f in files {
            var e: [String: Any] = ["file": f.fileName, "kind": f.kind, "duration_ms": f.durationMilliseconds, "bytes": f.bytesWritten]
            if f.kind == "track" { e["identity"] = f.identity; e["name"] = f.name; e["ssrc"] = f.ssrc }
            if let failure = f.failure { e["error"] = failure }
            entries.append(e)
        }
        var manifest: [String: Any] = ["id": name, "room": room, "mode": mode, "started_at_ms": startedUnixMilliseconds, "files": entries]
        if let stopped = stoppedUnixMilliseconds { manifest["stopped_at_ms"] = stopped }
        if let reason { manifest["reason"] = reason }
        guard let data = try? JSONSerialization.data(withJSONObject: manifest, options: [.sortedKeys]) else { return }
        do {
            try PrivateFile.replace(Array(data), at: folder + "/" + RecordingCatalog.manifestName)
            if stoppedUnixMilliseconds != nil { errors.forget(name) }  // the final manifest holds them
        } catch {
            log.write(.error, "recording \(name): cannot write its manifest: \(error)")
            errors.note(name, "cannot write its manifest: \(error)")
        }
    }
}

/// One Ogg Opus file of a recording: a member's track or the room's mix (recorder thread only).
final class RecordedFile {
    let kind: String, fileName: String, identity: String, name: String, ssrc: UInt32
    var timeline: TrackTimeline
    let stream: OggOpusStream
    private var file: AppendFile?
    private var lastFlush = Instant.origin
    var failure: String?
    var bytesWritten: Int { file?.size ?? 0 }
    var durationMilliseconds: Int64 { max(0, stream.granule - Int64(OpusHeaderPackets.preSkip)) / 48 }

    /// Where this file's write error is noted for the API, under `recording`.
    private let errors: RecordingWriteErrors, recording: String

    init(kind: String, fileName: String, identity: String, name: String, ssrc: UInt32, origin: Instant, room: String, folder: String,
         recording: String, errors: RecordingWriteErrors, log: LogSink) {
        self.errors = errors
        self.recording = recording
        self.kind = kind
        self.fileName = fileName
        self.identity = identity
        self.name = name
        self.ssrc = ssrc
        timeline = TrackTimeline(origin: origin)
        var comments = ["PARLEY_ROOM=\(room)", "PARLEY_RECORDING=\(recording)"]
        if kind == "track" { comments += ["ARTIST=\(name.isEmpty ? identity : name)", "PARLEY_IDENTITY=\(identity)"] } else { comments.append("TITLE=\(room) (mix)") }
        stream = OggOpusStream(serial: Int32(bitPattern: ssrc == 0 ? 0x6D6978 : ssrc),
                               head: OpusHeaderPackets.head(), tags: OpusHeaderPackets.tags(vendor: "parley-relay \(ParleyVersion.string)", comments: comments))
        do {
            let f = try AppendFile(creating: folder + "/" + fileName)
            try f.append(stream.take(flush: true))
            file = f
        } catch {
            failure = "\(error)"
            errors.note(recording, "\(fileName): \(error)")
            log.write(.error, "recording \(recording): \(fileName): \(error)")
        }
    }

    /// Moves the timeline's ready packets into the stream and, every `flushInterval`, its pages to the file.
    func pump(now: Instant, log: LogSink) {
        for item in timeline.take(now: now) { append(item, end: false) }
        let flush = now - lastFlush >= RoomRecorder.flushInterval
        if flush { lastFlush = now }
        write(stream.take(flush: flush), log: log)
    }

    /// Every packet left, the last one marked as the stream's end, and the file closed.
    func finish(log: LogSink) {
        let items = timeline.take(now: .distantFuture, flush: true)
        for (k, item) in items.enumerated() { append(item, end: k == items.count - 1) }
        if !stream.ended { stream.append(OpusGapPackets.covering(samples: 960, after: nil)[0], samples: 960, end: true) }
        write(stream.take(flush: true), log: log)
        file?.close()
    }

    private func append(_ item: TrackTimeline.Item, end: Bool) {
        switch item {
        case .packet(let bytes, let samples), .gap(let bytes, let samples): stream.append(bytes, samples: samples, end: end)
        }
    }

    private func write(_ pages: [UInt8], log: LogSink) {
        guard !pages.isEmpty, let file, failure == nil else { return }
        do {
            try file.append(pages)
        } catch {
            failure = "\(error)"
            errors.note(recording, "\(fileName): \(error)")
            log.write(.error, "recording file \(file.path): \(error); nothing more is written to it")
        }
    }
}
