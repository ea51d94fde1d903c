import Foundation
import ParleyAuth
import ParleyRelay
import Testing

@Suite("parley-relay's configuration: credentials come in pairs; errors name every setting")
struct RelayConfigTests {
    @Test("no key configured: the dev credentials, and nothing to complain about")
    func devCredentials() throws {
        let c = RelayConfig()
        try c.checkCredentials()
        #expect(c.usesDevCredentials)
        #expect(c.apiKeys == [DevDefaults.apiKey: DevDefaults.apiSecret])
    }

    @Test("announce: a flag's comma list or the file's JSON list, IPv4 and IPv6; a bad one names the key; an IPv6 http address")
    func announce() throws {
        var c = RelayConfig()
        try c.set("announce", "198.51.100.10,2001:db8::10")
        #expect(c.announce.map(\.description) == ["198.51.100.10:0", "[2001:db8::10]:0"])
        try c.load(file: try Self.file(#"{"announce": ["203.0.113.4", "[2001:db8::4]"]}"#))
        #expect(c.announce.map(\.description) == ["203.0.113.4:0", "[2001:db8::4]:0"])
        let error = #expect(throws: ConfigError.self) { try c.set("announce", "0.0.0.0") }
        #expect(error?.description.hasPrefix("announce must be IP addresses") == true)
        try c.set("http", "[::]:7480")
        #expect(c.http.isWildcard && !c.http.isIPv4)
    }

    @Test("the public dev credentials off loopback are refused unless dev says so (issue 33, finding 10); own keys run anywhere",
          arguments: [("0.0.0.0:7400", "127.0.0.1:7480"), ("127.0.0.1:7400", "0.0.0.0:7480"), ("192.0.2.7:7400", "192.0.2.7:7480"),
                      ("[::]:7400", "127.0.0.1:7480")])
    func devCredentialsOffLoopback(udp: String, http: String) throws {
        var c = RelayConfig()
        try c.set("udp", udp)
        try c.set("http", http)
        let error = #expect(throws: ConfigError.self) { try c.checkCredentials() }
        let message = error?.description ?? ""
        #expect(message.contains("--dev") && message.contains("api_key") && message.contains("not loopback"), "\(message)")
        #expect(message.contains(udp.hasPrefix("127.") ? "http \(http)" : "udp"), "\(message)")
        var explicit = c
        try explicit.set("dev", "true")
        try explicit.checkCredentials()
        var environment = c
        try environment.load(environment: ["PARLEY_DEV": "1"])
        try environment.checkCredentials()
        var keyed = c
        try keyed.set("api_key", "prod")
        try keyed.set("api_secret", "a-secret-of-enough-bytes")
        try keyed.checkCredentials()
        // The dev secret named as a configured key is still the public secret.
        var named = c
        try named.load(file: try Self.file(#"{"api_keys": {"devkey": "\#(DevDefaults.apiSecret)"}}"#))
        #expect(throws: ConfigError.self) { try named.checkCredentials() }
    }

    @Test("loopback in every form runs the dev credentials without --dev: 127/8, localhost, ::1")
    func devCredentialsOnLoopback() throws {
        for (udp, http) in [("127.0.0.1:0", "127.0.0.1:0"), ("127.1.2.3:7400", "localhost:7480"), ("[::1]:7400", "127.0.0.1:7480")] {
            var c = RelayConfig()
            try c.set("udp", udp)
            try c.set("http", http)
            try c.checkCredentials()
        }
        var bad = RelayConfig()
        #expect(throws: ConfigError.self) { try bad.set("dev", "yes") }
    }

    static func file(_ text: String) throws -> String {
        let path = NSTemporaryDirectory() + "parley-config-\(UInt64.random(in: 0 ... .max)).json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("a key with its secret replaces the dev credentials, in either order")
    func keyAndSecret() throws {
        for order in [["api_key", "api_secret"], ["api_secret", "api_key"]] {
            var c = RelayConfig()
            for key in order { try c.set(key, key == "api_key" ? "prod" : "a-secret-of-enough-bytes") }
            try c.checkCredentials()
            #expect(c.apiKeys == ["prod": "a-secret-of-enough-bytes"])
            #expect(!c.usesDevCredentials)
        }
    }

    @Test("a key without its secret, or a secret without its key, is refused: the dev secret never signs for a chosen key")
    func halfAPair() throws {
        var keyOnly = RelayConfig()
        try keyOnly.set("api_key", "prod")
        #expect(throws: ConfigError.self) { try keyOnly.checkCredentials() }
        #expect(keyOnly.apiKeys["prod"] == nil)  // never paired with the dev secret
        var secretOnly = RelayConfig()
        try secretOnly.set("api_secret", "a-secret-of-enough-bytes")
        #expect(throws: ConfigError.self) { try secretOnly.checkCredentials() }
        var environment = RelayConfig()
        try environment.load(environment: ["PARLEY_API_KEY": "prod"])
        #expect(throws: ConfigError.self) { try environment.checkCredentials() }
        var empty = RelayConfig()
        #expect(throws: ConfigError.self) { try empty.set("api_key", "") }
    }

    @Test("Samples/parley-relay.json lists every setting, and loads")
    func sampleListsEverySetting() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("Samples/parley-relay.json").path
        let data = try #require(FileManager.default.contents(atPath: path))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let listed = Set(object.keys)
        for key in RelayConfig.keys where key != "api_key" && key != "api_secret" { #expect(listed.contains(key), "\(key) missing") }
        var c = RelayConfig()
        try c.load(file: path)
        #expect(c.stateDir == "/var/lib/parley-relay")
    }

    @Test("an unknown setting's error lists every key a file may hold, api_keys included")
    func unknownSettingListsEveryKey() {
        var c = RelayConfig()
        do {
            try c.set("member_timeout", "3")
            Issue.record("an unknown key was accepted")
        } catch {
            for key in RelayConfig.keys + ["api_keys"] { #expect(error.description.contains(key), "\(key) missing") }
        }
    }
}

@Suite("Configuration: the cluster's Redis")
struct ClusterConfigTests {
    @Test("issue 33: cluster takes a password and rediss://, cluster_tls_ca names the CA file; a bad URL's error never echoes a password")
    func clusterURL() throws {
        var config = RelayConfig()
        try config.set("cluster_tls_ca", "/etc/parley/redis-ca.pem")
        try config.set("cluster", "rediss://parley:hunter2@10.0.0.5:6380")
        let url = try #require(config.cluster)
        #expect(url.tls && url.user == "parley" && url.password == "hunter2" && url.caFile == "/etc/parley/redis-ca.pem")
        try config.set("cluster", "redis://127.0.0.1:6379")
        #expect(config.cluster?.password == nil && config.cluster?.tls == false)
        do {
            try config.set("cluster", "redis://:hunter2@h:99999")
            Issue.record("a bad port was taken")
        } catch {
            #expect(!error.description.contains("hunter2") && error.description.contains("not shown"), "\(error.description)")
        }
        #expect(throws: ConfigError.self) { try config.set("cluster", "http://h:1") }
        try config.set("cluster", "")
        #expect(config.cluster == nil)
    }
}

@Suite("parley-relay's configuration: attachment_max_bytes")
struct AttachmentConfigTests {
    @Test("8 MiB by default; set from a key or PARLEY_ATTACHMENT_MAX_BYTES; 0 allowed (no uploads); negative or over 64 MiB refused")
    func attachmentMaxBytes() throws {
        var c = RelayConfig()
        #expect(c.attachmentMaxBytes == 8 * 1024 * 1024)
        try c.load(environment: ["PARLEY_ATTACHMENT_MAX_BYTES": "1000"])
        #expect(c.attachmentMaxBytes == 1000)
        try c.set("attachment_max_bytes", "0")
        #expect(c.attachmentMaxBytes == 0)
        try c.set("attachment_max_bytes", "67108864")
        for bad in ["-1", "67108865", "8MB", ""] {
            #expect(throws: ConfigError.self) { try c.set("attachment_max_bytes", bad) }
        }
        #expect(c.attachmentMaxBytes == 67_108_864)
    }
}

@Suite("parley-relay's configuration: the HTTP limits and metrics_require_auth")
struct HTTPLimitsConfigTests {
    @Test("the HTTP limits and metrics_require_auth from keys, with bad values refused")
    func fromKeys() throws {
        var c = RelayConfig()
        #expect(c.metricsRequireAuth == .remote)
        #expect(c.httpLimits == HTTPLimits())
        try c.set("http_max_connections", "200")
        try c.set("http_connections_per_address", "8")
        try c.set("http_idle_timeout_s", "3")
        try c.set("http_header_timeout_s", "4")
        try c.set("event_stream_stall_timeout_s", "7")
        #expect(c.httpLimits.maxConnections == 200 && c.httpLimits.connectionsPerAddress == 8)
        #expect(c.httpLimits.idleTimeoutSeconds == 3 && c.httpLimits.eventStreamStallSeconds == 7 && c.httpLimits.headerTimeoutSeconds == 4)
        for (value, expected) in [("true", MetricsAuth.always), ("1", .always), ("remote", .remote), ("false", .never), ("0", .never)] {
            try c.set("metrics_require_auth", value)
            #expect(c.metricsRequireAuth == expected)
        }
        #expect(throws: ConfigError.self) { try c.set("metrics_require_auth", "yes") }
        #expect(throws: ConfigError.self) { try c.set("http_idle_timeout_s", "0") }
        #expect(throws: ConfigError.self) { try c.set("http_connections_per_address", "-1") }
        for key in ["http_max_connections", "http_connections_per_address", "http_idle_timeout_s", "http_header_timeout_s",
                    "event_stream_stall_timeout_s"] {
            #expect(RelayConfig.keys.contains(key))
        }
    }
}
