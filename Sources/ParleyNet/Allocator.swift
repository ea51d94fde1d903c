/// glibc's allocator.
public enum Allocator {
    /// Gives the free pages of every malloc arena back to the system (`malloc_trim(3)` with pad 0). glibc returns
    /// only the top of a heap on its own, so memory freed below live allocations stays resident. It holds each
    /// arena's lock while it walks that arena's free chunks (milliseconds for a large heap): call it rarely.
    /// True when some pages were returned.
    @discardableResult
    public static func returnFreePages(_ calls: SystemCalls = .kernel) -> Bool { calls.mallocTrim() != 0 }
}
