import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore

/// SIGHUP: rereads the settings from the same sources as the start (the `--config` file, `PARLEY_*` variables, the
/// same flags) and puts in force what can change while the relay runs — API keys (the workers' verifier and the
/// API's), core limits (each worker's copy), the log level, the HTTP API's router (keys, TURN servers, metrics
/// access, attachment limits) and, when the certificate, key or connection limits changed, a new HTTP daemon on the
/// same socket. Settings that would fail at start fail here: the reload is refused and logged, nothing changes.
/// Runs on the main thread, between signals (`RelayServer.run`).
@MainActor
final class ConfigReload {
    private let file: String?
    private let flags: [(String, String)]
    /// The settings in force.
    private(set) var config: RelayConfig
    /// The certificate and key being served (nil: plain HTTP).
    private var tls: (certificate: [UInt8], key: [UInt8])?
    private let server: RelayServer
    /// The HTTP server serving now (a reload may have replaced the one started first).
    private(set) var http: HTTPServer
    private let log: StderrLog
    private let router: @MainActor (RelayConfig) -> HTTPRouter
    /// Called with the settings in force after each reload that was applied (webhooks).
    var onApplied: [(RelayConfig) -> Void] = []

    init(
        file: String?, flags: [(String, String)], config: RelayConfig, tls: HTTPTLSFiles?, server: RelayServer,
        http: HTTPServer, log: StderrLog, router: @escaping @MainActor (RelayConfig) -> HTTPRouter
    ) {
        self.file = file
        self.flags = flags
        self.config = config
        self.tls = tls.map { ($0.certificatePEM, $0.keyPEM) }
        self.server = server
        self.http = http
        self.log = log
        self.router = router
    }

    /// Rereads and applies; logs what changed, or why nothing did.
    func reload() {
        let source = file.map { "\($0), " } ?? ""
        log.write(.info, "SIGHUP: rereading the settings (\(source)PARLEY_* variables, flags)")
        let next: RelayConfig
        let files: HTTPTLSFiles?
        do {
            let built = try RelayConfig.build(
                file: file, environment: ProcessInfo.processInfo.environment, flags: flags)
            files = try built.readHTTPTLSFiles()
            if let files {
                guard HTTPServer.supportsTLS else { throw HTTPServer.tlsUnsupported }
                try HTTPServer.checkTLS(files)
            }
            next = config.reloaded(to: built)
            for kept in config.restartOnlyChanges(to: built) {
                log.write(
                    .warning,
                    "reload: \(kept) changed, which takes effect at the next start; the relay keeps "
                        + "the running value")
            }
        } catch {
            log.write(.error, "reload refused, the running settings stay: \(error)")
            return
        }
        server.api.shared.replaceKeys(TokenVerifier(keys: next.apiKeys, relayKey: server.relayKey))
        server.api.shared.replaceRoomLimits(next.core)
        let workers = server.reconfigure(core: next.core)
        if workers < server.ports.count {
            log.write(
                .warning,
                "reload: \(server.ports.count - workers) of \(server.ports.count) workers did not take "
                    + "the new limits in time; they keep the old ones until the next reload")
        }
        log.threshold = next.logLevel
        let newTLS = files.map { ($0.certificatePEM, $0.keyPEM) }
        var served = "unchanged"
        if newTLS?.0 != tls?.0 || newTLS?.1 != tls?.1 || next.httpLimits != config.httpLimits {
            do {
                http = try http.handOver(tls: files, limits: next.httpLimits, router: router(next))
                tls = newTLS
                served = files == nil ? "plain HTTP, new daemon" : "new certificate served"
            } catch {
                http.replaceRouter(router(next))
                served = "kept as it was (\(error))"
                log.write(
                    .error,
                    "reload: the HTTP server could not restart with the new certificate or limits, "
                        + "it serves the old ones: \(error)")
            }
        } else {
            http.replaceRouter(router(next))
        }
        for apply in onApplied { apply(next) }
        config = next
        log.write(
            .info,
            "reloaded: \(next.apiKeys.count) API key\(next.apiKeys.count == 1 ? "" : "s"), log level "
                + "\(next.logLevel.name), TLS \(served), limits applied on \(workers) worker\(workers == 1 ? "" : "s")")
    }
}
