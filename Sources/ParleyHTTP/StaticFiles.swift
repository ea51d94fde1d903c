import Foundation

/// The sample web client's files (`Samples/web`), served at the HTTP address without authentication: `GET /` is
/// `index.html`, `GET /NAME` a file directly in the directory. Only plain names (letters, digits, `.`, `-`, `_`, not
/// starting with a dot) of known types are served, so no path leaves the directory; each file is read per request
/// (they are small, and an edit shows at the next reload) and refused beyond `maxBytes`.
public struct StaticFiles: Sendable {
    /// The directory.
    public let directory: String
    /// Largest file served.
    public static let maxBytes = 1 << 20

    /// Serves `directory`.
    public init(directory: String) { self.directory = directory }

    /// The web root in force: `configured` ("" = none), else `Samples/web` when it exists in the working directory.
    public static func resolve(_ configured: String?) -> StaticFiles? {
        let path = configured ?? "Samples/web"
        var isDirectory: ObjCBool = false
        guard !path.isEmpty, FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return nil }
        return StaticFiles(directory: path)
    }

    static let types = ["html": "text/html; charset=utf-8", "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
                        "svg": "image/svg+xml", "png": "image/png", "ico": "image/x-icon", "json": "application/json"]

    /// The file `path` names, or 404.
    func serve(_ path: String) throws(APIError) -> HTTPResponse {
        let name = path == "/" ? "index.html" : String(path.dropFirst())
        guard !name.isEmpty, name.utf8.count <= 64, !name.hasPrefix("."),
              name.utf8.allSatisfy({ $0.isASCIILetterOrDigit || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }),
              let ext = name.split(separator: ".").last.map(String.init), let type = Self.types[ext],
              let data = FileManager.default.contents(atPath: directory + "/" + name), data.count <= Self.maxBytes
        else { throw HTTPRouter.noEndpoint }
        return HTTPResponse(status: 200, contentType: type, body: [UInt8](data), headers: ["Cache-Control": "no-cache"])
    }
}

extension UInt8 {
    var isASCIILetterOrDigit: Bool {
        (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "z")) || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "Z"))
            || (self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9"))
    }
}
