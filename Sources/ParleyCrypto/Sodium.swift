import CSodium

/// The one place this target initialises libsodium: `sodium_init()` runs once, thread-safely (a `static let`), before
/// any other call; every entry point calls `Sodium.ensureReady()` first (one atomic load after the first time).
enum Sodium {
    /// True once `sodium_init()` returned 0 (first call) or 1 (already initialised).
    static let ready: Bool = sodium_init() >= 0

    /// Traps if libsodium could not be initialised (only when no entropy source exists).
    @inline(__always)
    static func ensureReady() {
        precondition(ready, "sodium_init() failed: libsodium is unusable")
    }
}
