import Foundation
import Testing

/// The "Where things live" table of docs/architecture.md, checked against the code: every directory under `Sources/`
/// has a row, and each target imports only what its row's "May touch" column allows. The allowed imports are written
/// out here per target; every module outside Parley that a target may import must be named in its row (by the words in
/// `outsideModuleWords`), so neither the table nor this list can change without the other.
@Suite("docs/architecture.md: where things live")
struct WhereThingsLiveTests {
    /// What each Swift target under `Sources/` may import: Parley's own modules (dependencies point inward:
    /// wire ← auth, net, media ← relay core, client core ← relay runtime ← HTTP ← executables) and modules outside.
    /// `nil` outside: anything (the executables, whose row says "everything").
    static let allowedImports: [String: (parley: Set<String>, outside: Set<String>?)] = [
        "ParleyWire": ([], []),
        "ParleyAuth": ([], ["CSodium", "Foundation"]),
        "ParleyCrypto": (["ParleyWire"], ["CSodium", "CSRTP"]),
        "ParleyNet": (["ParleyWire"], ["Glibc", "CParleySys"]),
        "ParleyMedia": (["ParleyWire"], ["COpus", "Glibc"]),
        "ParleyAudioIO": ([], ["CALSA", "CSpeexDSP", "Glibc"]),
        "ParleyWebRTC": (["ParleyWire"], ["COpenSSL"]),
        "ParleyRelayCore": (["ParleyWire", "ParleyAuth", "ParleyMedia", "ParleyCrypto", "ParleyWebRTC"], []),
        "ParleyClientCore": (["ParleyWire", "ParleyAuth", "ParleyMedia", "ParleyCrypto"], []),
        "ParleyCluster": (["ParleyAuth", "ParleyCrypto"], ["CHiredis", "COpenSSL", "Foundation"]),
        "ParleyRecording": (["ParleyWire", "ParleyMedia"], ["COgg", "COpusEnc"]),
        "ParleyHistory": (["ParleyCluster", "ParleyWire"], ["CSQLite"]),
        "ParleySIP": (["ParleyMedia", "ParleyNet", "ParleyWire", "ParleyAuth", "ParleyCrypto"],
                      ["CLibre", "CSpanDSP", "Glibc", "Dispatch"]),
        "ParleyRelay": (["ParleyRelayCore", "ParleyNet", "ParleyAuth", "ParleyWire", "ParleyCrypto", "ParleyWebRTC", "ParleyCluster", "ParleyRecording",
                         "ParleyHistory", "ParleySIP"],
                        ["Foundation", "Dispatch", "CZlib", "CCurl"]),
        "ParleyHTTP": (["ParleyRelay", "ParleyHistory", "ParleyRelayCore", "ParleyNet", "ParleyAuth", "ParleyWire",
                        "ParleyCrypto", "ParleyWebRTC", "ParleyCluster", "ParleySIP"],
                       ["CMicroHTTPD", "Foundation"]),
        "parley-relay": (["ParleyRelay", "ParleyHTTP", "ParleyRelayCore", "ParleyNet", "ParleyAuth", "ParleyWire",
                          "ParleySIP"], nil),
        "parley": (["ParleyClientCore", "ParleyNet", "ParleyAuth", "ParleyWire", "ParleyMedia", "ParleyAudioIO", "ParleyCrypto"], nil),
    ]

    /// Modules of the Swift toolchain that reach nothing outside the process: allowed everywhere.
    static let standardModules: Set<String> = ["Swift", "Synchronization", "_Concurrency"]

    /// How the "May touch" column names a module outside Parley. Glibc in a C library's wrapper stands for the C
    /// types and libm that the library's API needs; anywhere else it is the kernel.
    static let outsideModuleWords: [String: [String]] = [
        "Glibc": ["the kernel", "libc", "libsodium", "libopus", "alsa-lib", "libspeexdsp", "libmicrohttpd"],
        "CParleySys": ["the kernel"],
        "CSodium": ["libsodium"],
        "CSRTP": ["libsrtp2"],
        "COpenSSL": ["OpenSSL"],
        "COpus": ["libopus"],
        "CALSA": ["alsa-lib"],
        "CSpeexDSP": ["libspeexdsp"],
        "CMicroHTTPD": ["libmicrohttpd"],
        "CHiredis": ["hiredis"],
        "COgg": ["libogg"],
        "COpusEnc": ["libopusenc"],
        "CSQLite": ["SQLite"],
        "CZlib": ["zlib"],
        "CCurl": ["libcurl"],
        "CLibre": ["libre"],
        "CSpanDSP": ["spandsp"],
        "Foundation": ["Foundation"],
        "Dispatch": ["Dispatch"],
    ]

    /// The package directory: this file is `Tests/WhereThingsLiveTests/WhereThingsLiveTests.swift`.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// One row of the table: the paths in its first column and its "May touch" cell.
    struct Row {
        var paths: [String]
        var mayTouch: String
    }

