import ParleyCluster
import ParleyAuth
import ParleyCrypto
import ParleyNet
import ParleyRelayCore
import ParleyWebRTC
import ParleyWire

/// A running relay: binds the public port and one port per further worker, starts the worker threads, rereads its
/// settings on SIGHUP, and stops on SIGINT/SIGTERM after every member has been told (SIGTERM: after a drain).
public final class RelayServer {
    /// The configuration in force.
    public let config: RelayConfig
    /// The ports bound, worker 0 (public) first.
    public let ports: [UInt16]
    private let workers: [Worker]
    /// What the HTTP API reads and posts commands through.
    public let api: RelayAPI
    /// The TCP port's bridge (ICE-TCP, the client's tunnel); nil when `tcp` is off or its port was taken.
    var bridge: TCPBridge?
    /// The addresses clients are told to send media to (`announce`, the bound address or the interfaces).
    public let media: MediaAddresses
    /// The relay's long-term identity key pair (`RelayKeyFile`); nil when started without one.
    public let identity: X25519KeyPair?
    private let log: LogSink
    /// This node's id in a cluster (`node_id`, or random at this start).
    public let nodeID: String
    /// Writes room recordings under the state directory (nil: started without one).
    public let recorder: RoomRecorder?
    /// Keeps texts and chats in `state_dir/messages.db`, or in a cluster in the cluster's Redis (nil: started alone
    /// without a state directory, or the database could not be opened: then texts to identities away fail as they did
    /// before).
    public let messageStore: TextStore?
    /// Sends events to the webhook receivers (`update(endpoints:)` on a reload); nil when its outbox cannot open and
    /// no receiver is configured.
    public let webhooks: WebhookDispatcher?

