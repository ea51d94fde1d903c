import Glibc
import ParleyNet
import Testing

@Suite("SocketError: every errno the send and receive paths meet has a kind and a metric label")
struct SocketErrorTests {
    @Test("errno → case → label", arguments: [
        (EAGAIN, SocketError.wouldBlock, "would_block"),
        (EWOULDBLOCK, .wouldBlock, "would_block"),
        (ECONNREFUSED, .connectionRefused, "connection_refused"),
        (EMSGSIZE, .messageTooLarge, "message_too_large"),
        (ENOBUFS, .noBuffers, "no_buffers"),
        (ENOMEM, .noBuffers, "no_buffers"),
        (ENETUNREACH, .unreachable, "unreachable"),
        (EHOSTUNREACH, .unreachable, "unreachable"),
        (ENETDOWN, .unreachable, "unreachable"),
        (EHOSTDOWN, .unreachable, "unreachable"),
        (EACCES, .permission, "permission"),
        (EPERM, .permission, "permission"),
        (EINVAL, .other(EINVAL), "other"),
        (EAFNOSUPPORT, .other(EAFNOSUPPORT), "other"),
    ])
    func classify(code: Int32, error: SocketError, label: String) {
        #expect(SocketError(errno: code) == error)
        #expect(error.kind.label == label)
    }

    @Test("labels are distinct metric label values")
    func labels() {
        let labels = SocketError.Kind.allCases.map(\.label) + SendDropReason.allCases.map(\.label)
        #expect(Set(labels).count == labels.count)
        #expect(labels.allSatisfy { $0.allSatisfy { $0 == "_" || ("a"..."z").contains($0) } })
    }

    @Test("`other` describes itself with the errno and its text")
    func otherDescription() {
        #expect(SocketError.other(EINVAL).description == "other (errno \(EINVAL): Invalid argument)")
        #expect(SocketError.noBuffers.description == "no_buffers")
    }
}
