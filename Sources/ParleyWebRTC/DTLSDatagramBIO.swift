import COpenSSL

/// What one session's write BIO collected: each `BIO_write` OpenSSL makes is one datagram.
///
/// OpenSSL writes a handshake flight through a buffering BIO that it flushes whenever the next record would not fit
/// the MTU, so each flush reaches this BIO as one write of whole records, at most MTU bytes; after the handshake each
/// record is one write. A memory BIO would concatenate them and lose the boundaries.
final class DTLSDatagramQueue {
    /// Datagrams waiting to be sent, oldest first.
    var datagrams: [[UInt8]] = []
    /// Datagrams dropped because `limit` were already waiting (the caller did not drain): the peer recovers them by
    /// retransmission, as it would on a lossy path.
    var dropped = 0
    /// The most datagrams kept: a full handshake flight is at most a handful.
    let limit = 64

    /// Keeps a copy of `bytes` as one datagram, or counts it dropped.
    func push(_ bytes: UnsafeRawBufferPointer) {
        guard datagrams.count < limit else {
            dropped += 1
            return
        }
        datagrams.append(Array(bytes))
    }
}

/// The `BIO_METHOD` of the datagram write BIO: a sink whose `BIO_get_data` is an unretained `DTLSDatagramQueue`.
/// Its controls answer what OpenSSL's DTLS code asks of a datagram BIO: flush succeeds, nothing is ever pending
/// (so the buffering BIO's own count decides how full a datagram is), the MTU is `DTLSSession.mtu` with no
/// overhead below it, and everything else (timeouts, peer addresses, MTU-exceeded) is "not supported": 0.
final class DTLSDatagramBIOMethod: @unchecked Sendable {
    // @unchecked Sendable: the BIO_METHOD is filled in `init` and only read afterwards (BIO_new takes it by pointer
    // and never writes it); it lives for the whole process.

    /// The one method every session's write BIO uses.
    static let shared = DTLSDatagramBIOMethod()

    /// `BIO_METHOD *`.
    let method: OpaquePointer

    private init() {
        guard let method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "parley dtls datagrams") else {
            fatalError("BIO_meth_new failed: \(OpenSSLErrors.drain())")
        }
        BIO_meth_set_create(method) { bio in
            BIO_set_init(bio, 1)
            return 1
        }
        BIO_meth_set_destroy(method) { bio in
            BIO_set_data(bio, nil)
            return 1
        }
        BIO_meth_set_write(method) { bio, data, length in
            guard length > 0 else { return length }
            guard let bio, let data, let queue = BIO_get_data(bio) else { return -1 }
            Unmanaged<DTLSDatagramQueue>.fromOpaque(queue).takeUnretainedValue()
                .push(UnsafeRawBufferPointer(start: data, count: Int(length)))
            return length
        }
        BIO_meth_set_ctrl(method) { _, command, _, _ in
            switch command {
            case BIO_CTRL_FLUSH: 1
            case BIO_CTRL_PENDING, BIO_CTRL_WPENDING: 0
            case BIO_CTRL_DGRAM_QUERY_MTU, BIO_CTRL_DGRAM_GET_FALLBACK_MTU: DTLSSession.mtu
            case BIO_CTRL_DGRAM_GET_MTU_OVERHEAD: 0
            default: 0
            }
        }
        self.method = method
    }

    deinit { BIO_meth_free(method) }

    /// A new write BIO that appends to `queue`, which must outlive it (the session owns both and frees the BIO first).
    func makeBIO(queue: DTLSDatagramQueue) -> OpaquePointer? {
        guard let bio = BIO_new(method) else { return nil }
        BIO_set_data(bio, Unmanaged.passUnretained(queue).toOpaque())
        return bio
    }
}
