import CSodium

/// End-to-end encryption of one media frame (an Opus payload) in the spirit of SFrame (RFC 9605), simplified: a
/// 5-byte header (key id, 32-bit counter), then the ChaCha20-Poly1305 IETF ciphertext of the payload and its tag. It
/// sits inside the RTP payload, so the hop-by-hop layer (RTP, later SRTP) carries it unchanged and the relay, which
/// holds no frame key, forwards what it cannot read.
///
///      0        1                 5                              5+n           5+n+16
///     +--------+-----------------+------------------------------+-------------+
///     | key id | counter (BE u32)| ChaCha20 ciphertext (n bytes)| Poly1305 tag|
///     +--------+-----------------+------------------------------+-------------+
///
/// - The nonce is Noise's (`00 00 00 00 || counter` little-endian, 64 bits): unique because each key seals for one
///   sender only (one key per direction) and the counter never repeats under a key.
/// - The associated data is the 5-byte header: a changed key id or counter fails the tag. The RTP header is *not*
///   authenticated end to end (the relay may rewrite it, and the hop-by-hop layer authenticates it per hop): a relay
///   can drop, delay or reorder frames, but cannot alter, forge or replay one.
/// - Replay: a `ReplayWindow` of 2,048 counters for the one sender of the receive key (checked before decrypting,
///   marked after the tag verified); a frame retransmitted after a NACK is a replay once the first copy arrived.
/// - Counters stop at 2^32−1 (`.counterExhausted`): 2.7 years of 20 ms frames; a call ends long before.
///
/// `seal` and `open` write into caller-owned buffers and allocate nothing. One thread owns a cipher (not
/// `Sendable`); both keys live in one allocation wiped on release.
public final class FrameCipher {
    /// Bytes of the header: key id and counter.
    public static let headerLength = 5
    /// Bytes a sealed frame adds to its payload: header and tag.
    public static let overhead = headerLength + CipherState.tagLength
    /// Length of each key.
    public static let keyLength = CipherState.keyLength

