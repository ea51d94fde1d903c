import Foundation
import ParleyNet

/// `parley rooms|members|kick|mute`: the relay's HTTP API from the command line (PARLEY_URL, default
/// http://127.0.0.1:7480), with an admin token minted from PARLEY_API_KEY / PARLEY_API_SECRET.
enum ApiCommands {
    static let usage = """
    usage: parley rooms [list]                         list rooms
           parley rooms create NAME [--mode forward|mix|hybrid] [--max-members N] [--empty-timeout SECONDS]
           parley rooms delete NAME                    close a room (members are told why)
           parley members ROOM                         list a room's members
           parley kick ROOM IDENTITY
           parley mute ROOM IDENTITY [--unmute]
           parley history ROOM [--limit N] [--before ID]   a room's texts, newest first (one page; the next with --before)
           parley record start ROOM [--mixdown]        record a room (its members are told); --mixdown: a forward room's
                                                       tracks are also mixed into one file when it stops
           parley record stop ROOM
           parley record list [--recording ID]         recordings' files, newest first, under a header: file id,
                                                       recording, room, kind, member, started, duration, size, state
           parley record download FILE-ID [--output PATH]   save one file (Ogg Opus; default FILE-ID.opus)
           parley record download RECORDING [--output DIR]  save every file of a recording (the id `record start`
                                                       printed) into DIR (default: here), each as FILE-ID.opus

    Talks to the relay's HTTP API at PARLEY_URL (default http://127.0.0.1:7480) with an admin token
    signed with PARLEY_API_KEY / PARLEY_API_SECRET (the dev defaults when unset).
    Exit: 0 done, 2 usage, 3 refused by the relay (its status, code and message on stderr), 5 relay unreachable.
    """

