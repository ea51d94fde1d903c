import ParleyNet

// A reload (SIGHUP) rereads every source as the start did. What it can change while the relay runs: API keys, the
// TLS certificate and key, limits (rooms, members, joins, queues, HTTP connections, attachments), the log level, TURN
// servers, metrics access, webhooks. What it cannot: the settings that name sockets, threads, directories or the
// node's identity — those are kept as they are and named in the log, to take effect at the next start.
extension RelayConfig {
    /// The configuration as `parley-relay` builds it: defaults, then `file`, then `PARLEY_*` variables, then `flags`
    /// (key, value) in order; the credentials checked (`checkCredentials`). Throws the first problem found.
    public static func build(
        file: String?, environment: [String: String],
        flags: [(String, String)]
    ) throws(ConfigError) -> RelayConfig {
        var config = RelayConfig()
        if let file { try config.load(file: file) }
        try config.load(environment: environment)
        for (key, value) in flags { try config.set(key, value) }
        try config.checkCredentials()
        return config
    }

    /// The settings a reload cannot apply, named as in the config file, each with how it reads.
    static let restartOnly: [(key: String, value: @Sendable (RelayConfig) -> String)] = [
        ("udp", { $0.udp.description }), ("http", { $0.http.description }),
        ("announce", { $0.announce.map(\.description).joined(separator: ",") }),
        ("tcp", { "\($0.tcp)" }),
        ("tcp_max_connections", { "\($0.tcpRules.maxConnections)" }),
        ("tcp_connections_per_address", { "\($0.tcpRules.connectionsPerAddress)" }),
        ("workers", { "\($0.workers)" }), ("state_dir", { $0.stateDir ?? "" }), ("web_root", { $0.webRoot ?? "" }),
        ("cluster", { $0.cluster?.description ?? "" }), ("cluster_tls_ca", { $0.clusterTLSCA ?? "" }),
        ("node_id", { $0.nodeID ?? "" }), ("log_format", { $0.logFormat.rawValue }),
    ]

    /// The restart-only settings `new` changes from `self` (empty: a reload applies all of `new`).
    public func restartOnlyChanges(to new: RelayConfig) -> [String] {
        Self.restartOnly.filter { $0.value(self) != $0.value(new) }.map(\.key)
    }

    /// What a reload to `new` puts in force: `new`, with every restart-only setting kept as in `self`.
    public func reloaded(to new: RelayConfig) -> RelayConfig {
        var next = new
        next.udp = udp
        next.http = http
        next.announce = announce
        next.tcp = tcp
        next.tcpRules = tcpRules
        next.workers = workers
        next.stateDir = stateDir
        next.webRoot = webRoot
        next.clusterAddress = clusterAddress
        next.clusterTLSCA = clusterTLSCA
        next.nodeID = nodeID
        next.logFormat = logFormat
        return next
    }
}
