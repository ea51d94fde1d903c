// parley-relay: the Parley media relay. Parses flags, builds the configuration, runs the server.
import Foundation
import ParleyHTTP
import ParleyNet
import ParleyRelay
import ParleyAuth
import ParleyCluster
import ParleyRelayCore
import ParleySIP
import Synchronization
import ParleyWire

let usage = """
usage: parley-relay [drain] [--config FILE.json] [--udp HOST:PORT] [--http HOST:PORT] [--announce IP[,IP…]] [--workers N]
                    [--api-key K --api-secret S] [--http-tls-cert FILE --http-tls-key FILE] [--state-dir DIR]
                    [--web-root DIR] [--cluster redis[s]://[[USER]:PASSWORD@]HOST:PORT [--cluster-tls-ca FILE] [--node-id ID]]
                    [--turn URL[,URL…] --turn-secret-file FILE] [--webhook URL --webhook-secret whsec_… …]
                    [--sip HOST:PORT --sip-trunk NAME=CIDR[;CIDR…][,outbound=HOST:PORT][,user=U,password=P] …]
                    [--log-level debug|info|warning|error] [--log-format text|json]
                    [--allow-cleartext] [--dev] [--version]

With no arguments the relay runs with dev defaults: UDP 127.0.0.1:7400, HTTP API and /metrics on
127.0.0.1:7480, one worker per core, API key "devkey" and a public dev secret. --api-key and --api-secret go
together (a key without its secret is refused); the dev credentials are used only when no key is configured, and
only on loopback: with no key and --udp or --http elsewhere the relay refuses to start (exit 2) unless --dev says so.
--http-tls-cert and --http-tls-key (PEM files, both or neither) make the API serve HTTPS; the ready line then says
"https HOST:PORT". Without them the API is plain HTTP: keep it on loopback or behind a TLS proxy.
HOST may be IPv6 in brackets ('[::]:7400' serves IPv6 and IPv4). --announce names the addresses clients are told
to send media to (the public side of a 1:1 NAT; IPv4 and IPv6): WebRTC candidates, RTP endpoint answers, the
cluster. Without it: the bound address, or bound to a wildcard the host's own addresses.
The relay's long-term key (X25519, its public half in the ready line and at GET /v1/relay) is made on first start
in --state-dir (default $XDG_STATE_HOME/parley-relay, else ~/.local/state/parley-relay; /var/lib/parley-relay for root).
The HTTP address also serves the sample web client from --web-root (default Samples/web when it exists here), and
keeps image attachments (POST /v1/attachments, up to attachment_max_bytes) in the state directory's attachments/.
--cluster makes the relay one node of a cluster: it registers with that Redis (heartbeat and load, every second) and
GET /v1/cluster lists the live nodes. Without it the relay runs alone and needs no Redis. A password in the URL is
sent with AUTH (give it through PARLEY_CLUSTER or the config file: a flag shows in ps); rediss:// speaks TLS, the
server's certificate checked against the system's CAs or --cluster-tls-ca FILE.
--turn names the STUN and TURN servers WebRTC members are handed (stun:HOST[:PORT],
turn:HOST[:PORT][?transport=udp|tcp], turns:…), at GET /v1/ice-servers and in Link headers on WHIP/WHEP answers;
TURN ones with credentials that last turn_ttl_s (default 3600 s), signed with the secret the TURN server shares
(coturn's use-auth-secret and static-auth-secret): read it from --turn-secret-file FILE or PARLEY_TURN_SECRET
(--turn-secret S shows in ps).
--webhook URL --webhook-secret whsec_… (repeated for several receivers; webhooks in the config file) POSTs
room.started, room.finished, member.joined, member.left, recording.finished, call.ringing, call.answered,
call.missed and text.held to URL, signed as Standard Webhooks are (webhook-id, webhook-timestamp,
webhook-signature). Each event is stored in the state directory's webhooks.db first and retried with backoff for
webhook_retry_s (default 86400 s), with the same id. docs/webhooks.md says more.
--sip HOST:PORT runs the SIP gateway there (UDP): a phone or trunk calling sip:room-NAME@HOST joins room NAME
(G.711 to the phone, Opus in the room). Calls are let in only from a --sip-trunk's address blocks (repeat the flag
for several; sip_trunks in the config file); any other INVITE is answered 403 and logged. docs/sip.md says more.
`parley-relay drain` (with the running node's settings) asks that node to drain before a restart: it takes no new
joins and its members move to other nodes of the cluster.
--log-format json writes one JSON object per line (time, level, msg, node, and room, identity, member where a line is
about one) for journald, Loki and friends; text is the default.
SIGHUP rereads the settings (the --config file, PARLEY_* variables, the same flags): API keys, the TLS certificate and
key, limits, the log level, TURN servers, webhooks change with every session staying up; a file that does not parse or
check out is refused with the reason logged and the running settings kept. udp, http, workers, state_dir, cluster and
the other settings that name sockets or directories change only at the next start (the log names any that differ).
SIGTERM drains before stopping: joins are refused and /readyz answers 503 from its first moment (/healthz stays 200),
in a cluster members move to other nodes, then every member is told, recordings are closed and events waiting to be
delivered get up to stop_grace_s (default 10 s). SIGINT stops without waiting.
Every setting may also come from a PARLEY_* variable (PARLEY_UDP, PARLEY_WORKERS, PARLEY_API_KEY, ...) or a
JSON --config file: Samples/parley-relay.json lists every setting, and the Configuration table of
docs/operator-guide.md says what each means. Precedence: defaults < --config file < environment < flags.
Exit: 0 stopped by SIGINT/SIGTERM, 1 cannot start (an address in use, no permission), 2 usage or configuration error.
"""

