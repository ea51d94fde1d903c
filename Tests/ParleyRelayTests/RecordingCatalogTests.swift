import ParleyRelay
import Testing

/// `RecordingCatalog.path(ofFile:)`: an API id becomes a path only when it is a recording file's id, checked before
/// any path is made (the routes' side is `ParleyHTTPTests`' `RecordingRouteTests`).
@Suite("Recordings: the catalog names a file only for a file id (16 hex digits, then mix or t and 8 hex digits)")
struct RecordingCatalogTests {
    let catalog = RecordingCatalog(stateDirectory: "/state")

    @Test("a file id names its file in its recording's folder", arguments: [
        ("00000000000000aa-mix", "/state/recordings/00000000000000aa/mix.opus"),
        ("00000000000000aa-t0000002a", "/state/recordings/00000000000000aa/t0000002a.opus"),
    ])
    func fileIDs(id: String, path: String) {
        #expect(RecordingCatalog.isFileID(id))
        #expect(catalog.path(ofFile: id) == path)
    }

    @Test("ids that are not a recording file's name no path",
          arguments: ["..", "00000000000000aa-..", "00000000000000aa-t0000002a/../../relay-key", "00000000000000aa",
                      "00000000000000AA-mix", "00000000000000aa-t2a", "00000000000000aa-t0000002g",
                      "00000000000000aa-mix.opus", "%2e%2e", "00000000000000aa--mix", "0000000000000aa-mix",
                      "00000000000000aa-t0000002a-mix"])
    func notFileIDs(id: String) {
        #expect(!RecordingCatalog.isFileID(id))
        #expect(catalog.path(ofFile: id) == nil)
    }
}
