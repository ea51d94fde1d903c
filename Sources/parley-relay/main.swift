// parley-relay: the Parley media relay. Parses flags, builds the configuration, runs the server.
import Foundation
import ParleyHTTP
import ParleyNet
import ParleyRelay
import ParleyAuth
import ParleyRelayCore

let usage = """
usage: parley-relay [--config FILE.json] [--udp HOST:PORT] [--http HOST:PORT] [--workers N]
                    [--api-key K --api-secret S] [--log-level debug|info|warning|error]

With no arguments the relay runs with dev defaults: UDP 127.0.0.1:7400, API key "devkey" and a public
dev secret. Every setting may also come from a PARLEY_* variable (PARLEY_UDP, PARLEY_WORKERS, ...).
Precedence: defaults < --config file < environment < flags.
"""

func fail(_ message: String) -> Never {
    writeLine("parley-relay: \(message)", fd: 2)
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var flags: [(String, String)] = []
var configFile: String?
while !arguments.isEmpty {
    let flag = arguments.removeFirst()
    if flag == "-h" || flag == "--help" {
        writeLine(usage)
        exit(0)
    }
    let known = ["--config", "--udp", "--http", "--workers", "--api-key", "--api-secret", "--log-level"]
    guard known.contains(flag) else { fail("unknown option \(flag)\n\(usage)") }
    guard let value = arguments.first, !value.hasPrefix("--") else { fail("\(flag) needs a value") }
    arguments.removeFirst()
    if flag == "--config" { configFile = value } else { flags.append((String(flag.dropFirst(2)).replacingOccurrences(of: "-", with: "_"), value)) }
}

var config = RelayConfig()
do {
    if let configFile { try config.load(file: configFile) }
    try config.load(environment: ProcessInfo.processInfo.environment)
    for (key, value) in flags { try config.set(key, value) }
} catch {
    fail(error.description)
}

let log = StderrLog(threshold: config.logLevel)
let server: RelayServer
do {
    server = try RelayServer(config: config, log: log)
} catch {
    fail(error.description)
}

let httpStats = HTTPStats()
let router = HTTPRouter(backend: server.api, verifier: TokenVerifier(keys: config.apiKeys), signer: server.api.signer,
                        config: config.core, metricsRequireAuth: config.metricsRequireAuth, httpStats: httpStats)
let http: HTTPServer
do {
    http = try HTTPServer(address: config.http, router: router, events: server.api.events, limits: config.httpLimits,
                          stats: httpStats, log: log)
} catch {
    fail(error.description)
}

let status = server.run {
    let host = config.udp.description.split(separator: ":").dropLast().joined(separator: ":")
    let publicAddress = "\(host):\(server.ports[0])"
    if config.usesDevCredentials {
        log.write(.warning, "using the public dev credentials: api key \"devkey\", api secret \"\(config.apiKeys["devkey"] ?? "")\" — set your own for anything but development")
    }
    let ports = server.ports.map(String.init).joined(separator: ",")
    let httpHost = config.http.description.split(separator: ":").dropLast().joined(separator: ":")
    writeLine("parley-relay ready on udp \(publicAddress) (\(server.ports.count) workers on ports \(ports)), http \(httpHost):\(http.port); join with: parley join ROOM --identity NAME --server \(publicAddress)")
}
http.stop()
exit(status)
