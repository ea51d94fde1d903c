import Foundation
import ParleyNet
import ParleyWire
import Synchronization

/// Images on texts, as the client handles them: an image file uploaded to the relay (`POST /v1/attachments`) before
/// its id goes on a text (`parley message --image`, `parley join --say … --image`), and the images received texts
/// carry, fetched (`GET /v1/attachments/{id}`) and saved to a folder as `<id>.<png|jpeg|webp|gif>`.
enum ImageUpload {
    /// The four types the relay takes, by file extension.
    static let extensions: [String: String] = ["png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "webp": "image/webp",
                                               "gif": "image/gif"]
    /// The most bytes read from a file (the relay's own limit, `attachment_max_bytes`, is usually lower: it answers 413).
    static let maxFileBytes = 64 << 20

    /// The image type of `bytes` from their first bytes (the relay checks the same), else from `path`'s extension;
    /// nil for anything else.
    static func contentType(of bytes: [UInt8], path: String) -> String? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<(offset + prefix.count)]) == prefix
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        let ext = path.split(separator: "/").last?.split(separator: ".").dropFirst().last.map { $0.lowercased() } ?? ""
        return extensions[ext]
    }

    /// Reads `path`, uploads it with `token` and returns the attachment id; exits with a one-line error otherwise:
    /// 1 the file cannot be read, 2 it is not an image of the four types, 5 the relay's API cannot be reached, 3 the
    /// relay refused it (its status, code and message: too large, not what it claims to be, …).
    static func upload(_ path: String, token: String) -> String {
        let read: (status: PrivateFile.Status, bytes: [UInt8])?
        do {
            read = try PrivateFile.read(path, limit: maxFileBytes, followingLinks: true)
        } catch {
            fail("cannot read the image \(path): \(error)", code: 1)
        }
        guard let read else { fail("cannot read the image \(path): no such file", code: 1) }
        guard read.status.isRegularFile else { fail("the image \(path) is not a file", code: 1) }
        guard read.status.size <= maxFileBytes else { fail("the image \(path) is over \(maxFileBytes >> 20) MiB", code: 1) }
        guard let type = contentType(of: read.bytes, path: path) else { fail("\(path) is not a PNG, JPEG, WebP or GIF image") }
        switch RelayHTTP.exchange("POST", "/v1/attachments", token: token, body: Data(read.bytes), contentType: type, timeout: 60) {
        case .failure(.badURL(let base)): fail("PARLEY_URL \(base) is not a URL")
        case .failure(let failure): fail(failure.message, code: 5)
        case .success(let answer):
            guard answer.isSuccess else { fail("the relay refused the image \(path): \(answer.refusal)", code: 3) }
            guard let id = answer.object["id"] as? String, TextAttachments.isID(id) else {
                fail("the relay's answer to the upload of \(path) has no attachment id", code: 3)
            }
            return id
        }
    }
}

/// The images received texts carry, fetched while the session runs and saved to `folder` (made 0700 at the first
/// one, `PrivateFile`). Each download runs on URLSession's queue and posts its outcome; the command's loop takes the
/// outcomes (`report`) and prints one line each, so a slow or failing download never stalls the session.
final class ImageDownloads {
    /// What became of one image.
    enum Outcome: Equatable, Sendable {
        /// Saved at `path` (`fresh` false: a file of that name, the same image, was there already).
        case saved(from: String, path: String, fresh: Bool)
        /// Not saved, and why.
        case failed(from: String, id: String, reason: String)
    }

    /// Where images go.
    let folder: String
    /// The token the downloads present (the session's own kind: any token of the relay with `join`).
    private let token: () -> String
    /// Outcomes not yet reported, and how many downloads are under way (written on URLSession's queue).
    private let state = State()

    /// `ImageDownloads`' shared part: the downloads' closures hold it, on URLSession's queue.
    private final class State: Sendable {
        let lock = Mutex<(finished: [Outcome], running: Int)>(([], 0))
        func withLock<T: Sendable>(_ body: (inout (finished: [Outcome], running: Int)) -> T) -> T { lock.withLock { body(&$0) } }
    }

