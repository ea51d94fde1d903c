import CSodium

/// The relay-to-relay link of a cluster (cascading): every datagram one node's worker sends another node's worker,
/// sealed with ChaCha20-Poly1305 IETF under a key only the cluster's nodes can derive.
///
///      0      1      2        3        4            12           20              28
///     +------+------+--------+--------+------------+------------+---------------+------------------+-----+
///     | 0xC5 | ver 1| from w | to w   | node (u64) | boot (u64) | counter (u64) | ciphertext       | tag |
///     +------+------+--------+--------+------------+------------+---------------+------------------+-----+
///
/// - Keys: `root` = BLAKE2b("parley cascade v1" ‖ cluster secret); the sending key of node `node` (FNV-1a 64 of its
///   id), started at `boot` (random per start), worker `w` = BLAKE2b-keyed(root, node ‖ boot ‖ w). One key per sending
///   worker and start, so its counter (the nonce) never repeats under a key, even across restarts.
/// - The 28-byte header is the associated data: a changed field fails the tag. The receiver checks the receiving worker
///   is itself (a datagram replayed to another worker of the node fails), that `node` is live in the directory with
///   this `boot` and sends from one of its ports (a past start's datagrams are refused), and keeps a `ReplayWindow`
///   per sender before decrypting; the counter is marked only after the tag verified.
public enum CascadeCipher {
    /// The first byte (RFC 7983 leaves 192–255 to other protocols; no STUN, DTLS, RTP or signalling starts with it).
    public static let type: UInt8 = 0xC5
    public static let version: UInt8 = 1
    public static let headerLength = 28
    /// Bytes a sealed datagram adds to its body.
    public static let overhead = headerLength + CipherState.tagLength

    /// The clear header of a sealed datagram.
    public struct Header: Equatable, Sendable {
        public var senderWorker: UInt8
        public var receiverWorker: UInt8
        public var node: UInt64
        public var boot: UInt64
        public var counter: UInt64

        public init(senderWorker: UInt8, receiverWorker: UInt8, node: UInt64, boot: UInt64, counter: UInt64) {
            self.senderWorker = senderWorker
            self.receiverWorker = receiverWorker
            self.node = node
            self.boot = boot
            self.counter = counter
        }

        /// The header of `datagram`; nil when it is too short or not a cascade datagram of this version.
        public init?(_ datagram: UnsafeRawBufferPointer) {
            guard datagram.count >= CascadeCipher.overhead, datagram[0] == CascadeCipher.type, datagram[1] == CascadeCipher.version else { return nil }
            senderWorker = datagram[2]
            receiverWorker = datagram[3]
            node = UInt64(bigEndian: datagram.loadUnaligned(fromByteOffset: 4, as: UInt64.self))
            boot = UInt64(bigEndian: datagram.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
            counter = UInt64(bigEndian: datagram.loadUnaligned(fromByteOffset: 20, as: UInt64.self))
        }

        func write(into buffer: UnsafeMutableRawBufferPointer) {
            buffer[0] = CascadeCipher.type
            buffer[1] = CascadeCipher.version
            buffer[2] = senderWorker
            buffer[3] = receiverWorker
            buffer.storeBytes(of: node.bigEndian, toByteOffset: 4, as: UInt64.self)
            buffer.storeBytes(of: boot.bigEndian, toByteOffset: 12, as: UInt64.self)
            buffer.storeBytes(of: counter.bigEndian, toByteOffset: 20, as: UInt64.self)
        }
    }

    /// The cluster's root key from its shared secret.
    public static func root(secret: [UInt8]) -> [UInt8] {
        Sodium.ensureReady()
        let input = Array("parley cascade v1".utf8) + secret
        var out = [UInt8](repeating: 0, count: 32)
        crypto_generichash(&out, 32, input, UInt64(input.count), nil, 0)
        return out
    }

    /// The key worker `worker` of node `node` seals with during its start `boot`.
    public static func key(root: [UInt8], node: UInt64, boot: UInt64, worker: UInt8) -> [UInt8] {
        Sodium.ensureReady()
        var input = [UInt8](repeating: 0, count: 17)
        for i in 0..<8 {
            input[i] = UInt8(truncatingIfNeeded: node >> (56 - 8 * UInt64(i)))
            input[8 + i] = UInt8(truncatingIfNeeded: boot >> (56 - 8 * UInt64(i)))
        }
        input[16] = worker
        var out = [UInt8](repeating: 0, count: 32)
        crypto_generichash(&out, 32, input, UInt64(input.count), root, root.count)
        return out
    }
}

/// Seals one worker's datagrams to other nodes (see `CascadeCipher`). One thread owns it.
public final class CascadeSealer {
    private let key: UnsafeMutableRawBufferPointer
    public let node: UInt64
    public let boot: UInt64
    public let worker: UInt8
    /// The counter the next `seal` uses.
    public private(set) var counter: UInt64 = 0

