import Foundation
import ParleyAuth
import ParleyRelay
import ParleyWire
import ParleyTestSupport
import ParleyWebRTC
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

    @Test("sip and sip_trunks: the gateway's address and who may call")
    func sipSettings() throws {
        var c = RelayConfig()
        #expect(c.sip == nil && c.sipTrunks.isEmpty)
        try c.set("sip", "127.0.0.1:5060")
        try c.set("sip_trunks", "office=192.0.2.0/24 carrier=203.0.113.0/28;198.51.100.7,outbound=203.0.113.1:5060")
        try c.set("sip_trunk", "lab=10.0.0.0/8,user=u,password=p w")
        #expect(c.sip == PeerAddress(ipv4: 127, 0, 0, 1, port: 5060))
        #expect(c.sipTrunks.map(\.name) == ["office", "carrier", "lab"])
        #expect(c.sipTrunks[1].blocks.count == 2 && c.sipTrunks[2].password == "p w")
        for (key, value, message) in [
            ("sip_trunk", "lab=10.0.0.0/8", "sip_trunk: trunk lab is named twice"),
            ("sip_trunks", "t=10.0.0.1/8", "sip_trunk: trunk t: not an address block (a.b.c.d/n or v6/n): 10.0.0.1/8"),
        ] {
            var copy = c
            do {
                try copy.set(key, value)
                Issue.record("\(key) \(value) was accepted")
            } catch {
                #expect(error.description == message)
            }
        }
        #expect(throws: ConfigError.self) { try c.set("sip", "nowhere") }
        try c.set("sip_trunks", "")
        try c.set("sip", "")
        #expect(c.sip == nil && c.sipTrunks.isEmpty)
    }

    @Test("Samples/parley-relay.json lists every setting, and loads")
    func sampleListsEverySetting() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent("Samples/parley-relay.json").path
        let data = try #require(FileManager.default.contents(atPath: path))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let listed = Set(object.keys)
        // Secrets are no sample's business: the sample names the file a TURN secret is read from instead.
        for key in RelayConfig.keys where !["api_key", "api_secret", "turn_secret", "webhook_secret"].contains(key) {
            #expect(listed.contains(key), "\(key) missing")
        }
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

@Suite("parley-relay's configuration: TURN (turn_urls, turn_secret, turn_secret_file, turn_ttl_s)")
struct TURNConfigTests {
    static let secret = "parley-turn-shared-secret-0123"