    static func rooms(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: ["mode", "max-members", "empty-timeout"], switches: [], usage: usage)
        switch o.positional.first ?? "list" {
        case "list":
            let list = request("GET", "/v1/rooms")["rooms"] as? [[String: Any]] ?? []
            if list.isEmpty { writeLine("no rooms") }
            for r in list {
                let speakers = (r["speakers"] as? [String] ?? []).joined(separator: ",")
                writeLine("\(r["name"] ?? "")\tmode \(r["mode"] ?? "")\tmembers \(r["members"] ?? 0)\tspeakers [\(speakers)]")
            }
        case "create":
            guard o.positional.count == 2 else { fail("rooms create needs NAME\n\(usage)") }
            var body: [String: Any] = ["name": o.positional[1]]
            if let m = o["mode"] { body["mode"] = m }
            if let m = o["max-members"] { body["max_members"] = Int(m) ?? m }
            if let t = o["empty-timeout"] { body["empty_timeout"] = Int(t) ?? t }
            let r = request("POST", "/v1/rooms", body)
            writeLine("created \(r["name"] ?? "") (mode \(r["mode"] ?? ""))")
        case "delete":
            guard o.positional.count == 2 else { fail("rooms delete needs NAME\n\(usage)") }
            _ = request("DELETE", "/v1/rooms/\(escape(o.positional[1]))")
            writeLine("closed \(o.positional[1])")
        default: fail("unknown rooms subcommand \(o.positional[0])\n\(usage)")
        }
        return 0
    }

    static func members(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: [], switches: [], usage: usage)
        guard o.positional.count == 1 else { fail("members needs ROOM\n\(usage)") }
        let list = request("GET", "/v1/rooms/\(escape(o.positional[0]))/members")["members"] as? [[String: Any]] ?? []
        if list.isEmpty { writeLine("no members") }
        for m in list {
            let stats = m["stats"] as? [String: Any] ?? [:]
            let mute = (m["muted_by_room"] as? Bool ?? false) ? "muted by the room" : (m["muted"] as? Bool ?? false) ? "muted" : "unmuted"
            writeLine("\(m["identity"] ?? "")\t\(mute)\t"
                      + "\((m["speaking"] as? Bool ?? false) ? "speaking" : "quiet")\tpackets in \(stats["packets_in"] ?? 0)"
                      + " lost \(stats["packets_lost"] ?? 0) jitter \(stats["jitter_ms"] ?? 0) ms")
        }
        return 0
    }

    static func kick(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: [], switches: [], usage: usage)
        guard o.positional.count == 2 else { fail("kick needs ROOM IDENTITY\n\(usage)") }
        _ = request("DELETE", "/v1/rooms/\(escape(o.positional[0]))/members/\(escape(o.positional[1]))")
        writeLine("kicked \(o.positional[1]) from \(o.positional[0])")
        return 0
    }

    static func mute(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: [], switches: ["unmute"], usage: usage)
        guard o.positional.count == 2 else { fail("mute needs ROOM IDENTITY\n\(usage)") }
        let muted = !o.has("unmute")
        _ = request("POST", "/v1/rooms/\(escape(o.positional[0]))/members/\(escape(o.positional[1]))/mute", ["muted": muted])
        writeLine("\(muted ? "muted" : "unmuted") \(o.positional[1]) in \(o.positional[0])")
        return 0
    }

    static func record(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: ["recording", "output"], switches: ["mixdown"], usage: usage)
        let p = o.positional
        switch (p.first, p.count) {
        case ("start", 2):
            let r = request("POST", "/v1/rooms/\(escape(p[1]))/recording", o.has("mixdown") ? ["mixdown": true] : nil)
            writeLine("recording \(r["recording"] as? String ?? "?") of room \(p[1]) started")
        case ("stop", 2):
            _ = request("DELETE", "/v1/rooms/\(escape(p[1]))/recording")
            writeLine("recording of room \(p[1]) stopped")
        case ("list", 1):
            let files = recordingFiles(of: o.values["recording"])
            if files.isEmpty { writeLine("no recordings") } else { writeLine(recordingHeader) }
            for f in files { writeLine(recordingLine(f)) }
        case ("download", 2) where p[1].contains("-"):  // a file: `<recording>-mix`, `<recording>-t<ssrc>`
            save(file: p[1], to: o.values["output"] ?? p[1] + ".opus")
        case ("download", 2):  // a recording: each of its files
            let files = recordingFiles(of: p[1])
            guard !files.isEmpty else {
                fail("the relay refused: no recording \(p[1]) (parley record list shows the recordings and their "
                     + "files)", code: 3)
            }
            let folder = o.values["output"] ?? "."
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                fail("cannot make \(folder): \(error.localizedDescription)", code: 1)
            }
            if files.contains(where: { $0["stopped_at"] == nil }) {
                writeLine("recording \(p[1]) is still running: its files hold what was recorded so far")
            }
            for f in files {
                let id = f["id"] as? String ?? ""
                save(file: id, to: (folder as NSString).appendingPathComponent(id + ".opus"))
            }
        default:
            fail(usage)
        }
        return 0
    }

    /// The header of `record list`.
    static let recordingHeader = "FILE\tRECORDING\tROOM\tKIND\tMEMBER\tSTARTED\tDURATION\tSIZE\tSTATE"

    /// The files of every recording, or of `recording`: newest recording first, a recording's files in the relay's
    /// order.
    static func recordingFiles(of recording: String?) -> [[String: Any]] {
        let query = recording.map { "?recording=" + escape($0) } ?? ""
        let files = request("GET", "/v1/recordings" + query)["recordings"] as? [[String: Any]] ?? []
        let started = { (f: [String: Any]) in (f["started_at"] as? NSNumber)?.int64Value ?? 0 }
        // A stable sort: files of one recording share its start and keep their order.
        return files.enumerated().sorted { a, b in
            started(a.element) != started(b.element) ? started(a.element) > started(b.element) : a.offset < b.offset
        }.map(\.element)
    }

    /// One file of `record list`, under `recordingHeader` (a write error after it).
    static func recordingLine(_ f: [String: Any]) -> String {
        let dates = DateFormatter()
        dates.dateFormat = "yyyy-MM-dd HH:mm:ss"
        let milliseconds = { (key: String) in Double((f[key] as? NSNumber)?.int64Value ?? 0) }
        let started = dates.string(from: Date(timeIntervalSince1970: milliseconds("started_at") / 1000))
        let duration = String(format: "%.1f s", milliseconds("duration_ms") / 1000)
        let state = f["stopped_at"] == nil ? "recording" : "done"
        let fields: [Any] = [f["id"] ?? "", f["recording"] ?? "", f["room"] ?? "", f["kind"] ?? "",
                             f["identity"] as? String ?? "-", started, duration, "\(f["size"] ?? 0) bytes", state]
        return fields.map { "\($0)" }.joined(separator: "\t") + ((f["error"] as? String).map { "\terror: " + $0 } ?? "")
    }

    /// Downloads recording file `id` to `path`; exits on a failure.
    static func save(file id: String, to path: String) {
        let bytes = download("/v1/recordings/\(escape(id))")
        guard FileManager.default.createFile(atPath: path, contents: bytes) else {
            fail("cannot write \(path)", code: 1)
        }
        writeLine("saved \(bytes.count) bytes to \(path)")
    }

    static func history(_ arguments: [String]) -> Int32 {
        let o = Options(arguments, valued: ["limit", "before"], switches: [], usage: usage)
        guard o.positional.count == 1 else { fail(usage) }
        var query = "?limit=\(o.values["limit"] ?? "20")"
        if let before = o.values["before"] { query += "&before=" + escape(before) }
        let page = request("GET", "/v1/rooms/\(escape(o.positional[0]))/messages" + query)
        let messages = page["messages"] as? [[String: Any]] ?? []
        if messages.isEmpty { writeLine("no texts") }
        let f = DateFormatter()
        f.dateFormat = "yyyy-MM-dd HH:mm:ss"
        for m in messages {
            let at = Date(timeIntervalSince1970: Double((m["at"] as? NSNumber)?.int64Value ?? 0) / 1000)
            let images = (m["attachments"] as? [String] ?? []).map { " image:" + $0 }.joined()
            writeLine("\(m["id"] ?? "")\t\(f.string(from: at))\t\(m["identity"] ?? "")\t\(m["text"] ?? "")\(images)")
        }
        if let next = page["next"] as? String { writeLine("older: parley history \(o.positional[0]) --before \(next)") }
        return 0
    }

    static func escape(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? segment
    }

    /// A file from the API (a recording): its bytes; exits as `request` does on a failure.
    static func download(_ path: String) -> Data {
        let (data, _) = send("GET", path, nil)
        return data ?? Data()
    }

    /// One API call; exits with a one-line message on any failure: 5 for an unreachable relay, 3 for a refusal (4xx/5xx,
    /// with its code and message), the codes `join` uses for the same outcomes.
    static func request(_ method: String, _ path: String, _ body: [String: Any]? = nil) -> [String: Any] {
        send(method, path, body).1
    }

    private static func send(_ method: String, _ path: String, _ body: [String: Any]?) -> (Data?, [String: Any]) {
        let token = mintToken(identity: "parley-cli", name: nil, room: nil, ttlSeconds: 300, publish: false, admin: true, mode: nil)
        let json = body.flatMap { try? JSONSerialization.data(withJSONObject: $0) }
        switch RelayHTTP.exchange(method, path, token: token, body: json, contentType: "application/json") {
        case .failure(.badURL(let base)): fail("PARLEY_URL \(base) is not a URL")
        case .failure(let failure): fail(failure.message, code: 5)
        case .success(let answer):
            guard answer.isSuccess else { fail("the relay refused: \(answer.refusal)", code: 3) }
            return (answer.body, answer.object)
        }
    }
}
