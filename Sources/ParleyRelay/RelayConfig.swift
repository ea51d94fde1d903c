import Foundation
import ParleyAuth
import ParleyCluster
import ParleyRelayCore
import ParleySIP
import ParleyWebRTC
import ParleyWire

/// Everything `parley-relay` is configured with: defaults, then a JSON file, then `PARLEY_*` environment
/// variables, then command-line flags, each overriding the one before.
public struct RelayConfig: Sendable {
    /// The public UDP address (worker 0's port; workers 1… bind the following ports).
    public var udp = PeerAddress(ipv4: 127, 0, 0, 1, port: 7400)
    /// The HTTP API address, IPv4 or IPv6 (`[::]` serves both).
    public var http = PeerAddress(ipv4: 127, 0, 0, 1, port: 7480)
    /// `announce`: the addresses clients are told to send media to (the public side of a NAT), IPv4 and IPv6; empty:
    /// the bound address, or the host's interface addresses when bound to a wildcard (`MediaAddresses`).
    public var announce: [PeerAddress] = []
    /// `tcp`: whether the relay listens on TCP at the public UDP port's number, for browsers' ICE-TCP and Parley's
    /// client when UDP is blocked (`TCPBridge`).
    public var tcp = true
    /// The TCP port's limits (`tcp_max_connections`, `tcp_connections_per_address`).
    public var tcpRules = TCPBridgeRules()
    /// The HTTP API's TLS certificate and key (PEM file paths, `HTTPTLSFiles`): HTTPS when both are set, plain HTTP
    /// when neither is; one without the other is refused by `checkCredentials()`.
    public var httpTLSCertificate: String?
    /// See `httpTLSCertificate`.
    public var httpTLSKey: String?
    /// Who needs an admin token for `/metrics`: clients not on loopback, unless set otherwise.
    public var metricsRequireAuth = MetricsAuth.remote
    /// Connection limits and timeouts of the HTTP API.
    public var httpLimits = HTTPLimits()
    /// Worker loops; 0 = one per core.
    public var workers = 0
    /// API key → secret.
    public var apiKeys: [String: String] = [DevDefaults.apiKey: DevDefaults.apiSecret]
    /// Log threshold.
    public var logLevel = LogLevel.info
    /// `log_format`: text lines (default) or one JSON object per line.
    public var logFormat = StderrLog.LogFormat.text
    /// `stop_grace_s`: on SIGTERM, the longest the relay waits (refusing joins, `/readyz` failing) for members to move
    /// to other nodes and events to be delivered before it stops; the wait ends early when nothing is left to wait for.
    public var stopGraceSeconds = 10
    /// Core settings (limits, timers, forwarding).
    public var core = RelayCoreConfig()
    /// Where the relay keeps its long-term identity key (`RelayKeyFile`); nil = the default,
    /// `RelayKeyFile.defaultStateDirectory` (`$XDG_STATE_HOME/parley-relay`, `~/.local/state/parley-relay`, or
    /// `/var/lib/parley-relay` for root).
    public var stateDir: String?
    /// The directory whose files the HTTP address serves at `/` (the sample web client); nil = `Samples/web` when it
    /// exists in the working directory (as under `make run`), else no pages.
    public var webRoot: String?
    /// `cluster`: the Redis the relay registers with as one node of a cluster (`redis://HOST:PORT`, with a password
    /// `redis://[USER]:PASSWORD@HOST:PORT`, over TLS `rediss://…`), with `cluster_tls_ca`; nil: alone.
    public var cluster: ClusterURL? {
        clusterAddress.map { var url = $0; url.caFile = clusterTLSCA; return url }
    }
    /// `cluster` as given.
    var clusterAddress: ClusterURL?
    /// `cluster_tls_ca`: the PEM file of the CAs that may sign the certificate of a `rediss://` cluster's Redis
    /// (nil: the system's CAs).
    public var clusterTLSCA: String?
    /// `node_id`: this node's id in the cluster (default: random at each start).
    public var nodeID: String?
    /// `attachment_max_bytes`: the largest image `POST /v1/attachments` takes; 0 takes none (attachments already kept
    /// stay readable).
    public var attachmentMaxBytes = RelayConfig.defaultAttachmentMaxBytes
    /// `attachment_quota_bytes`, `attachment_quota_files`, `attachment_uploads_per_minute`,
    /// `attachment_upload_bytes_per_minute`, `attachment_expiry_days`, `attachment_reserve_bytes`.
    public var attachmentQuota = AttachmentQuota()
    /// 8 MiB.
    public static let defaultAttachmentMaxBytes = 8 * 1024 * 1024
    /// The largest `attachment_max_bytes` allowed: the HTTP server holds at most `HTTPLimits.attachmentUploads` +
    /// `attachmentDownloads` attachments in memory at once, so this bounds what they may pin (12 × 64 MiB).
    public static let attachmentMaxBytesLimit = 64 * 1024 * 1024

