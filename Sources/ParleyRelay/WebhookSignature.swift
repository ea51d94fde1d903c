import Foundation
import ParleyAuth

/// The Standard Webhooks signature (<https://www.standardwebhooks.com>): `webhook-signature: v1,<base64 HMAC-SHA256>`
/// over `"<webhook-id>.<webhook-timestamp>.<body>"`, keyed with the bytes of a `whsec_<base64>` secret. Pure.
public struct WebhookSecret: Sendable, Equatable {
    /// The key bytes (the base64 after `whsec_`).
    let key: [UInt8]

    /// The prefix every secret starts with.
    public static let prefix = "whsec_"

    /// Parses `whsec_<base64>` (at least 16 key bytes, at most 64); nil for anything else. Never echo the value.
    public init?(_ text: String) {
        guard text.hasPrefix(Self.prefix), let data = Data(base64Encoded: String(text.dropFirst(Self.prefix.count))),
            (16...64).contains(data.count)
        else { return nil }
        key = Array(data)
    }

    /// The `webhook-signature` header's value for one attempt: `v1,` and the base64 HMAC.
    public func signature(id: String, timestamp: Int64, body: String) -> String {
        let signed = Array("\(id).\(timestamp).".utf8) + Array(body.utf8)
        return "v1," + Data(Crypto.hmacSHA256(key: key, message: signed)).base64EncodedString()
    }
}
