import Glibc
import ParleyNet
import ParleyWire
import Testing

/// Every call ParleyNet makes goes through `SystemCalls`; a test replaces the ones it cares about.
@Suite("SystemCalls: the one shim a test can stand in for")
struct SystemCallsTests {
    static let loopback = PeerAddress(ipv4: 127, 0, 0, 1, port: 0)

    @Test("bind refused: the socket reports which call failed and why, and closes the descriptor it opened exactly once")
    func bindFailure() {
        let closed = Box<[Int32]>([])
        var calls = SystemCalls.kernel
        calls.socket = { _, _, _ in 42 }
        calls.setSocketBuffers = { _, _ in 0 }
        calls.bind = { _, _, _ in -EADDRINUSE }
        calls.close = { fd in closed.value.append(fd); return 0 }
        #expect(throws: SystemError("bind \(Self.loopback)", EADDRINUSE)) {
            _ = try UDPSocket(bindingTo: Self.loopback, calls: calls)
        }
        #expect(closed.value == [42])
    }

    @Test("socket refused: no descriptor, nothing to close")
    func socketFailure() {
        var calls = SystemCalls.kernel
        calls.socket = { _, _, _ in -EMFILE }
        calls.close = { _ in Issue.record("close called without a descriptor"); return 0 }
        #expect(throws: SystemError("socket", EMFILE)) { _ = try UDPSocket(bindingTo: Self.loopback, calls: calls) }
    }

    @Test("a full socket: send throws wouldBlock; other errnos keep their kind")
    func sendErrors() throws {
        let answer = Box<Int>(-Int(EAGAIN))
        var calls = SystemCalls.kernel
        calls.sendto = { _, _, _, _, _, _ in answer.value }
        let socket = try UDPSocket(bindingTo: Self.loopback, calls: calls)
        let to = PeerAddress(ipv4: 192, 0, 2, 1, port: 9)
        #expect(throws: SocketError.wouldBlock) { try socket.send([1, 2, 3], to: to) }
        answer.value = -Int(EMSGSIZE)
        #expect(throws: SocketError(errno: EMSGSIZE)) { try socket.send([1, 2, 3], to: to) }
        answer.value = 3
        try socket.send([1, 2, 3], to: to)
    }

    @Test("the clocks read the clock they name")
    func clocks() {
        var calls = SystemCalls.kernel
        calls.clockNanoseconds = { clock in clock == CLOCK_MONOTONIC ? 5_000_000_123 : 1_700_000_000_987_654_321 }
        #expect(Clock.monotonicNanoseconds(calls) == 5_000_000_123)
        #expect(Clock.unixSeconds(calls) == 1_700_000_000)
        #expect(Clock.unixMilliseconds(calls) == 1_700_000_000_987)
    }

    @Test("a small file is read to its end, in chunks, and closed")
    func smallFile() {
        let reads = Box<[[UInt8]]>([Array(repeating: 7, count: 4096), [1, 2, 3]])
        let closed = Box<[Int32]>([])
        var calls = SystemCalls.kernel
        calls.openForReading = { _ in 9 }
        calls.read = { _, buffer, _ in
            guard !reads.value.isEmpty else { return 0 }
            let chunk = reads.value.removeFirst()
            chunk.withUnsafeBytes { buffer!.copyMemory(from: $0.baseAddress!, byteCount: chunk.count) }
            return chunk.count
        }
        calls.close = { fd in closed.value.append(fd); return 0 }
        let bytes = SmallFile.contents(of: "/proc/self/stat", calls: calls)
        #expect(bytes?.count == 4099 && bytes?.suffix(3) == [1, 2, 3])
        #expect(closed.value == [9])
        calls.openForReading = { _ in -ENOENT }
        #expect(SmallFile.contents(of: "/nowhere", calls: calls) == nil)
    }

    @Test("a thread runs its closure and is joined")
    func thread() throws {
        let ran = Box(false)
        let t = try OSThread(name: "parley-test-thread-name-longer-than-15") { ran.value = true }
        t.join()
        #expect(ran.value)
    }
}

/// A mutable value the fake calls capture (tests run each fake on one thread).
final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}