func fail(_ message: String, code: Int32 = 2) -> Never {
    writeLine("parley-relay: \(message)", fd: 2)
    exit(code)
}

var arguments = Array(CommandLine.arguments.dropFirst())
let draining = arguments.first == "drain"
if draining { arguments.removeFirst() }
var flags: [(String, String)] = []
var configFile: String?
/// --webhook URL --webhook-secret S pairs, in order: one `webhooks` value once every flag is read.
var webhookFlags: [[String: String]] = []
while !arguments.isEmpty {
    let flag = arguments.removeFirst()
    if flag == "-h" || flag == "--help" {
        writeLine(usage)
        exit(0)
    }
    if flag == "--version" {
        writeLine("parley-relay \(ParleyVersion.string)")
        exit(0)
    }
    if flag == "--allow-cleartext" {  // a switch: the debugging protocol without encryption
        flags.append(("allow_cleartext", "true"))
        continue
    }
    if flag == "--dev" {  // a switch: the public dev credentials even off loopback
        flags.append(("dev", "true"))
        continue
    }
    if flag == "--webhook" || flag == "--webhook-secret" {
        guard let value = arguments.first, !value.hasPrefix("--") else { fail("\(flag) needs a value") }
        arguments.removeFirst()
        if flag == "--webhook" { webhookFlags.append(["url": value]); continue }
        guard !webhookFlags.isEmpty, webhookFlags[webhookFlags.count - 1]["secret"] == nil else {
            fail("--webhook-secret must follow its --webhook URL")
        }
        webhookFlags[webhookFlags.count - 1]["secret"] = value
        continue
    }
    let known = ["--config", "--udp", "--http", "--announce", "--workers", "--api-key", "--api-secret", "--log-level",
                 "--log-format", "--state-dir",
                 "--http-tls-cert", "--http-tls-key", "--web-root", "--cluster", "--cluster-tls-ca", "--node-id",
                 "--turn", "--turn-secret", "--turn-secret-file", "--sip", "--sip-trunk"]
    guard known.contains(flag) else { fail("unknown option \(flag)\n\(usage)") }
    guard let value = arguments.first, !value.hasPrefix("--") else { fail("\(flag) needs a value") }
    arguments.removeFirst()
    // Each flag sets the key of its name (--web-root: web_root), but --turn sets turn_urls.
    let key = flag == "--turn" ? "turn_urls" : String(flag.dropFirst(2)).replacingOccurrences(of: "-", with: "_")
    if flag == "--config" { configFile = value } else { flags.append((key, value)) }
}
if let url = webhookFlags.first(where: { $0["secret"] == nil })?["url"] {
    fail("--webhook \(url) has no --webhook-secret whsec_…")
}
if !webhookFlags.isEmpty {
    let list = (try? JSONSerialization.data(withJSONObject: webhookFlags)) ?? Data("[]".utf8)
    flags.append(("webhooks", String(decoding: list, as: UTF8.self)))
}

