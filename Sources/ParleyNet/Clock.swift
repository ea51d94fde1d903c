import Glibc
import ParleyWire

/// The monotonic clock (CLOCK_MONOTONIC) and the wall clock, in the units the cores take.
public enum Clock {
    /// Monotonic nanoseconds.
    public static func monotonicNanoseconds(_ calls: SystemCalls = .kernel) -> Int64 { calls.clockNanoseconds(CLOCK_MONOTONIC) }
    /// Now on the monotonic clock, as the pure cores take it.
    public static func monotonic(_ calls: SystemCalls = .kernel) -> Instant { Instant(nanoseconds: monotonicNanoseconds(calls)) }
    /// Seconds since the Unix epoch.
    public static func unixSeconds(_ calls: SystemCalls = .kernel) -> Int64 { calls.clockNanoseconds(CLOCK_REALTIME) / 1_000_000_000 }
    /// Milliseconds since the Unix epoch.
    public static func unixMilliseconds(_ calls: SystemCalls = .kernel) -> UInt64 {
        UInt64(calls.clockNanoseconds(CLOCK_REALTIME) / 1_000_000)
    }
    /// CPU seconds this process used (user + system).
    public static func processCPUSeconds(_ calls: SystemCalls = .kernel) -> Double {
        Double(calls.clockNanoseconds(CLOCK_PROCESS_CPUTIME_ID)) / 1e9
    }
    /// CPU seconds the calling thread used.
    public static func threadCPUSeconds(_ calls: SystemCalls = .kernel) -> Double {
        Double(calls.clockNanoseconds(CLOCK_THREAD_CPUTIME_ID)) / 1e9
    }
    /// Clock ticks per second of the process accounting in /proc (`sysconf(_SC_CLK_TCK)`).
    public static func accountingTicksPerSecond(_ calls: SystemCalls = .kernel) -> Int { calls.sysconf(Int32(_SC_CLK_TCK)) }
}