    /// `turn_urls`, `turn_secret` (or `turn_secret_file`), `turn_ttl_s`: the STUN and TURN servers WebRTC members are
    /// handed (`GET /v1/ice-servers`, `Link` headers on WHIP and WHEP answers), TURN ones with time-limited
    /// credentials from the secret shared with the TURN server. Empty by default: members use their host candidates.
    public var iceServers: ICEServers {
        ICEServers(urls: turnURLs, secret: turnSecret, lifetime: turnTTL)
    }
    /// `turn_urls` as parsed.
    public private(set) var turnURLs: [ICEServerURL] = []
    /// `turn_ttl_s`.
    public private(set) var turnTTL = ICEServers.defaultLifetime
    /// `turn_secret`, or the contents of `turn_secret_file`: never shown, never in an error.
    private var turnSecret: String?
    /// The shortest `turn_secret` taken (as `api_secret`).
    public static let minTURNSecretBytes = 16

    /// `dev`: run with the public dev credentials although `udp` or `http` is not on loopback (`--dev`). Without it
    /// such a relay refuses to start (`checkCredentials()`).
    public var dev = false
    /// `webhooks`, `webhook` + `webhook_secret`, `webhook_retry_s`, `webhook_timeout_s`, `webhook_outbox_max`.
    public var webhooks = WebhookSettings()
    /// `sip`: where the SIP gateway listens (UDP); nil: no gateway.
    public var sip: PeerAddress?
    /// `sip_trunks` (a list; `--sip-trunk` adds one): who may call in (`SIPTrunk`).
    public var sipTrunks: [SIPTrunk] = []

    /// `api_key` and `api_secret` as given (file, environment or flags), applied together by `checkCredentials()`.
    private var givenKey: String?
    private var givenSecret: String?

    /// Dev defaults.
    public init() {}

    /// True when the public dev credentials are in use.
    public var usesDevCredentials: Bool { apiKeys[DevDefaults.apiKey] == DevDefaults.apiSecret }

    /// The worker count in force (`workers`, or the number of cores).
    public var effectiveWorkers: Int {
        workers > 0 ? workers : max(1, ProcessInfo.processInfo.activeProcessorCount)
    }

