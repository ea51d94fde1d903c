import CParleySys
import ParleyWire

extension HotLines {
    /// Asks the CPU for every noted line (a hint: nothing is read, no address can fault), then forgets them. The
    /// worker calls it as it wakes, before `recvmmsg`, so the fetches overlap the system call and one another.
    public func prefetch() {
        guard count > 0 else { return }
        lines.withMemoryRebound(to: UnsafeRawPointer?.self, capacity: count) { parley_prefetch_lines($0, Int32(count)) }
        clear()
    }
}