    public init(root: [UInt8], node: UInt64, boot: UInt64, worker: UInt8) {
        self.node = node
        self.boot = boot
        self.worker = worker
        key = .allocate(byteCount: CipherState.keyLength, alignment: 16)
        key.copyBytes(from: CascadeCipher.key(root: root, node: node, boot: boot, worker: worker))
    }

    deinit {
        sodium_memzero(key.baseAddress!, key.count)
        key.deallocate()
    }

    /// Seals `body` for worker `receiverWorker` of another node into `buffer` (at least `body.count + overhead`
    /// bytes); returns the datagram's length. Allocates nothing.
    public func seal(_ body: UnsafeRawBufferPointer, receiverWorker: UInt8, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        precondition(buffer.count >= body.count + CascadeCipher.overhead)
        CascadeCipher.Header(senderWorker: worker, receiverWorker: receiverWorker, node: node, boot: boot, counter: counter).write(into: buffer)
        counter += 1
        let header = UnsafeRawBufferPointer(rebasing: buffer[0..<CascadeCipher.headerLength])
        let out = UnsafeMutableRawBufferPointer(rebasing: buffer[CascadeCipher.headerLength...])
        return CascadeCipher.headerLength
            + CipherState.encrypt(key: UnsafeRawBufferPointer(key), nonce: counter - 1, plaintext: body, associatedData: header, into: out)
    }
}

/// Why a cascade datagram was refused.
public enum CascadeError: Error, Equatable, Sendable {
    case malformed, wrongWorker, unknownSender, replayed, authenticationFailed
}

/// Opens the cascade datagrams one worker receives: a key and a replay window per sending worker of each live node's
/// current start. One thread owns it.
public final class CascadeOpener {
    private struct Sender: Hashable { var node: UInt64, boot: UInt64, worker: UInt8 }
    private final class Entry {
        let key: [UInt8]
        var window = ReplayWindow()
        var checkedAt: Int64
        init(key: [UInt8], checkedAt: Int64) { self.key = key; self.checkedAt = checkedAt }
    }
    private let root: [UInt8]
    private let worker: UInt8
    private var senders: [Sender: Entry] = [:]
    /// How long a sender stays trusted before the directory is asked again (a node that died is refused after this).
    public static let recheckNanoseconds: Int64 = 1_000_000_000

    public init(root: [UInt8], worker: UInt8) {
        self.root = root
        self.worker = worker
    }

    /// Opens `datagram` into `buffer` (at least `datagram.count − overhead` bytes); returns its header and the body's
    /// length. `isLive(node, boot)` says whether the directory knows that node in that start, sending from where this
    /// datagram came from; it is asked for a new sender and again each `recheckNanoseconds`. Nothing changes when it
    /// throws.
    public func open(_ datagram: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer, now nanoseconds: Int64,
                     isLive: (UInt64, UInt64) -> Bool) throws(CascadeError) -> (header: CascadeCipher.Header, length: Int) {
        guard let header = CascadeCipher.Header(datagram) else { throw .malformed }
        guard header.receiverWorker == worker else { throw .wrongWorker }
        guard buffer.count >= datagram.count - CascadeCipher.overhead else { throw .malformed }
        let id = Sender(node: header.node, boot: header.boot, worker: header.senderWorker)
        let entry: Entry
        if let known = senders[id] {
            if nanoseconds - known.checkedAt >= Self.recheckNanoseconds {
                guard isLive(header.node, header.boot) else {
                    senders[id] = nil
                    throw .unknownSender
                }
                known.checkedAt = nanoseconds
            }
            entry = known
        } else {
            guard isLive(header.node, header.boot) else { throw .unknownSender }
            // Forget the node's earlier starts (and, bounded, anything stale) before trusting this one.
            senders = senders.filter { $0.key.node != header.node || $0.key.boot == header.boot }
            entry = Entry(key: CascadeCipher.key(root: root, node: header.node, boot: header.boot, worker: header.senderWorker),
                          checkedAt: nanoseconds)
            // Not kept until the tag verified: a forged header cannot grow the table.
        }
        do { try entry.window.check(header.counter) } catch { throw .replayed }
        let ad = UnsafeRawBufferPointer(rebasing: datagram[0..<CascadeCipher.headerLength])
        let body = UnsafeRawBufferPointer(rebasing: datagram[CascadeCipher.headerLength...])
        let ok = entry.key.withUnsafeBytes { key in
            CipherState.decrypt(key: key, nonce: header.counter, ciphertext: body, associatedData: ad, into: buffer)
        }
        guard ok else { throw .authenticationFailed }
        try? entry.window.mark(header.counter)
        if senders[id] == nil { senders[id] = entry }
        return (header, datagram.count - CascadeCipher.overhead)
    }
}