let config: RelayConfig
do {
    config = try RelayConfig.build(file: configFile, environment: ProcessInfo.processInfo.environment, flags: flags)
} catch {
    fail(error.description)
}
if draining { drainCommand(config: config) }
let httpTLS: HTTPTLSFiles?
do {
    httpTLS = try config.readHTTPTLSFiles()
} catch {
    fail(error.description)
}
if let httpTLS {
    guard HTTPServer.supportsTLS else { fail(HTTPServer.tlsUnsupported.description, code: 1) }  // this machine, not the settings
    do { try HTTPServer.checkTLS(httpTLS) } catch { fail(error.description) }
}

let log = StderrLog(threshold: config.logLevel, format: config.logFormat)
let identity: RelayKeyFile.Loaded
guard let stateDirectory = config.stateDir
        ?? RelayKeyFile.defaultStateDirectory(environment: ProcessInfo.processInfo.environment, userID: geteuid()) else {
    fail("no state directory for the relay key: HOME is not set; set state_dir (--state-dir, PARLEY_STATE_DIR)")
}
do {
    identity = try RelayKeyFile.loadOrCreate(stateDirectory: stateDirectory)
} catch {
    fail(error.description)
}

let server: RelayServer
do {
    server = try RelayServer(config: config, identity: identity.keyPair, stateDirectory: stateDirectory, log: log)
} catch {
    fail(error.description, code: 1)
}
log.addCommonField("node", server.nodeID)  // every JSON line from here on (the server's own from its first)
if identity.created { log.write(.info, "made a new relay key in \(identity.path)") }
for warning in httpTLS?.warnings ?? [] { log.write(.warning, warning) }

let httpStats = HTTPStats()
/// The HTTP port once bound (the cluster agent advertises it).
let httpPort = Atomic<Int>(0)
/// Where other nodes and their clients reach this one: the first announced address (or the bound one, or an
/// interface's when bound to a wildcard).
let advertisedHost = server.media.hosts(for: nil)[0].host
let udpPort = server.ports[0]
let httpHostName = config.http.isWildcard ? advertisedHost : config.http.host
let api = server.api
let nodeID = server.nodeID
let cluster = config.cluster.map { url in
    ClusterAgent(url: url, nodeID: nodeID,
                 address: { ("\(advertisedHost):\(udpPort)", "\(httpHostName):\(httpPort.load(ordering: .relaxed))") },
                 ports: server.ports, boot: api.shared.cluster?.boot ?? 0, relayKey: server.relayKey ?? "",
                 mac: ClusterMAC(root: api.shared.cluster?.root ?? [], purpose: .directory), draining: { api.shared.isDraining },
                 load: {
                     // This node's own members: those of other nodes a room here cascades are theirs.
                     let snapshots = api.snapshots()
                     var rooms: [String: Int] = [:]
                     for s in snapshots { for r in s.rooms { rooms[r.name] = r.members.filter { $0.transport != "cascade" }.count } }
                     return (snapshots.reduce(0) { $0 + $1.presence.count } + rooms.values.reduce(0, +), rooms)
                 },
                 online: { Array(Set(api.snapshots().flatMap { $0.presence.map(\.identity) })) },
                 placement: { rooms, nodes, online in
                     api.shared.placement.update(rooms: rooms, nodes: nodes.map {
                         ClusterNode(id: $0.id, udp: $0.udp, ports: $0.ports, boot: $0.boot, roomMembers: $0.roomMembers, draining: $0.draining,
                                     members: $0.members, relayKey: $0.relayKey)
                     }, selfID: nodeID, online: online)
                 },
                 log: { log.write(.info, $0) })
}
let webRoot = StaticFiles.resolve(config.webRoot)
let attachments = AttachmentFiles(stateDirectory: stateDirectory, log: log, quota: config.attachmentQuota,
                                  largestUpload: config.attachmentMaxBytes)