    /// Binds every socket; throws with a one-line message when a port is taken. Tokens whose `relay_key` names
    /// another key than `identity`'s public key are refused.
    public init(config: RelayConfig, identity: X25519KeyPair? = nil, stateDirectory: String? = nil, log: LogSink) throws(ConfigError) {
        self.config = config
        self.identity = identity
        self.log = log
        let count = config.effectiveWorkers
        var sockets: [UDPSocket] = []
        do {
            let publicSocket = try UDPSocket(bindingTo: config.udp)
            sockets.append(publicSocket)
            let basePort = publicSocket.localAddress?.port ?? config.udp.port
            for k in 1..<max(1, count) {
                var address = config.udp
                address.port = config.udp.port == 0 ? 0 : basePort &+ UInt16(k)
                sockets.append(try UDPSocket(bindingTo: address))
            }
        } catch {
            throw ConfigError("cannot open UDP port: \(error)")
        }
        ports = sockets.map { $0.localAddress?.port ?? 0 }
        let verifier = TokenVerifier(keys: config.apiKeys, relayKey: identity.map { Base64URL.encode($0.publicKey) })
        // The DTLS certificate of WebRTC members, made at each start (browsers pin it per session through the SDP's
        // fingerprint, so it need not outlive the process).
        let dtls: DTLSContext
        do {
            dtls = try DTLSContext(certificate: DTLSCertificate(now: Int64(Clock.unixSeconds())),
                                   srtpProfiles: SRTPSender.isAvailable ? DTLSContext.defaultSRTPProfiles : DTLSContext.withoutAES256GCM)
        } catch {
            throw ConfigError("cannot make the DTLS certificate: \(error)")
        }
        // In a cluster, the relay-to-relay links' keys come from the API secrets every node shares (tokens work on any
        // node for the same reason); each start has its own boot id.
        let nodeID = config.nodeID ?? Crypto.randomBytes(6).map { String(format: "%02x", $0) }.joined()
        self.nodeID = nodeID
        let cluster = config.cluster.map { _ in
            ClusterIdentity(nodeID: nodeID, secret: Array(config.apiKeys.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value }.joined(separator: "\n").utf8),
                            boot: Crypto.randomBytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
        var store: TextStore?
        var chats: [ChatBook.Chat] = []
        if let url = config.cluster, let cluster {
            // A node of a cluster keeps texts where every node reaches them: the cluster's Redis, each text with a MAC
            // only the cluster's nodes can make (from the secret they share).
            do {
                let opened = try TextStore(redis: url, nodeID: nodeID, mac: ClusterMAC(root: cluster.root, purpose: .texts), log: log)
                do { chats = try opened.chats() } catch { log.write(.warning, "the chats are not loaded yet (\(error)): the store reads them once Redis answers") }
                store = opened
                log.write(.info, "texts and chats are kept in the cluster's Redis at \(url)")
            } catch {
                log.write(.error, "the message store cannot start (\(error)): texts to identities away fail and nothing is kept")
            }
        } else if let stateDirectory {
            do {
                let opened = try TextStore(stateDirectory: stateDirectory, log: log)
                chats = try opened.chats()
                store = opened
            } catch {
                log.write(.error, "the message history is unavailable (\(error)): texts to identities away fail and nothing is kept until "
                    + "the file is fixed or moved away and the relay restarted")
            }
        }
        messageStore = store
        let shared = RelayShared(config: config.core, verifier: verifier, cookieSecret: Crypto.randomBytes(32), workerPorts: ports,
                                 identity: identity, dtls: dtls, cluster: cluster, keepsHistory: store != nil, chats: chats)
        var built: [Worker] = []
        let events = EventHub()
        do {
            let hooks = try WebhookDispatcher(endpoints: config.webhooks.endpoints,
                path: stateDirectory.map { $0 + "/webhooks.db" } ?? ":memory:",
                                              retryWindowSeconds: config.webhooks.retrySeconds,
                                              capacity: config.webhooks.outboxMax,
                                              timeoutMilliseconds: config.webhooks.timeoutSeconds * 1_000,
                                              node: config.cluster == nil ? nil : nodeID, log: log)
            events.observer = { hooks.submit($0) }
            webhooks = hooks
        } catch {
            guard config.webhooks.endpoints.isEmpty else { throw error }
            log.write(.warning, "\(error): a reload cannot add webhook receivers")
            webhooks = nil
        }
        do {
            for (k, socket) in sockets.enumerated() {
                built.append(try Worker(index: k, socket: socket, publicSocket: sockets[0], shared: shared, log: log, events: events))
            }
        } catch {
            throw ConfigError("cannot create worker: \(error)")
        }
        for w in built {
            w.peers = built.map(\.inbox)
            w.peerSockets = built.map(\.socket)
        }
        // One ring per ordered pair of workers: a room's owner passes forwarded packets to each helper's (FanOutRing).
        let rings = built.map { from in built.map { to in from === to ? nil : FanOutRing() } }
        for (k, w) in built.enumerated() {
            w.outgoingRings = rings[k]
            w.incomingRings = rings.map { $0[k] }
        }
        workers = built
        do {
            recorder = try stateDirectory.map { d throws(SystemError) in
                try RoomRecorder(catalog: RecordingCatalog(stateDirectory: d), workers: built.count, log: log)
            }
        } catch {
            throw ConfigError("cannot start the recorder: \(error)")
        }
        for w in built { w.recorder = recorder; w.messageStore = store }
        if let webhooks { recorder?.finished = { webhooks.submit($0) } }
        if let catalog = recorder?.catalog {
            for name in catalog.finishInterrupted(unixMilliseconds: Int64(Clock.unixMilliseconds())) {
                log.write(.warning, "recording \(name) was not closed by the relay that made it (killed?): closed now, its files play to their last complete page")
            }
        }
        media = MediaAddresses(announced: config.announce, bound: config.udp,
                               interfaces: config.udp.isWildcard && config.announce.isEmpty ? InterfaceAddresses.current() : [])
        // The TCP port: the public UDP port's number on the same address. Taken by something else, the relay runs
        // without it (UDP only) and says so.
        if config.tcp {
            do {
                bridge = try TCPBridge(address: config.udp.withPort(ports[0]), rules: config.tcpRules, workerPorts: ports,
                                       routes: ICETCPRoutes(), log: log)
            } catch {
                log.write(.warning, "no TCP on port \(ports[0]) (\(error)): clients that cannot use UDP cannot join")
            }
        }
        api = RelayAPI(slots: built.map(\.published), inboxes: built.map(\.inbox), shared: shared, events: events,
                       recordings: recorder?.catalog, messages: store, media: media, tcpPort: bridge == nil ? nil : ports[0],
                       iceTCP: bridge?.routes ?? ICETCPRoutes(), webhookStats: webhooks?.stats)
    }

    /// The relay's public key as tokens and the API name it: base64url without padding (43 characters); nil without one.
    public var relayKey: String? { identity.map { Base64URL.encode($0.publicKey) } }

    /// Whether webhook deliveries wait or are under way.
    var webhooksPending: Bool {
        guard let stats = webhooks?.stats else { return false }
        return stats.waiting.load(ordering: .relaxed) > 0 || stats.inFlight.load(ordering: .relaxed) > 0
    }

    /// Replaces every worker's core settings (a reload); returns how many workers took them in time.
    public func reconfigure(core: RelayCoreConfig) -> Int {
        workers.indices.filter { api.execute(.reconfigure(worker: $0, core)) == .ok }.count
    }

    /// Runs until SIGINT or SIGTERM, calling `reload` at each SIGHUP; returns the exit status (0; 1 when a worker
    /// thread cannot be started).
    ///
    /// SIGTERM (a service manager's stop) drains first: from its first moment joins, calls and new endpoints are
    /// refused and `/readyz` fails; in a cluster the members move to other nodes. Then every member left is told, the
    /// recordings are closed, and while webhook events wait to be delivered the relay waits, at most
    /// `stopGraceSeconds` from the signal (what is still waiting then is delivered after the next start). SIGINT, or a
    /// second signal, skips the waiting.
    public func run(stopGraceSeconds: Int = 0, reload: () -> Void = {}, onReady: () -> Void) -> Int32 {
        ProcessSignals.block()  // inherited by every worker thread; only the waits below see them

        var threads: [OSThread] = []
        var recorderThread: OSThread?
        var storeThread: OSThread?
        var webhookThread: OSThread?
        if let webhooks {
            do {
                webhookThread = try OSThread(name: "parley-webhooks") { webhooks.run() }
            } catch {
                log.write(.error, "cannot start the webhooks: \(error)")
                return 1
            }
        }
        if let messageStore {
            let api = self.api
            messageStore.post = { command in api.post(command) }
            do {
                storeThread = try OSThread(name: "parley-messages") { messageStore.run() }
            } catch {
                log.write(.error, "cannot start the message store: \(error)")
                return 1
            }
        }
        if let recorder {
            do {
                recorderThread = try OSThread(name: "parley-recorder") { recorder.run() }
            } catch {
                log.write(.error, "cannot start the recorder: \(error)")
                return 1
            }
        }
        for w in workers {
            do {
                threads.append(try OSThread(name: "parley-worker-\(w.index)") { w.run() })
            } catch {
                log.write(.error, "cannot start worker \(w.index): \(error)")
                for started in workers.prefix(threads.count) { started.stop() }
                for t in threads { t.join() }
                recorder?.stop()
                recorderThread?.join()
                return 1
            }
        }
        var bridgeThread: OSThread?
        if let bridge {
            do {
                bridgeThread = try OSThread(name: "parley-tcp") { bridge.run() }
            } catch {
                log.write(.warning, "cannot start the TCP bridge (\(error)): clients that cannot use UDP cannot join")
            }
        }
        onReady()
        var received = ProcessSignals.Received.hangUp
        repeat {
            guard let next = ProcessSignals.wait() else { continue }  // interrupted
            received = next
            if received == .hangUp { reload() }
        } while received == .hangUp
        let deadline = Clock.monotonicNanoseconds() + Int64(stopGraceSeconds) * 1_000_000_000
        var patient = received == .terminate
        if patient {
            api.shared.stopping.store(true, ordering: .relaxed)
            log.write(.info, "received SIGTERM: draining (joins refused, /readyz failing)"
                      + (config.cluster == nil ? "" : "; members move to other nodes"))
            if config.cluster != nil {
                for k in workers.indices { _ = api.execute(.drain(worker: k)) }
            }
        }
        log.write(.info, "received \(received.rawValue): telling every member the relay is going away")
        for w in workers { w.stop() }
        for t in threads { t.join() }
        bridge?.stop()  // after the workers: their goodbyes reach TCP clients too
        bridgeThread?.join()
        recorder?.stop()  // after the workers: their last records (recordings ended by the shutdown) are in
        recorderThread?.join()
        messageStore?.stop()
        storeThread?.join()
        // What is left to deliver waits for the grace period, unless another signal says not to.
        while patient && webhooksPending && Clock.monotonicNanoseconds() < deadline {
            if let again = ProcessSignals.wait(milliseconds: 50), again != .hangUp {
                log.write(.info, "received \(again.rawValue) while delivering events: stopping now")
                patient = false
            }
        }
        webhooks?.stop()  // after the workers and the recorder: their last events are stored for the next start
        webhookThread?.join()
        api.events.wakeAll()
        log.write(.info, "stopped")
        return 0
    }
}
