import Foundation

/// The webhook settings: receivers (`webhooks`, or one `webhook` with its `webhook_secret`), how long an event is
/// retried (`webhook_retry_s`), how long one attempt may take (`webhook_timeout_s`) and how many deliveries one
/// receiver may have waiting (`webhook_outbox_max`).
public struct WebhookSettings: Sendable {
    /// The receivers, in the order given.
    public var endpoints: [WebhookEndpoint] = []
    /// A `webhook` URL given without its secret yet (completed by `webhook_secret`).
    var pendingURL: String?
    /// `webhook_retry_s`: 24 h.
    public var retrySeconds = 86_400
    /// `webhook_timeout_s`: one attempt's limit, connect included.
    public var timeoutSeconds = 10
    /// `webhook_outbox_max`: deliveries waiting per receiver; beyond, the oldest are dropped.
    public var outboxMax = 100_000

    /// Dev defaults: no receivers.
    public init() {}
}

extension RelayConfig {
    /// The keys of `WebhookSettings`.
    static let webhookKeys = [
        "webhooks", "webhook", "webhook_secret", "webhook_retry_s", "webhook_timeout_s", "webhook_outbox_max",
    ]

    /// Applies one webhook key (`set` passes them here). `webhooks` is a JSON array of `{"url", "secret"}` and
    /// replaces the list; `webhook` replaces it with one URL, `webhook_secret` gives that URL its secret.
    mutating func setWebhook(_ key: String, _ value: String) throws(ConfigError) {
        func int(_ range: ClosedRange<Int>) throws(ConfigError) -> Int {
            guard let v = Int(value), range.contains(v) else {
                throw ConfigError(
                    "\(key) must be an integer in \(range.lowerBound)...\(range.upperBound), got \"\(value)\"")
            }
            return v
        }
        switch key {
        case "webhooks":
            guard let data = value.data(using: .utf8),
                let list = try? JSONSerialization.jsonObject(with: data) as? [[String: String]]
            else {
                throw ConfigError(
                    "webhooks must be a JSON array of {\"url\": …, \"secret\": \"whsec_…\"} (the value is not shown)")
            }
            var endpoints: [WebhookEndpoint] = []
            for item in list {
                let url = try Self.webhookURL(item["url"] ?? "")
                endpoints.append(
                    WebhookEndpoint(url: url, secret: try Self.webhookSecret(item["secret"] ?? "", for: url)))
            }
            guard Set(endpoints.map(\.url)).count == endpoints.count else {
                throw ConfigError("webhooks: a URL is listed twice")
            }
            webhooks.endpoints = endpoints
            webhooks.pendingURL = nil
        case "webhook":  // "" = none
            webhooks.endpoints = []
            webhooks.pendingURL = value.isEmpty ? nil : try Self.webhookURL(value)
        case "webhook_secret":
            guard let url = webhooks.pendingURL ?? webhooks.endpoints.last?.url else {
                throw ConfigError(
                    "webhook_secret is set without a webhook URL (--webhook URL --webhook-secret whsec_…)")
            }
            let secret = try Self.webhookSecret(value, for: url)
            webhooks.endpoints.removeAll { $0.url == url }
            webhooks.endpoints.append(WebhookEndpoint(url: url, secret: secret))
            webhooks.pendingURL = nil
        case "webhook_retry_s": webhooks.retrySeconds = try int(60...30 * 86_400)
        case "webhook_timeout_s": webhooks.timeoutSeconds = try int(1...120)
        case "webhook_outbox_max": webhooks.outboxMax = try int(100...10_000_000)
        default: throw ConfigError("unknown setting \"\(key)\"")
        }
    }

    /// A webhook URL given without its secret is a mistake, said at start.
    func checkWebhooks() throws(ConfigError) {
        if let url = webhooks.pendingURL {
            throw ConfigError(
                "webhook \(WebhookDispatcher.shown(url)) has no secret: add --webhook-secret whsec_… "
                    + "(PARLEY_WEBHOOK_SECRET, webhook_secret or webhooks in the config file)")
        }
    }

    static func webhookURL(_ value: String) throws(ConfigError) -> String {
        let lower = value.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), value.utf8.count <= 2_048,
            !value.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
        else {
            throw ConfigError(
                "a webhook must be an http:// or https:// URL without spaces, got \"\(WebhookDispatcher.shown(value))\""
            )
        }
        return value
    }

    static func webhookSecret(_ value: String, for url: String) throws(ConfigError) -> WebhookSecret {
        guard let secret = WebhookSecret(value) else {
            throw ConfigError(
                "the secret of webhook \(WebhookDispatcher.shown(url)) must be whsec_ and 16 to 64 bytes in base64 "
                    + "(the value is not shown)")
        }
        return secret
    }
}
