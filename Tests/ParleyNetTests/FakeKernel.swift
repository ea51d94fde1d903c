import CParleySys
import Glibc
import ParleyNet
import ParleyWire

/// A kernel that follows a script: each sendmmsg call takes the next step (accept up to n datagrams, or fail with an
/// errno); once the script is used up it accepts everything. What it accepts is copied out, with its address, in
/// order, so a test sees exactly what would have left.
final class FakeKernel: @unchecked Sendable {
    // Invariant: used by one test on one thread (the batch calls it synchronously from flush/receive).

    /// One sendmmsg call's answer.
    enum Step: Equatable {
        /// Accept the first `n` datagrams offered (all of them when fewer are offered).
        case accept(Int)
        /// Return -errno without sending anything.
        case fail(Int32)
    }

    var sendScript: [Step] = []
    /// Answers to recvmmsg, in order (nothing scripted: EAGAIN).
    var receiveScript: [Int32] = []
    /// What left, in order.
    private(set) var delivered: [(bytes: [UInt8], to: PeerAddress)] = []
    /// How many datagrams each sendmmsg call was offered.
    private(set) var offered: [Int] = []

    /// The kernel's calls with recvmmsg and sendmmsg answered by this script.
    var calls: SystemCalls {
        var calls = SystemCalls.kernel
        calls.recvmmsg = { [self] _, _, _ in receiveScript.isEmpty ? -EAGAIN : receiveScript.removeFirst() }
        calls.sendmmsg = { [self] _, headers, count in sendmmsg(headers, Int(count)) }
        return calls
    }

    private func sendmmsg(_ headers: UnsafeMutablePointer<parley_mmsg>, _ count: Int) -> Int32 {
        offered.append(count)
        var accept = count
        if !sendScript.isEmpty {
            switch sendScript.removeFirst() {
            case .accept(let n): accept = min(n, count)
            case .fail(let code): return -code
            }
        }
        for i in 0..<accept {
            let h = headers[i].msg_hdr
            let bytes = Array(UnsafeRawBufferPointer(start: h.msg_iov.pointee.iov_base, count: h.msg_iov.pointee.iov_len))
            delivered.append((bytes, PeerAddress(storage: UnsafeRawPointer(h.msg_name!))!))
        }
        return Int32(accept)
    }

    /// The payloads delivered, in order.
    var deliveredBytes: [[UInt8]] { delivered.map(\.bytes) }
}
