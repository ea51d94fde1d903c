import CSodium

/// Sealed datagrams after the handshake, one key per direction from `Split()`, in the spirit of WireGuard's
/// transport: each datagram carries its own counter, so datagrams may be lost or reordered; a `ReplayWindow` accepts
/// each counter at most once and refuses those too far behind.
///
///      0                   8                                8+n          8+n+16
///     +-------------------+--------------------------------+-------------+
///     | counter (LE, u64) | ChaCha20 ciphertext (n bytes)  | Poly1305 tag|
///     +-------------------+--------------------------------+-------------+
///
/// The counter is the Noise nonce (`00 00 00 00 || counter` little-endian), so it is authenticated without being
/// associated data: a changed counter fails the tag. The body is byte for byte a Noise transport message for that
/// nonce. `seal` and `open` write into caller-owned buffers and allocate nothing.
///
/// Counter exhaustion: sealing stops (`.nonceExhausted`) at 2^64−1, which Noise reserves; the session must run a new
/// handshake. There is no in-place rekey: at a million datagrams a second the limit is 584,000 years away, and a
/// fresh handshake also restores forward secrecy.
///
/// One thread owns a channel (it is not `Sendable`); the two keys live in one allocation wiped on release.
public final class SealedChannel {
    /// Bytes of the counter in front of each datagram.
    public static let counterLength = 8
    /// Bytes a sealed datagram adds to its plaintext: counter and tag.
    public static let overhead = counterLength + CipherState.tagLength

    private let keys: UnsafeMutableRawBufferPointer
    private var sendKey: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: keys[0..<CipherState.keyLength]) }
    private var receiveKey: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: keys[CipherState.keyLength...]) }
    /// The counter the next `seal` uses.
    public internal(set) var nextSendCounter: UInt64 = 0
    /// The counters already opened.
    public private(set) var replayWindow = ReplayWindow()

    /// A channel from the handshake's `split()`: `sending` seals, `receiving` opens (their nonces are ignored).
    public init(sending: CipherState, receiving: CipherState) {
        precondition(sending.hasKey && receiving.hasKey, "split() yields keyed cipher states")
        keys = .allocate(byteCount: 2 * CipherState.keyLength, alignment: 16)
        keys.copyBytes(from: sending.key! + receiving.key!)
    }

    deinit {
        sodium_memzero(keys.baseAddress!, keys.count)
        keys.deallocate()
    }

    /// Seals `plaintext` with the next counter into `buffer` (at least `plaintext.count + overhead` bytes) and
    /// returns the datagram's length. Throws `.bufferTooSmall`, or `.nonceExhausted` past 2^64−2. `plaintext` and
    /// `buffer` must not overlap (the body lands 8 bytes after the buffer's start).
    public func seal(_ plaintext: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws(NoiseError) -> Int {
        guard nextSendCounter < UInt64.max else { throw .nonceExhausted }
        guard buffer.count >= plaintext.count + Self.overhead else { throw .bufferTooSmall }
        let counter = nextSendCounter
        buffer.storeBytes(of: counter.littleEndian, toByteOffset: 0, as: UInt64.self)
        let body = UnsafeMutableRawBufferPointer(rebasing: buffer[Self.counterLength...])
        let written = CipherState.encrypt(key: sendKey, nonce: counter, plaintext: plaintext,
                                          associatedData: UnsafeRawBufferPointer(start: nil, count: 0), into: body)
        nextSendCounter = counter + 1
        return Self.counterLength + written
    }

    /// Opens `datagram` into `buffer` (at least `datagram.count − overhead` bytes) and returns the plaintext length.
    /// The counter is checked against the replay window before decrypting and marked only after the tag verified.
    /// Throws `.messageTooShort`, `.bufferTooSmall`, `.tooOld`, `.replayed`, `.nonceExhausted` (counter 2^64−1) or
    /// `.authenticationFailed` (tampered, wrong key or wrong direction); nothing changes when it throws.
    public func open(_ datagram: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws(NoiseError) -> Int {
        guard datagram.count >= Self.overhead else { throw .messageTooShort }
        guard buffer.count >= datagram.count - Self.overhead else { throw .bufferTooSmall }
        let counter = UInt64(littleEndian: datagram.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        try replayWindow.check(counter)
        let body = UnsafeRawBufferPointer(rebasing: datagram[Self.counterLength...])
        guard CipherState.decrypt(key: receiveKey, nonce: counter, ciphertext: body,
                                  associatedData: UnsafeRawBufferPointer(start: nil, count: 0), into: buffer) else {
            throw .authenticationFailed
        }
        try replayWindow.mark(counter)
        return datagram.count - Self.overhead
    }

    /// `seal` for an array, into an array buffer (convenience for tests and the control plane).
    public func seal(_ plaintext: [UInt8], into buffer: inout [UInt8]) throws(NoiseError) -> Int {
        let result = plaintext.withUnsafeBytes { p in
            buffer.withUnsafeMutableBytes { b in Result { () throws(NoiseError) in try seal(p, into: b) } }
        }
        return try result.get()
    }

    /// `open` for an array, into an array buffer (convenience for tests and the control plane).
    public func open(_ datagram: [UInt8], into buffer: inout [UInt8]) throws(NoiseError) -> Int {
        let result = datagram.withUnsafeBytes { d in
            buffer.withUnsafeMutableBytes { b in Result { () throws(NoiseError) in try open(d, into: b) } }
        }
        return try result.get()
    }
}
