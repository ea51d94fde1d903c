import Glibc
import ParleyNet
import Testing

/// `HangUpWatch`: a socket is reported when its peer closes, never because bytes arrive; forgotten, it is not.
@Suite("HangUpWatch: sockets whose peers hung up, on a real epoll set")
struct HangUpWatchTests {
    /// A connected pair of stream sockets (AF_UNIX; EPOLLRDHUP behaves as for TCP).
    func pair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test("bytes arriving wake nothing; the peer's close is reported once per wait with the socket's token, until forgotten")
    func reportsHangUps() throws {
        let watch = try HangUpWatch()
        let (a, peerA) = pair(), (b, peerB) = pair()
        defer { close(a); close(b) }
        #expect(watch.watch(a, token: 7) == 0)
        #expect(watch.watch(b, token: 8) == 0)
        var byte: UInt8 = 1
        #expect(write(peerA, &byte, 1) == 1)
        #expect(watch.wait(timeoutMilliseconds: 50).isEmpty, "a byte is no hang-up")
        close(peerA)
        #expect(watch.wait(timeoutMilliseconds: 1_000) == [7])
        #expect(watch.wait(timeoutMilliseconds: 50) == [7], "level-triggered until forgotten")
        watch.forget(a)
        #expect(watch.wait(timeoutMilliseconds: 50).isEmpty)
        shutdown(peerB, Int32(SHUT_WR))  // the peer stops sending: that is a hang-up too
        #expect(watch.wait(timeoutMilliseconds: 1_000) == [8])
        close(peerB)
    }

    @Test("wake ends a wait at once with nothing to report")
    func wake() throws {
        let watch = try HangUpWatch()
        watch.wake()
        let start = Clock.monotonicNanoseconds()
        #expect(watch.wait(timeoutMilliseconds: 5_000).isEmpty)
        #expect(Clock.monotonicNanoseconds() - start < 1_000_000_000)
    }
}
