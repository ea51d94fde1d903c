import CSodium

/// An SDES master key of the `AES_CM_128_HMAC_SHA1_80` profile (RFC 4568 §6.1): 16 bytes of AES-128 master key followed
/// by 14 bytes of master salt, 30 in all, as an `a=crypto` line carries them (`inline:` + base64 of the 30 bytes).
///
/// ```
/// a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:<40 base64 characters>
///            └ suite ───────────────┘        └ key (16) ‖ salt (14) ┘
/// ```
public struct SDESKey: Sendable, Equatable {
    /// The crypto suite name (RFC 4568), as SDP, ffmpeg (`-srtp_out_suite`) and GStreamer name it.
    public static let suite = "AES_CM_128_HMAC_SHA1_80"
    /// Master key plus master salt.
    public static let byteCount = 30

    /// The 30 bytes: key, then salt.
    public let bytes: [UInt8]

    /// A key from exactly 30 bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// A fresh key from libsodium's `randombytes_buf` (the kernel's CSPRNG).
    public static func random() -> SDESKey {
        Sodium.ensureReady()
        var bytes = [UInt8](repeating: 0, count: byteCount)
        bytes.withUnsafeMutableBytes { randombytes_buf($0.baseAddress!, $0.count) }
        return SDESKey(bytes: bytes)!
    }

    /// A key from the `inline:` value of an `a=crypto` line (standard base64 with padding, 30 bytes); nil otherwise.
    public init?(base64 text: String) {
        Sodium.ensureReady()
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        var decoded = [UInt8](repeating: 0, count: Self.byteCount + 3)
        var length = 0
        let utf8 = Array(text.utf8)
        let rc = decoded.withUnsafeMutableBufferPointer { out in
            utf8.withUnsafeBufferPointer { input in
                input.withMemoryRebound(to: CChar.self) { chars in
                    sodium_base642bin(out.baseAddress!, out.count, chars.baseAddress!, chars.count, nil, &length, nil,
                                      sodium_base64_VARIANT_ORIGINAL)
                }
            }
        }
        guard rc == 0, length == Self.byteCount else { return nil }
        self.bytes = Array(decoded[0..<length])
    }

    /// Standard base64 with padding (40 characters): the `inline:` value, and ffmpeg's `-srtp_out_params`/`-srtp_in_params`.
    public var base64: String {
        Sodium.ensureReady()
        let size = 4 * ((Self.byteCount + 2) / 3) + 1  // sodium_base64_ENCODED_LEN(30, ORIGINAL)
        var out = [CChar](repeating: 0, count: size)
        _ = bytes.withUnsafeBufferPointer { b in sodium_bin2base64(&out, size, b.baseAddress!, b.count, sodium_base64_VARIANT_ORIGINAL) }
        return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The SDP attribute value after `a=`: `crypto:<tag> AES_CM_128_HMAC_SHA1_80 inline:<base64>`.
    public func cryptoAttribute(tag: Int = 1) -> String { "crypto:\(tag) \(Self.suite) inline:\(base64)" }
}