    /// The keys a JSON config file and `PARLEY_*` variables may set (variables are the upper-case names).
    public static let keys = ["udp", "http", "announce", "tcp", "tcp_max_connections", "tcp_connections_per_address",
        "workers", "api_key", "api_secret", "api_keys_file", "log_level", "log_format", "stop_grace_s", "state_dir",
        "max_members_per_room",
                              "max_rooms", "max_rooms_per_identity", "empty_room_timeout_s", "member_timeout_s", "keepalive_interval_s",
                              "max_forwarded_speakers", "speaker_update_interval_ms", "speaker_level_update_interval_ms", "speech_level_threshold",
                              "member_update_interval_ms", "member_update_immediate_limit", "audience_update_interval_ms", "spread_threshold", "cascade_after",
                              "audio_level_extension_id", "default_room_mode", "joins_per_second", "ring_timeout_s", "presence_sessions_per_identity",
                              "mix_complexity", "mix_bitrate", "mix_expected_loss_percent", "mix_pass_through", "mix_nack", "mix_forward_lone_speaker", "metrics_require_auth",
                              "signalling_queue_limit", "text_queue_limit", "nack_budget_percent", "nack_burst_bytes",
                              "uplink_repair", "uplink_repair_window_ms",
                              "http_max_connections", "http_connections_per_address", "http_idle_timeout_s",
                              "http_header_timeout_s", "event_stream_stall_timeout_s", "event_streams_per_identity", "event_streams_max", "allow_cleartext", "http_tls_cert", "http_tls_key", "web_root",
                              "cluster", "cluster_tls_ca", "node_id", "attachment_max_bytes", "attachment_quota_bytes", "attachment_quota_files",
                              "attachment_uploads_per_minute", "attachment_upload_bytes_per_minute", "attachment_expiry_days",
                              "attachment_reserve_bytes", "turn_urls", "turn_secret", "turn_secret_file", "turn_ttl_s",
                              "dev", "sip", "sip_trunks"] + webhookKeys