    init(folder: String, token: @escaping () -> String) {
        self.folder = folder
        self.token = token
    }

    /// The folder `--images-dir` names, or `./parley-images`.
    convenience init(_ o: Options, token: @escaping () -> String) {
        self.init(folder: o["images-dir"] ?? "parley-images", token: token)
    }

    /// Starts fetching every image of a text from `sender`.
    func fetch(_ ids: [String], from sender: String) {
        for id in ids {
            // The wire let only ids through; checked again, as it names a file.
            guard TextAttachments.isID(id) else {
                state.withLock { $0.finished.append(.failed(from: sender, id: id, reason: "not an attachment id")) }
                continue
            }
            state.withLock { $0.running += 1 }
            let folder = folder
            let state = state
            RelayHTTP.start("GET", "/v1/attachments/\(id)", token: token(), timeout: 60) { result in
                let outcome = Self.save(result, id: id, from: sender, in: folder)
                state.withLock {
                    $0.finished.append(outcome)
                    $0.running -= 1
                }
            }
        }
    }

    /// Prints what finished since the last call: `image from alice saved to PATH`, or a one-line error.
    func report(_ ui: TerminalUI) {
        for outcome in state.withLock({ s in defer { s.finished.removeAll() }; return s.finished }) {
            switch outcome {
            case .saved(let from, let path, let fresh):
                ui.event("image from \(from) saved to \(path)" + (fresh ? "" : " (it was there already)"))
            case .failed(let from, let id, let reason):
                ui.notice("image \(id) from \(from) not saved: \(reason)")
            }
        }
    }

    /// Waits up to `seconds` for the downloads under way, then reports them (before the command exits).
    func finish(_ ui: TerminalUI, within seconds: Double = 5) {
        let deadline = Date().addingTimeInterval(seconds)
        while state.withLock({ $0.running }) > 0, Date() < deadline { usleep(20_000) }
        report(ui)
    }

    /// A received text as a line shows it: "hi", "hi [1 image]", or "[3 images]" for an image-only text.
    static func line(_ text: String, _ ids: [String]) -> String {
        let note = ids.isEmpty ? "" : "[\(ids.count) image\(ids.count == 1 ? "" : "s")]"
        return text.isEmpty ? note : note.isEmpty ? text : text + " " + note
    }

    /// The file extension for a `Content-Type` the relay serves images with, nil for any other.
    static func fileExtension(_ contentType: String?) -> String? {
        switch contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() {
        case "image/png": "png"
        case "image/jpeg": "jpeg"
        case "image/webp": "webp"
        case "image/gif": "gif"
        default: nil
        }
    }

    /// Saves one download's bytes as `<folder>/<id>.<ext>` (a new file, 0600, complete or not at all).
    private static func save(_ result: Result<RelayHTTP.Answer, RelayHTTP.Failure>, id: String, from sender: String, in folder: String) -> Outcome {
        let answer: RelayHTTP.Answer
        switch result {
        case .failure(let failure): return .failed(from: sender, id: id, reason: failure.message)
        case .success(let a): answer = a
        }
        guard answer.isSuccess else { return .failed(from: sender, id: id, reason: "the relay answered \(answer.refusal)") }
        guard let ext = fileExtension(answer.contentType) else {
            return .failed(from: sender, id: id, reason: "the relay sent \(answer.contentType ?? "no Content-Type"), not an image")
        }
        let path = (folder.hasSuffix("/") ? folder : folder + "/") + id + "." + ext
        do {
            let made = try PrivateFile.makeDirectory(folder)
            guard made.isDirectory else { return .failed(from: sender, id: id, reason: "\(folder) is not a folder") }
            return .saved(from: sender, path: path, fresh: try PrivateFile.publish(Array(answer.body), at: path))
        } catch {
            return .failed(from: sender, id: id, reason: "cannot save it in \(folder): \(error)")
        }
    }
}