    /// The rows of the "## Where things live" table. A path cell lists backticked names; a name without a slash
    /// shares the folder of the first (`Sources/CSodium`, `COpus` is `Sources/COpus`).
    static func table() throws -> [Row] {
        let page = try String(contentsOf: root.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        var inSection = false
        var rows: [Row] = []
        for line in page.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                inSection = line == "## Where things live"
                continue
            }
            guard inSection, line.hasPrefix("|") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).dropFirst().dropLast()
                .map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 3, cells[0] != "Path", !cells[0].hasPrefix("---") else { continue }
            let names = cells[0].split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 1 }.map { String($0.element) }
            guard let first = names.first else { continue }
            let folder = first.contains("/") ? String(first[..<first.lastIndex(of: "/")!]) + "/" : ""
            let paths = names.map { name in
                (name.contains("/") ? name : folder + name).trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            }
            rows.append(Row(paths: paths, mayTouch: cells[2]))
        }
        return rows
    }

    /// The directories under `Sources/`.
    static func sourceDirectories() throws -> [String] {
        let sources = root.appendingPathComponent("Sources")
        return try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { name in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: sources.appendingPathComponent(name).path, isDirectory: &isDirectory)
                && isDirectory.boolValue
        }.sorted()
    }

    /// The modules imported by the Swift files under `Sources/<target>`, with the files importing each.
    static func imports(of target: String) throws -> [String: [String]] {
        let folder = root.appendingPathComponent("Sources").appendingPathComponent(target)
        guard let files = FileManager.default.enumerator(atPath: folder.path) else { return [:] }
        var found: [String: [String]] = [:]
        for case let file as String in files where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n") {
                if let module = importedModule(String(line)) { found[module, default: []].append(file) }
            }
        }
        return found
    }

    /// The module an `import` line names (`import X`, `@testable import X`, `public import X`, `import struct X.Y`).
    static func importedModule(_ line: String) -> String? {
        var words = line.split(separator: " ").map(String.init)[...]
        while let w = words.first, w.hasPrefix("@") || ["public", "package", "internal", "private", "fileprivate"].contains(w) {
            words = words.dropFirst()
        }
        guard words.first == "import" else { return nil }
        words = words.dropFirst()
        if let kind = words.first, ["typealias", "struct", "class", "enum", "protocol", "let", "var", "func"].contains(kind) {
            words = words.dropFirst()
        }
        return words.first.map { String($0.split(separator: ".")[0]) }
    }

    @Test("the import parser reads every form of import line")
    func importParser() {
        #expect(Self.importedModule("import Glibc") == "Glibc")
        #expect(Self.importedModule("@testable import ParleyWire") == "ParleyWire")
        #expect(Self.importedModule("public import struct Foundation.Data") == "Foundation")
        #expect(Self.importedModule("// import Foundation") == nil)
        #expect(Self.importedModule("let important = 1") == nil)
    }

    @Test("every directory under Sources/ has a row")
    func everyDirectoryListed() throws {
        let listed = Set(try Self.table().flatMap(\.paths))
        for directory in try Self.sourceDirectories() {
            #expect(listed.contains("Sources/\(directory)"), "Sources/\(directory) has no row in docs/architecture.md's \"Where things live\"")
        }
    }

    @Test("every Swift target is known here, and every outside module it may import is named in its row")
    func allowedImportsMatchTheTable() throws {
        let rows = try Self.table()
        for directory in try Self.sourceDirectories() where !(try Self.imports(of: directory)).isEmpty {
            guard let allowed = Self.allowedImports[directory] else {
                Issue.record("Sources/\(directory): add its allowed imports to WhereThingsLiveTests.allowedImports")
                continue
            }
            guard let row = rows.first(where: { $0.paths.contains("Sources/\(directory)") }) else { continue }
            guard let outside = allowed.outside else {
                #expect(row.mayTouch.contains("everything"), "Sources/\(directory): its row should say it may touch everything")
                continue
            }
            if outside.isEmpty {
                #expect(row.mayTouch.hasPrefix("nothing"), "Sources/\(directory): its row should say it touches nothing")
            }
            for module in outside {
                let words = Self.outsideModuleWords[module] ?? [module]
                #expect(words.contains { row.mayTouch.contains($0) },
                        "Sources/\(directory) may import \(module), but its row's \"May touch\" (\(row.mayTouch)) does not say \(words[0])")
            }
        }
    }

    @Test("each target imports only what its row allows", arguments: allowedImports.keys.sorted())
    func importsStayWithinTheRow(target: String) throws {
        let allowed = try #require(Self.allowedImports[target])
        for (module, files) in try Self.imports(of: target).sorted(by: { $0.key < $1.key }) {
            if module == target || Self.standardModules.contains(module) || allowed.parley.contains(module) { continue }
            guard let outside = allowed.outside else { continue }  // an executable: everything
            #expect(outside.contains(module),
                    "Sources/\(target) imports \(module) (\(files.sorted().joined(separator: ", "))), which its row does not allow")
        }
    }
}