    /// Applies one key's value; throws a message naming the key on a bad value.
    public mutating func set(_ key: String, _ value: String) throws(ConfigError) {
        func int(_ range: ClosedRange<Int>) throws(ConfigError) -> Int {
            guard let v = Int(value), range.contains(v) else { throw ConfigError("\(key) must be an integer in \(range.lowerBound)...\(range.upperBound), got \"\(value)\"") }
            return v
        }
        switch key {
        case "udp":
            guard let a = PeerAddress(parsing: value) else { throw ConfigError("udp must be HOST:PORT (e.g. 127.0.0.1:7400), got \"\(value)\"") }
            udp = a
        case "http":
            guard let a = PeerAddress(parsing: value) else { throw ConfigError("http must be HOST:PORT (e.g. 127.0.0.1:7480), got \"\(value)\"") }
            http = a
        case "announce":  // "" = none
            guard let list = MediaAddresses.parseAnnounced(value) else {
                throw ConfigError("announce must be IP addresses separated by commas (e.g. 198.51.100.10,2001:db8::10), got \"\(value)\"")
            }
            announce = list
        case "tcp":
            let choices = ["true": true, "1": true, "false": false, "0": false]
            guard let on = choices[value] else { throw ConfigError("tcp must be true or false, got \"\(value)\"") }
            tcp = on
        case "tcp_max_connections": tcpRules.maxConnections = try int(1...1_000_000)
        case "tcp_connections_per_address": tcpRules.connectionsPerAddress = try int(1...10_000)
        case "http_tls_cert", "http_tls_key":  // "" = not set (plain HTTP)
            guard !value.utf8.contains(0) else { throw ConfigError("\(key) must be a file path, got \"\(value)\"") }
            if key == "http_tls_cert" { httpTLSCertificate = value.isEmpty ? nil : value } else { httpTLSKey = value.isEmpty ? nil : value }
        case "cluster":  // "" = alone
            if value.isEmpty { clusterAddress = nil; break }
            guard let url = ClusterURL(value) else {
                // Never echoed when it may hold a password.
                throw ConfigError("cluster must be redis://[[USER]:PASSWORD@]HOST[:PORT] or rediss://… (TLS), got "
                                  + (value.contains("@") ? "a value that is not (not shown: it may hold a password)" : "\"\(value)\""))
            }
            clusterAddress = url
        case "cluster_tls_ca":  // "" = the system's CAs
            guard !value.utf8.contains(0) else { throw ConfigError("cluster_tls_ca must be a file path, got \"\(value)\"") }
            clusterTLSCA = value.isEmpty ? nil : value
        case "node_id":  // "" = random at each start
            if value.isEmpty { nodeID = nil; break }
            guard value.utf8.count <= 64, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
                throw ConfigError("node_id must be 1–64 letters, digits, - or _, got \"\(value)\"")
            }
            nodeID = value
        case "web_root":  // "" = serve no pages
            guard !value.utf8.contains(0) else { throw ConfigError("web_root must be a directory path, got \"\(value)\"") }
            webRoot = value
        case "workers": workers = try int(0...256)
        case "sip":  // "" = no gateway
            if value.isEmpty { sip = nil; core.sipCallees = false; break }
            guard let a = PeerAddress(parsing: value), a.port != 0 else {
                throw ConfigError("sip must be HOST:PORT (e.g. 127.0.0.1:5060), got \"\(value)\"")
            }
            sip = a
            core.sipCallees = true
        case "sip_trunks":  // the list, whitespace between trunks (a file's array passes each as sip_trunk); "" = none
            sipTrunks = []
            for trunk in value.split(whereSeparator: \.isWhitespace) { try set("sip_trunk", String(trunk)) }
        case "sip_trunk":  // one more trunk (--sip-trunk, repeated)
            switch SIPTrunk.parse(value) {
            case .success(let trunk):
                guard !sipTrunks.contains(where: { $0.name == trunk.name }) else {
                    throw ConfigError("sip_trunk: trunk \(trunk.name) is named twice")
                }
                sipTrunks.append(trunk)
            case .failure(let error): throw ConfigError("sip_trunk: \(error.description)")
            }
        case "turn_urls":  // comma-separated; "" = none
            var urls: [ICEServerURL] = []
            if !value.allSatisfy(\.isWhitespace) {
                for item in value.split(separator: ",", omittingEmptySubsequences: false) {
                    let text = item.trimmingCharacters(in: .whitespaces)
                    guard !text.isEmpty else {
                        throw ConfigError("turn_urls: an empty URL between commas in \"\(value)\"")
                    }
                    do throws(WebRTCError) {
                        urls.append(try ICEServerURL(parsing: text))
                    } catch {
                        throw ConfigError("turn_urls: \(error.reason)")
                    }
                }
            }
            turnURLs = urls
        case "api_keys_file": if !value.isEmpty { apiKeys = try Self.apiKeys(file: value) }  // "" = none
        case "turn_secret":  // "" = none; never echoed
            if value.isEmpty { turnSecret = nil; break }
            turnSecret = try Self.turnSecret(value, from: "turn_secret")
        case "turn_secret_file":  // "" = none
            if value.isEmpty { turnSecret = nil; break }
            guard !value.utf8.contains(0), let data = FileManager.default.contents(atPath: value) else {
                throw ConfigError("turn_secret_file: cannot read \(value)")
            }
            // One line: a trailing newline (as `echo` or an editor leaves it) is not part of the secret.
            var text = String(decoding: data, as: UTF8.self)
            while let last = text.unicodeScalars.last, last == "\n" || last == "\r" { text.unicodeScalars.removeLast() }
            turnSecret = try Self.turnSecret(text, from: "turn_secret_file \(value)")
        case "turn_ttl_s":
            turnTTL = Int64(try int(Int(ICEServers.lifetimes.lowerBound)...Int(ICEServers.lifetimes.upperBound)))
        case "attachment_max_bytes": attachmentMaxBytes = try int(0...Self.attachmentMaxBytesLimit)
        case "attachment_quota_bytes": attachmentQuota.bytesPerIdentity = try int(0...(1 << 40))
        case "attachment_quota_files": attachmentQuota.filesPerIdentity = try int(0...10_000_000)
        case "attachment_uploads_per_minute": attachmentQuota.uploadsPerMinute = try int(1...100_000)
        case "attachment_upload_bytes_per_minute": attachmentQuota.bytesPerMinute = try int(1...(1 << 40))
        case "attachment_expiry_days": attachmentQuota.expiryDays = try int(0...36_500)
        case "attachment_reserve_bytes": attachmentQuota.reserveBytes = Int64(try int(0...(1 << 50)))
        case "state_dir":
            guard !value.isEmpty, !value.utf8.contains(0) else { throw ConfigError("state_dir must be a directory path, got \"\(value)\"") }
            stateDir = value
        case "api_key":
            guard !value.isEmpty else { throw ConfigError("api_key must not be empty") }
            givenKey = value
            if let givenSecret { apiKeys = [value: givenSecret] }
        case "api_secret":
            guard value.utf8.count >= 16 else { throw ConfigError("api_secret must be at least 16 bytes") }
            givenSecret = value
            if let givenKey { apiKeys = [givenKey: value] }
        case "log_level":
            guard let l = LogLevel(name: value) else { throw ConfigError("log_level must be debug, info, warning or error, got \"\(value)\"") }
            logLevel = l
        case "log_format":
            guard let f = StderrLog.LogFormat(rawValue: value) else {
                throw ConfigError("log_format must be text or json, got \"\(value)\"")
            }
            logFormat = f
        case "stop_grace_s": stopGraceSeconds = try int(0...3600)
        case "max_members_per_room": core.maxMembersPerRoom = try int(1...100_000)
        case "max_rooms": core.maxRooms = try int(1...10_000_000)
        case "max_rooms_per_identity": core.maxRoomsPerIdentity = try int(1...10_000_000)
        case "empty_room_timeout_s": core.emptyRoomTimeout = .seconds(Int64(try int(0...86_400)))
        case "member_timeout_s": core.memberTimeout = .seconds(Int64(try int(1...3600)))
        case "keepalive_interval_s": core.keepaliveInterval = .seconds(Int64(try int(1...600)))
        case "max_forwarded_speakers": core.maxForwardedSpeakers = try int(1...64)
        case "speaker_update_interval_ms": core.speakerUpdateInterval = .milliseconds(Int64(try int(20...10_000)))
        case "speaker_level_update_interval_ms": core.speakerLevelUpdateInterval = .milliseconds(Int64(try int(20...60_000)))
        case "spread_threshold": core.spreadThreshold = try int(0...1_000_000)
        case "cascade_after": core.cascadeAfter = try int(0...1_000_000)
        case "member_update_interval_ms": core.memberUpdateInterval = .milliseconds(Int64(try int(0...10_000)))
        case "member_update_immediate_limit": core.memberUpdateImmediateLimit = try int(0...100_000)
        case "audience_update_interval_ms": core.audienceUpdateInterval = .milliseconds(Int64(try int(100...60_000)))
        case "speech_level_threshold": core.speechLevelThreshold = UInt8(try int(0...127))
        case "audio_level_extension_id": core.audioLevelExtensionID = UInt8(try int(1...14))
        case "default_room_mode":
            guard let mode = RoomMode(rawValue: value) else {
                throw ConfigError("default_room_mode must be \(RoomMode.choices), got \"\(value)\"")
            }
            core.defaultRoomMode = mode
        case "joins_per_second": core.joinsPerSecond = Double(try int(1...1_000_000))
        case "ring_timeout_s": core.ringTimeout = .seconds(Int64(try int(1...600)))
        case "presence_sessions_per_identity": core.maxPresenceSessionsPerIdentity = try int(1...1_000)
        case "mix_complexity": core.mixComplexity = try int(0...10)
        case "mix_bitrate": core.mixBitrate = try int(6_000...510_000)
        case "mix_expected_loss_percent": core.mixExpectedLossPercent = try int(0...100)
        case "mix_pass_through":
            let choices = ["true": true, "1": true, "false": false, "0": false]
            guard let on = choices[value] else { throw ConfigError("mix_pass_through must be true or false, got \"\(value)\"") }
            core.mixPassThrough = on
        case "mix_nack":
            let choices = ["true": true, "1": true, "false": false, "0": false]
            guard let on = choices[value] else { throw ConfigError("mix_nack must be true or false, got \"\(value)\"") }
            core.mixNack = on
        case "mix_forward_lone_speaker":
            let choices = ["true": true, "1": true, "false": false, "0": false]
            guard let on = choices[value] else { throw ConfigError("mix_forward_lone_speaker must be true or false, got \"\(value)\"") }
            core.mixForwardLoneSpeaker = on
        case "signalling_queue_limit": core.signallingQueueLimit = try int(64...1_000_000)
        case "text_queue_limit": core.textQueueLimit = try int(5...1_000_000)
        case "nack_budget_percent": core.nackBudgetPercent = try int(0...100)
        case "nack_burst_bytes": core.nackBurstBytes = try int(0...1_000_000)
        case "uplink_repair":
            let choices = ["true": true, "1": true, "false": false, "0": false]
            guard let on = choices[value] else { throw ConfigError("uplink_repair must be true or false, got \"\(value)\"") }
            core.uplinkRepair = on
        case "uplink_repair_window_ms": core.uplinkRepairWindow = .milliseconds(Int64(try int(20...1_000)))
        case "metrics_require_auth":
            let choices: [String: MetricsAuth] = ["true": .always, "1": .always, "remote": .remote, "false": .never, "0": .never]
            guard let a = choices[value] else { throw ConfigError("metrics_require_auth must be true, remote or false, got \"\(value)\"") }
            metricsRequireAuth = a
        case "http_max_connections": httpLimits.maxConnections = try int(1...65_536)
        case "http_connections_per_address": httpLimits.connectionsPerAddress = try int(1...65_536)
        case "http_idle_timeout_s": httpLimits.idleTimeoutSeconds = try int(1...3600)
        case "http_header_timeout_s": httpLimits.headerTimeoutSeconds = try int(1...3600)
        case "event_stream_stall_timeout_s": httpLimits.eventStreamStallSeconds = try int(1...3600)
        case "event_streams_per_identity": httpLimits.eventStreamsPerIdentity = try int(1...1_000)
        case "event_streams_max": httpLimits.eventStreamsMax = try int(1...65_536)
        case "dev":
            let choices = ["true": true, "1": true, "false": false, "0": false]
            guard let on = choices[value] else { throw ConfigError("dev must be true or false, got \"\(value)\"") }
            dev = on
        case "allow_cleartext":
            let choices = ["true": true, "1": true, "false": false, "0": false]
            guard let allowed = choices[value] else { throw ConfigError("allow_cleartext must be true or false, got \"\(value)\"") }
            core.allowCleartext = allowed
        case _ where Self.webhookKeys.contains(key): try setWebhook(key, value)
        default: throw ConfigError("unknown setting \"\(key)\" (known: \((Self.keys + ["api_keys"]).joined(separator: ", ")))")
        }
    }

    /// A TURN secret as taken, or an error that names `source` and never the secret.
    private static func turnSecret(_ value: String, from source: String) throws(ConfigError) -> String {
        guard value.utf8.count >= minTURNSecretBytes else {
            throw ConfigError("\(source) must be at least \(minTURNSecretBytes) bytes (the value is not shown)")
        }
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw ConfigError("\(source) must hold no control characters or line breaks (the value is not shown)")
        }
        return value
    }

    /// Checks that `api_key` and `api_secret` came as a pair: a key without its secret (or a secret without its key)
    /// would otherwise leave the public dev secret signing for a key the operator meant to be private. Call it once
    /// every source has been applied; the dev credentials stay only when no key at all was configured. The same for
    /// `http_tls_cert` and `http_tls_key`: half a pair would otherwise serve plain HTTP where HTTPS was meant. And the
    /// dev credentials only on loopback, or with `dev` (`checkDevCredentials`); TURN URLs with their secret
    /// (`checkTURN`).
    public func checkCredentials() throws(ConfigError) {
        switch (httpTLSCertificate, httpTLSKey) {
        case (.some(let certificate), nil):
            throw ConfigError("http_tls_cert \(certificate) is set without http_tls_key: set both (--http-tls-cert FILE --http-tls-key FILE, PARLEY_HTTP_TLS_CERT/PARLEY_HTTP_TLS_KEY or the config file) for HTTPS, or neither for plain HTTP")
        case (nil, .some(let key)):
            throw ConfigError("http_tls_key \(key) is set without http_tls_cert: set both (--http-tls-cert FILE --http-tls-key FILE, PARLEY_HTTP_TLS_CERT/PARLEY_HTTP_TLS_KEY or the config file) for HTTPS, or neither for plain HTTP")
        default: break
        }
        switch (givenKey, givenSecret) {
        case (.some(let key), nil):
            throw ConfigError("api_key \"\(key)\" is set without api_secret: set both (--api-key K --api-secret S, PARLEY_API_KEY/PARLEY_API_SECRET or the config file), or neither for the dev credentials")
        case (nil, .some):
            throw ConfigError("api_secret is set without api_key: set both (--api-key K --api-secret S, PARLEY_API_KEY/PARLEY_API_SECRET or the config file), or neither for the dev credentials")
        default: break
        }
        try checkDevCredentials()
        try checkTURN()
        try checkWebhooks()
    }

    /// TURN URLs need the secret their credentials come from, and a secret needs a TURN URL to be of use: either
    /// alone is a mistake, said at start rather than found by a browser that cannot connect.
    func checkTURN() throws(ConfigError) {
        let turn = turnURLs.filter(\.scheme.isTURN)
        if !turn.isEmpty && turnSecret == nil {
            throw ConfigError("turn_urls names \(turn.map(\.text).joined(separator: ", ")) but no turn_secret is set: "
                              + "set the secret the TURN server checks (coturn's static-auth-secret) with "
                              + "turn_secret_file (--turn-secret-file FILE), PARLEY_TURN_SECRET or turn_secret in the "
                              + "config file")
        }
        if turn.isEmpty && turnSecret != nil {
            throw ConfigError("a turn_secret is set but turn_urls names no turn: or turns: URL: add the TURN server's "
                              + "URLs (--turn turn:HOST:3478?transport=udp,…) or drop the secret")
        }
    }

    /// The public dev credentials sign for anyone who reads the README (admin tokens, `POST /v1/dev-token`): they
    /// are refused unless nobody but this host can reach the relay — `udp` and `http` both on loopback — or `dev`
    /// says so explicitly.
    func checkDevCredentials() throws(ConfigError) {
        guard usesDevCredentials, !dev, !(udp.isLoopback && http.isLoopback) else { return }
        let exposed = [udp.isLoopback ? nil : "udp \(udp)", http.isLoopback ? nil : "http \(http)"].compactMap { $0 }
        throw ConfigError("no api_key and api_secret are configured, so the relay would run with the public dev credentials (anyone can mint admin tokens with them), but \(exposed.joined(separator: " and ")) \(exposed.count > 1 ? "are" : "is") not loopback: set api_key and api_secret (--api-key K --api-secret S, PARLEY_API_KEY/PARLEY_API_SECRET or the config file), bind udp and http to 127.0.0.1, or pass --dev (config dev: true) to run with the dev credentials there anyway")
    }

    /// The HTTP API's certificate and key, read and checked (`HTTPTLSFiles.read`); nil for plain HTTP (neither set).
    /// Call it after `checkCredentials()`.
    public func readHTTPTLSFiles() throws(ConfigError) -> HTTPTLSFiles? {
        guard let httpTLSCertificate, let httpTLSKey else { return nil }
        return try HTTPTLSFiles.read(certificate: httpTLSCertificate, key: httpTLSKey)
    }
}

/// A configuration problem, said in one line.
public struct ConfigError: Error, CustomStringConvertible, Sendable {
    /// The message.
    public var description: String
    /// An error with a message.
    public init(_ description: String) { self.description = description }
}