    @Test("turn_urls from a comma list (spaces allowed), a JSON array or PARLEY_TURN_URLS; \"\" clears them")
    func urls() throws {
        var c = RelayConfig()
        #expect(c.iceServers.isEmpty && c.turnTTL == 3600)
        try c.set("turn_urls", "turn:198.51.100.10:3478?transport=udp, turns:turn.example.net:5349?transport=tcp")
        #expect(c.turnURLs.map(\.text)
                == ["turn:198.51.100.10:3478?transport=udp", "turns:turn.example.net:5349?transport=tcp"])
        try c.load(file: try RelayConfigTests.file(
            #"{"turn_urls": ["stun:stun.example.net", "turn:[2001:db8::1]:3478"]}"#))
        #expect(c.turnURLs.map(\.text) == ["stun:stun.example.net", "turn:[2001:db8::1]:3478"])
        try c.load(environment: ["PARLEY_TURN_URLS": "turn:10.0.0.1"])
        #expect(c.turnURLs.map(\.text) == ["turn:10.0.0.1"])
        try c.set("turn_urls", "")
        #expect(c.turnURLs.isEmpty)
    }

    @Test("a bad URL is refused naming turn_urls and what is wrong", arguments: [
        ("turn://h:3478", "no //"), ("http://h", "scheme"), ("turn:h:70000", "port"),
        ("turn:h?transport=sctp", "transport"),
        ("turn:h,,turn:g", "empty URL"), ("turn:h,", "empty URL"),
    ])
    func badURL(value: String, why: String) {
        var c = RelayConfig()
        let error = #expect(throws: ConfigError.self) { try c.set("turn_urls", value) }
        let message = error?.description ?? ""
        #expect(message.hasPrefix("turn_urls") && message.contains(why), "\(message)")
        #expect(c.turnURLs.isEmpty)
    }

    @Test("turn_ttl_s: 3600 by default, 60…86400 taken, the rest refused")
    func ttl() throws {
        var c = RelayConfig()
        for good in ["60", "600", "86400"] {
            try c.set("turn_ttl_s", good)
            #expect(c.turnTTL == Int64(good)! && c.iceServers.lifetime == Int64(good)!)
        }
        for bad in ["59", "86401", "-1", "1h", ""] {
            #expect(throws: ConfigError.self) { try c.set("turn_ttl_s", bad) }
        }
    }

    @Test("""
          the secret from turn_secret, PARLEY_TURN_SECRET or a file (its trailing line break not part of it): the \
          credential matches openssl's
          """)
    func secretSources() throws {
        let dir = ScratchDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        defer { dir.remove() }
        let file = dir.path + "/turn-secret"
        let files = [("newline", Self.secret + "\n"), ("crlf", Self.secret + "\r\n"), ("bare", Self.secret)]
        for (name, contents) in files {
            try contents.write(toFile: file, atomically: true, encoding: .utf8)
            var fromFile = RelayConfig()
            try fromFile.set("turn_urls", "turn:198.51.100.10:3478?transport=udp")
            try fromFile.set("turn_secret_file", file)
            try fromFile.checkCredentials()
            // printf '%s' '1700003600:ann' \
            //     | openssl dgst -sha1 -hmac 'parley-turn-shared-secret-0123' -binary | base64
            #expect(fromFile.iceServers.servers(for: "ann", now: 1_700_000_000).last?.credential
                    == "NKCeKIsXblmaEroV/93zhvOGrFc=", "\(name)")
        }
        var fromEnvironment = RelayConfig()
        try fromEnvironment.load(environment: ["PARLEY_TURN_URLS": "turn:198.51.100.10",
                                               "PARLEY_TURN_SECRET": Self.secret])
        try fromEnvironment.checkCredentials()
        #expect(fromEnvironment.iceServers.servers(for: "ann", now: 1_700_000_000).last?.credential
                == "NKCeKIsXblmaEroV/93zhvOGrFc=")
        var fromKey = RelayConfig()
        try fromKey.set("turn_secret", Self.secret)
        try fromKey.set("turn_urls", "turn:198.51.100.10")
        #expect(fromKey.iceServers.hasSecret)
    }

    @Test("""
          a secret too short, with a line break inside, or an unreadable file is refused, and no error shows the \
          secret
          """)
    func badSecrets() throws {
        let dir = ScratchDirectory()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        defer { dir.remove() }
        let file = dir.path + "/two-lines"
        try "first-line-of-the-secret\nsecond-line-of-it\n".write(toFile: file, atomically: true, encoding: .utf8)
        var c = RelayConfig()
        let short = #expect(throws: ConfigError.self) { try c.set("turn_secret", "hunter2-short") }
        #expect(short?.description.contains("16 bytes") == true && short?.description.contains("hunter2") == false)
        let broken = #expect(throws: ConfigError.self) { try c.set("turn_secret_file", file) }
        let brokenMessage = broken?.description ?? ""
        #expect(brokenMessage.contains("line break") && !brokenMessage.contains("first-line"), "\(brokenMessage)")
        let missing = #expect(throws: ConfigError.self) { try c.set("turn_secret_file", dir.path + "/absent") }
        #expect(missing?.description.contains("cannot read") == true)
        #expect(!c.iceServers.hasSecret)
    }

    @Test("""
          TURN URLs without a secret, or a secret without a TURN URL, is refused at start; STUN alone and nothing at \
          all are fine
          """)
    func pairs() throws {
        var urlsOnly = RelayConfig()
        try urlsOnly.set("turn_urls", "stun:stun.example.net,turn:198.51.100.10:3478")
        let noSecret = #expect(throws: ConfigError.self) { try urlsOnly.checkCredentials() }
        let noSecretMessage = noSecret?.description ?? ""
        #expect(noSecretMessage.contains("turn:198.51.100.10:3478") && noSecretMessage.contains("--turn-secret-file"))
        var secretOnly = RelayConfig()
        try secretOnly.set("turn_secret", Self.secret)
        try secretOnly.set("turn_urls", "stun:stun.example.net")
        let noURL = #expect(throws: ConfigError.self) { try secretOnly.checkCredentials() }
        #expect(noURL?.description.contains(Self.secret) == false)
        var stun = RelayConfig()
        try stun.set("turn_urls", "stun:stun.example.net")
        try stun.checkCredentials()
        try RelayConfig().checkCredentials()
    }
}
