import CSodium

/// The one place that initialises libsodium.
///
/// `sodium_init()` must run before any other libsodium call. Swift runs a `static let` initialiser exactly once,
/// thread-safely, so every entry point touches `SodiumRuntime.ready` first; after the first call this is one
/// atomic load.
enum SodiumRuntime {
    /// True once `sodium_init()` has returned 0 (first call) or 1 (already initialised).
    static let ready: Bool = sodium_init() >= 0

    /// Traps if libsodium could not be initialised (it only fails when no entropy source exists).
    @inline(__always)
    static func ensureReady() {
        precondition(ready, "sodium_init() failed: libsodium is unusable")
    }
}