/// The HTTP API's router for `settings` (at start, and at each reload).
@MainActor func router(_ settings: RelayConfig) -> HTTPRouter {
    let verifier = TokenVerifier(keys: settings.apiKeys, relayKey: server.relayKey)
    return HTTPRouter(backend: server.api, verifier: verifier,
        signer: verifier.keyIDs.first.flatMap { verifier.signer(forKey: $0) },
                      config: settings.core, metricsRequireAuth: settings.metricsRequireAuth, httpStats: httpStats,
                      relayKey: server.relayKey, webRoot: webRoot, devTokens: settings.usesDevCredentials,
                      cluster: cluster,
                      attachments: attachments, attachmentMaxBytes: settings.attachmentMaxBytes,
                      iceServers: settings.iceServers)
}
let http: HTTPServer
do {
    http = try HTTPServer(address: config.http, router: router(config), events: server.api.events,
        limits: config.httpLimits,
                          stats: httpStats, log: log, tls: httpTLS)
} catch {
    fail(error.description, code: 1)
}
httpPort.store(Int(http.port), ordering: .relaxed)
cluster?.start()
/// The SIP gateway (`--sip`), on a thread of its own until the process ends.
var sipGateway: SIPGateway?
if let sip = config.sip {
    let media = sip.isWildcard ? server.media.hosts(for: nil)[0] : sip
    // Devices' digest credentials are keyed by the API secret: they hold across restarts and on every node.
    let credentials = api.signer.map { SIPCredentials(key: $0.derivedKey(purpose: "sip digest credentials")) }
    let gateway = SIPGateway(settings: .init(listen: sip, mediaHost: media, trunks: SIPTrunks(config.sipTrunks),
                                             credentials: credentials),
                             rooms: SIPRooms(api: api, udp: config.udp), log: { log.write(.info, $0) })
    do { try gateway.start() } catch { fail(error.description, code: 1) }
    if config.sipTrunks.isEmpty {
        log.write(.warning, "sip gateway on udp \(sip) with no trunk: only devices registered with credentials from "
                  + "POST /v1/sip/credentials may call; anything else is refused (403); add --sip-trunk")
    } else {
        log.write(.info, "sip gateway on udp \(sip), trunks " + config.sipTrunks.map {
            "\($0.name) (\($0.blocks.map(\.description).joined(separator: ";")))"
        }.joined(separator: ", "))
    }
    sipGateway = gateway
    api.sipGateway.withLock { $0 = gateway }
}
let reloader = ConfigReload(file: configFile, flags: flags, config: config, tls: httpTLS, server: server, http: http,
                            log: log, router: router)
reloader.onApplied.append { settings in server.webhooks?.update(endpoints: settings.webhooks.endpoints) }

let status = server.run(stopGraceSeconds: config.stopGraceSeconds, reload: reloader.reload) {
    // The address clients are told (announced, bound, or an interface's), not a wildcard.
    let publicAddress = "\(advertisedHost):\(server.ports[0])"
    if config.usesDevCredentials {
        let reach = config.udp.isLoopback && config.http.isLoopback ? "on loopback only" : "OFF LOOPBACK (--dev): anyone who can reach it can mint admin tokens"
        log.write(.warning, "using the public dev credentials \(reach): api key \"devkey\", api secret \"\(config.apiKeys["devkey"] ?? "")\" — set your own for anything but development")
    }
    if !config.iceServers.isEmpty {
        // The URLs and the lifetime only: the shared secret is never written anywhere.
        let servers = config.iceServers
        log.write(.info, "WebRTC members are handed \(servers.urls.map(\.text).joined(separator: ", "))"
                  + (servers.turnURLs.isEmpty ? "" : ", TURN credentials valid \(servers.lifetime) s"))
    }
    if config.core.allowCleartext {
        log.write(.warning, "allow_cleartext is on: clients may join with the cleartext protocol (tokens, names, texts and voice readable on the path) — for debugging only")
    }
    let ports = server.ports.map(String.init).joined(separator: ",")
    let workers = server.ports.count == 1 ? "1 worker on port" : "\(server.ports.count) workers on ports"
    let httpHost = config.http.host
    // The page's address as a browser on this machine opens it (a wildcard address is not one to open).
    let pageHost = config.http.isWildcard ? "127.0.0.1" : httpHost
    let page = webRoot == nil ? "" : "; web page: \(http.scheme)://\(pageHost):\(http.port)/"
    writeLine("parley-relay \(ParleyVersion.string) ready on udp \(publicAddress) (\(workers) \(ports)), "
              + "relay key \(server.relayKey ?? "none"), \(http.scheme) \(httpHost):\(http.port)\(page); "
              + "join with: parley join ROOM --identity NAME --server \(publicAddress)")
}
cluster?.stop()  // leaves the directory at once
reloader.http.stop()
exit(status)