    private let keys: UnsafeMutableRawBufferPointer
    private var sendKey: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: keys[0..<Self.keyLength]) }
    private var receiveKey: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: keys[Self.keyLength...]) }
    /// The key id written into sealed frames.
    public let sendKeyID: UInt8
    /// The key id frames must carry to be opened.
    public let receiveKeyID: UInt8
    /// The counter the next `seal` uses.
    public internal(set) var nextCounter: UInt32 = 0
    /// The counters already opened.
    public private(set) var replayWindow = ReplayWindow()
    /// Frames refused by `open`, for the owner's statistics.
    public private(set) var framesRefused = 0

    /// A cipher sealing with `sendKey` under `sendKeyID` and opening frames of `receiveKeyID` with `receiveKey`
    /// (32 bytes each; nil otherwise).
    public init?(sendKey: [UInt8], sendKeyID: UInt8, receiveKey: [UInt8], receiveKeyID: UInt8) {
        guard sendKey.count == Self.keyLength, receiveKey.count == Self.keyLength else { return nil }
        Sodium.ensureReady()
        keys = .allocate(byteCount: 2 * Self.keyLength, alignment: 16)
        keys.copyBytes(from: sendKey + receiveKey)
        self.sendKeyID = sendKeyID
        self.receiveKeyID = receiveKeyID
    }

    deinit {
        sodium_memzero(keys.baseAddress!, keys.count)
        keys.deallocate()
    }

    /// Seals `payload` with the next counter into `buffer` (at least `payload.count + overhead` bytes); returns the
    /// frame's length. `payload` and `buffer` must not overlap. Throws `.bufferTooSmall` or `.counterExhausted`.
    public func seal(_ payload: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws(FrameCipherError) -> Int {
        guard nextCounter < UInt32.max else { throw .counterExhausted }
        guard buffer.count >= payload.count + Self.overhead else { throw .bufferTooSmall }
        let counter = nextCounter
        buffer[0] = sendKeyID
        buffer.storeBytes(of: counter.bigEndian, toByteOffset: 1, as: UInt32.self)
        let header = UnsafeRawBufferPointer(rebasing: buffer[0..<Self.headerLength])
        let body = UnsafeMutableRawBufferPointer(rebasing: buffer[Self.headerLength...])
        let written = CipherState.encrypt(key: sendKey, nonce: UInt64(counter), plaintext: payload, associatedData: header, into: body)
        nextCounter = counter + 1
        return Self.headerLength + written
    }

    /// Opens `frame` into `buffer` (at least `frame.count − overhead` bytes); returns the payload's length. The key
    /// id and counter are checked before decrypting, the counter marked only after the tag verified; nothing changes
    /// but `framesRefused` when it throws `.frameTooShort`, `.bufferTooSmall`, `.unknownKeyID`, `.replayed`,
    /// `.tooOld` or `.authenticationFailed` (tampered, wrong key, wrong direction, or a cleartext frame).
    public func open(_ frame: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws(FrameCipherError) -> Int {
        do {
            return try openChecked(frame, into: buffer)
        } catch {
            framesRefused += 1
            throw error
        }
    }

    private func openChecked(_ frame: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) throws(FrameCipherError) -> Int {
        guard frame.count >= Self.overhead else { throw .frameTooShort }
        guard buffer.count >= frame.count - Self.overhead else { throw .bufferTooSmall }
        guard frame[0] == receiveKeyID else { throw .unknownKeyID(frame[0]) }
        let counter = UInt64(UInt32(bigEndian: frame.loadUnaligned(fromByteOffset: 1, as: UInt32.self)))
        do { try replayWindow.check(counter) } catch { throw error == .tooOld ? .tooOld : .replayed }
        let header = UnsafeRawBufferPointer(rebasing: frame[0..<Self.headerLength])
        let body = UnsafeRawBufferPointer(rebasing: frame[Self.headerLength...])
        guard CipherState.decrypt(key: receiveKey, nonce: counter, ciphertext: body, associatedData: header, into: buffer) else {
            throw .authenticationFailed
        }
        try? replayWindow.mark(counter)  // checked above; cannot fail
        return frame.count - Self.overhead
    }

    /// `seal` for arrays (tests, tools).
    public func seal(_ payload: [UInt8]) throws(FrameCipherError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: payload.count + Self.overhead)
        let result = payload.withUnsafeBytes { p in
            out.withUnsafeMutableBytes { o in Result { () throws(FrameCipherError) in try seal(p, into: o) } }
        }
        _ = try result.get()
        return out
    }

    /// `open` for arrays (tests, tools).
    public func open(_ frame: [UInt8]) throws(FrameCipherError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: max(0, frame.count - Self.overhead))
        let result = frame.withUnsafeBytes { f in
            out.withUnsafeMutableBytes { o in Result { () throws(FrameCipherError) in try open(f, into: o) } }
        }
        out.removeSubrange(try result.get()...)
        return out
    }
}

/// Why `FrameCipher` refused to seal or open a frame. Every hostile input ends here as a value; the receiver drops
/// the frame (the jitter buffer conceals it) and counts it.
public enum FrameCipherError: Error, Equatable, Sendable {
    /// Shorter than a header and a tag: not a sealed frame (e.g. a cleartext Opus packet).
    case frameTooShort
    /// The caller's output buffer cannot hold the result.
    case bufferTooSmall
    /// The frame names a key this side does not hold (our own frame reflected back, or another sender's).
    case unknownKeyID(UInt8)
    /// The counter was already opened once.
    case replayed
    /// The counter lies behind the replay window.
    case tooOld
    /// The tag did not verify: tampered, sealed with another key, or not sealed at all.
    case authenticationFailed
    /// 2^32 − 1 frames were sealed under this key: agree a new one.
    case counterExhausted
}
