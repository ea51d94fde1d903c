@testable import ParleyWebRTC

/// Builds STUN messages attribute by attribute for tests that need shapes the writer never produces. The header's
/// length is the final one; MESSAGE-INTEGRITY (when `integrityKey` is given) is computed as RFC 8489 §14.5 says,
/// FINGERPRINT over everything before it.
struct STUNMessageBuilder {
    /// Message type.
    var type: UInt16 = 0x0001
    /// Transaction ID.
    var transactionID: [UInt8] = rfc5769TransactionID
    /// Attributes before MESSAGE-INTEGRITY, as (type, value); values are padded with zeros.
    var attributes: [(UInt16, [UInt8])] = []
    /// MESSAGE-INTEGRITY's key, or nil for none.
    var integrityKey: [UInt8]? = nil
    /// Attributes between MESSAGE-INTEGRITY and FINGERPRINT.
    var afterIntegrity: [(UInt16, [UInt8])] = []
    /// Whether to append FINGERPRINT.
    var fingerprint = true
    /// Attributes after FINGERPRINT.
    var afterFingerprint: [(UInt16, [UInt8])] = []

    /// One TLV with zero padding.
    static func tlv(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(value.count >> 8), UInt8(value.count & 0xFF)]
        out += value
        out += [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
        return out
    }

    /// `value` big-endian, all its bytes.
    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<(T.bitWidth / 8)).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    /// The message.
    var bytes: [UInt8] {
        var body = attributes.flatMap { Self.tlv($0.0, $0.1) }
        let afterMI = afterIntegrity.flatMap { Self.tlv($0.0, $0.1) }
        let afterFP = afterFingerprint.flatMap { Self.tlv($0.0, $0.1) }
        let total = body.count + (integrityKey == nil ? 0 : 24) + afterMI.count + (fingerprint ? 8 : 0) + afterFP.count
        func header(_ length: Int) -> [UInt8] {
            Self.bigEndian(type) + Self.bigEndian(UInt16(length)) + Self.bigEndian(STUN.magicCookie) + transactionID
        }
        if let key = integrityKey {
            let covered = header(body.count + 24) + body
            var mac = [UInt8](repeating: 0, count: 20)
            covered.withUnsafeBytes { raw in
                mac.withUnsafeMutableBytes { STUNMessageIntegrity.hmac(key: key, message: raw, into: $0.baseAddress!) }
            }
            body += Self.tlv(0x0008, mac)
        }
        body += afterMI
        var message = header(total) + body
        if fingerprint {
            let value = message.withUnsafeBytes { STUNFingerprint.value(over: $0) }
            message += Self.tlv(0x8028, Self.bigEndian(value))
        }
        return message + afterFP
    }
}
