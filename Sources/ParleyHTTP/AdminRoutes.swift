// The route table (`dispatch`) of every route outside a member's, a presence's and an attachment's: health, the
// relay's key, dev tokens, metrics, the sample web client and the `/v1` routes an admin token opens; their
// handlers, and the read model the routes share (rooms and members from the workers' snapshots).

import ParleyAuth
import ParleyCrypto
import ParleyRelay
import ParleyRelayCore
import ParleySIP
import ParleyWire

extension HTTPRouter {
    /// Answers a request outside a member's, a presence's and an attachment's routes (`admit` and `route` come here).
    func dispatch(_ request: HTTPRequest, now: Int64) throws(APIError) -> HTTPResponse {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        let method = request.method
        switch parts {
        case ["healthz"]:
            try allow(method, "GET")
            return Self.json(API.Done(ok: true, detail: nil))
        case ["readyz"]:
            // Live (`/healthz`) is not ready: from the first moment of a drain or a stop, load balancers stop
            // sending new clients here while the members already here stay served.
            try allow(method, "GET")
            let reason = backend.notReadyReason
            return Self.json(API.Done(ok: reason == nil, detail: reason), status: reason == nil ? 200 : 503)
        case ["v1", "relay"]:
            // Public, like the key itself: a fixed small answer that echoes nothing of the request.
            try allow(method, "GET")
            return Self.json(API.RelayInfo(publicKey: relayKey, version: ParleyVersion.string))
        case ["v1", "dev-token"] where devTokens:
            try allow(method, "POST")
            return try mintDevToken(request.body, now: now)
        case ["metrics"]:
            try allow(method, "GET")
            try authoriseMetrics(request, now: now)
            return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8",
                                body: Array((PrometheusExporter.render(backend.snapshots(), config: config,
                                    http: httpStats?.snapshot)
                                                   + (backend.webhookStats?.prometheus() ?? "")
                                                   + (backend.sipCounters?.prometheus() ?? "")).utf8))
        default:
            break
        }
        if parts.first != "v1", let webRoot {
            try allow(method, "GET")
            return try webRoot.serve(request.path)
        }
        guard parts.first == "v1" else { throw Self.noEndpoint }
        try authorise(request, now: now)
        let rest = Array(parts.dropFirst())
        switch (method, rest) {
        case ("POST", ["tokens"]): return try mintToken(request.body, now: now)
        case ("GET", ["events"]): return HTTPResponse(status: 200, contentType: "text/event-stream", body: [], isEventStream: true)
        case ("GET", ["rooms"]): return Self.json(API.RoomList(rooms: rooms()))
        case ("GET", ["cluster"]):
            guard let cluster else { throw APIError(404, "not_found", "this relay runs alone (no --cluster)") }
            let view = cluster.view
            return Self.json(API.Cluster(node: cluster.nodeID, connected: view.connected, problem: view.problem,
                                         nodes: view.nodes.map { API.ClusterNode(id: $0.id, udp: $0.udp, http: $0.http, members: $0.members,
                                                                                 rooms: $0.rooms, startedAt: $0.startedAt, heartbeatAt: $0.heartbeatAt,
                                                                                 roomMembers: $0.roomMembers, relayKey: $0.relayKey) },
                                         rooms: view.rooms, conflicts: view.conflicts, ignored: view.ignored))
        case ("POST", ["cluster", "drain"]):
            // Every worker moves its members; the node's record says it drains from its next heartbeat.
            guard cluster != nil else { throw APIError(404, "not_found", "this relay runs alone (no --cluster)") }
            var total = API.Drained(moved: 0, staying: 0)
            for w in 0..<max(1, backend.snapshots().count) {
                guard case .drained(let moved, let staying) = backend.execute(.drain(worker: w)) else {
                    throw APIError(503, "unavailable", "worker \(w) did not answer")
                }
                total.moved += moved
                total.staying += staying
            }
            return Self.json(total)
        case ("POST", ["rooms"]): return try createRoom(request.body)
        case ("GET", let p) where p.count == 2 && p[0] == "rooms":
            let name = try Self.validName(p[1], field: "room name")
            guard let room = rooms().first(where: { $0.name == name }) else { throw Self.noRoom(name) }
            return Self.json(room)
        case ("DELETE", let p) where p.count == 2 && p[0] == "rooms":
            return try run(.closeRoom(name: try Self.validName(p[1], field: "room name")))
        case ("GET", let p) where p.count == 3 && p[0] == "rooms" && p[2] == "members":
            let name = try Self.validName(p[1], field: "room name")
            guard let (room, _) = findRoom(name) else { throw Self.noRoom(name) }
            return Self.json(API.MemberList(room: name, members: room.members.map { Self.member($0, forwarded: room.forwardedSpeakers) }))
        case ("DELETE", let p) where p.count == 4 && p[0] == "rooms" && p[2] == "members":
            return try run(.kick(room: try Self.validName(p[1], field: "room name"), identity: try Self.validName(p[3], field: "identity")))
        case ("POST", let p) where p.count == 5 && p[0] == "rooms" && p[2] == "members" && p[4] == "mute":
            let body = try Self.decode(API.MuteRequest.self, request.body)
            return try run(.mute(room: try Self.validName(p[1], field: "room name"), identity: try Self.validName(p[3], field: "identity"),
                                 muted: body.muted ?? true))
        case ("POST", let p) where p.count == 3 && p[0] == "rooms" && p[2] == "messages":
            let body = try Self.decode(API.MessageRequest.self, request.body).checked()
            let room = try Self.validName(p[1], field: "room name")
            return try sendRoomText { .message(room: room, text: body.text, attachments: body.attachments, keepRequest: $0) }
        case ("POST", ["sip", "credentials"]):
            return try mintSIPCredentials(request.body)
        case ("POST", let p) where p.count == 5 && p[0] == "rooms" && p[2] == "sip-calls" && p[4] == "dtmf":
            return try sendSIPDigits(room: try Self.validName(p[1], field: "room name"),
                                     identity: try Self.validName(p[3], field: "identity"), request.body)
        case ("POST", let p) where p.count == 3 && p[0] == "rooms" && p[2] == "sip-calls":
            return try placeSIPCall(room: try Self.validName(p[1], field: "room name"), request.body)
        case ("POST", let p) where p.count == 3 && p[0] == "rooms" && p[2] == "rtp-endpoints":
            return try createRTPEndpoint(room: try Self.validName(p[1], field: "room name"), request.body)
        case ("POST", let p) where p.count == 3 && p[0] == "rooms" && p[2] == "recording":
            let mixdown = request.body.isEmpty ? false : (try Self.decode(API.RecordingRequest.self, request.body).mixdown ?? false)
            return try startRecording(room: try Self.validName(p[1], field: "room name"), mixdown: mixdown)
        case ("DELETE", let p) where p.count == 3 && p[0] == "rooms" && p[2] == "recording":
            return try run(.stopRecording(room: try Self.validName(p[1], field: "room name")))
        case ("GET", ["recordings"]):
            guard let catalog = backend.recordings else { throw Self.noRecordings }
            let wanted = request.query["recording"]
            return Self.json(API.RecordingList(recordings: catalog.list().filter { wanted == nil || $0.recording == wanted }.map(API.RecordingFile.init)))
        case ("GET", let p) where p.count == 2 && p[0] == "recordings":
            guard let catalog = backend.recordings else { throw Self.noRecordings }
            guard let path = catalog.path(ofFile: p[1]) else { throw APIError(404, "not_found", "no such recording file") }
            return HTTPResponse(status: 200, contentType: "audio/ogg", body: [], headers: [
                "Content-Disposition": "attachment; filename=\"\(p[1]).opus\"", "X-Content-Type-Options": "nosniff"], file: path)
        case ("DELETE", let p) where p.count == 4 && p[0] == "rooms" && p[2] == "rtp-endpoints":
            return try run(.removeRTPEndpoint(room: try Self.validName(p[1], field: "room name"),
                                              identity: try Self.validName(p[3], field: "identity")))
        default:
            let known = rest.first == "rooms" || (rest.first == "recordings" && rest.count <= 2) || rest == ["tokens"] || rest == ["events"]
            throw known ? APIError(405, "method_not_allowed", "\(method) is not allowed on \(request.path)")
                        : APIError(404, "not_found", "no such endpoint: \(request.path)")
        }
    }

    // MARK: Routes

    private func mintToken(_ body: [UInt8], now: Int64) throws(APIError) -> HTTPResponse {
        let r = try Self.decode(API.TokenRequest.self, body)
        let identity = try Self.validName(r.identity, field: "identity")
        if let name = r.name { _ = try Self.validName(name, field: "name") }
        if let room = r.room { _ = try Self.validName(room, field: "room") }
        let grants = r.grants ?? Grants()  // given grants are taken as in a token: a missing one is false
        guard r.room != nil || grants.admin else { throw APIError(400, "invalid_field", "room is required unless grants.admin is true") }
        let ttl = r.ttl ?? 3600
        guard (1...7 * 86_400).contains(ttl) else { throw APIError(400, "invalid_field", "ttl must be 1–604800 seconds") }
        _ = try Self.roomMode(r.mode)
        if let key = r.relayKey, !Self.isRelayKey(key) {
            throw APIError(400, "invalid_field", "relay_key must be a relay's public key: 43 base64url characters (32 bytes), as GET /v1/relay shows")
        }
        guard let signer else { throw APIError(503, "unavailable", "the relay has no API key to sign with") }
        let claims = TokenClaims(identity: identity, name: r.name, room: r.room, expiresAt: now + ttl, notBefore: now - 1,
                                 issuedAt: now, grants: grants, mode: r.mode, relayKey: r.relayKey)
        return Self.json(API.TokenResponse(token: signer.mint(claims), identity: identity, room: r.room,
                                                 expiresAt: (now + ttl) * 1000), status: 201)  // the API's times are Unix ms
    }

    /// `POST /v1/dev-token {identity, room}` (dev credentials only): a member token for one hour, grants as
    /// `parley token` gives (join, publish, subscribe, create).
    private func mintDevToken(_ body: [UInt8], now: Int64) throws(APIError) -> HTTPResponse {
        let r = try Self.decode(API.DevTokenRequest.self, body)
        let identity = try Self.validName(r.identity, field: "identity"), room = try Self.validName(r.room, field: "room")
        guard let signer else { throw APIError(503, "unavailable", "the relay has no API key to sign with") }
        let claims = TokenClaims(identity: identity, name: identity, room: room, expiresAt: now + 3600, notBefore: now - 1,
                                 issuedAt: now, grants: Grants(), mode: nil, relayKey: relayKey)
        return Self.withCORS(Self.json(API.TokenResponse(token: signer.mint(claims), identity: identity, room: room,
                                                         expiresAt: (now + 3600) * 1000), status: 201))
    }

    /// The room mode named in a request (nil when it names none), or a 400 naming the choices.
    static func roomMode(_ name: String?) throws(APIError) -> RoomMode? {
        guard let name else { return nil }
        guard let mode = RoomMode(rawValue: name) else {
            throw APIError(400, "invalid_field", "mode must be \(RoomMode.choices)")
        }
        return mode
    }

    static let noRecordings = APIError(503, "unavailable", "this relay keeps no recordings: it runs without a state directory")

    /// Starts recording `room` under a fresh random id (the room's worker tells its members).
    private func startRecording(room: String, mixdown: Bool) throws(APIError) -> HTTPResponse {
        guard let catalog = backend.recordings else { throw Self.noRecordings }
        if let free = catalog.freeBytes(), free < RecordingCatalog.minimumFreeBytes {
            throw APIError(507, "insufficient_storage",
                           "the relay's disk is full: \(free / 1024) KiB free, a recording needs at least \(RecordingCatalog.minimumFreeBytes >> 20) MiB")
        }
        let id = Crypto.randomBytes(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        _ = try run(.startRecording(room: room, id: id, mixdown: mixdown))
        let name = RecordingCatalog.name(id)
        return Self.json(API.RecordingStarted(recording: name, room: room, files: "/v1/recordings?recording=" + name), status: 201)
    }

    private func createRoom(_ body: [UInt8]) throws(APIError) -> HTTPResponse {
        let r = try Self.decode(API.CreateRoomRequest.self, body)
        let name = try Self.validName(r.name, field: "name")
        let mode = try Self.roomMode(r.mode)
        if let m = r.maxMembers, !(1...100_000).contains(m) { throw APIError(400, "invalid_field", "max_members must be 1–100000") }
        if let t = r.emptyTimeout, !(0...86_400).contains(t) { throw APIError(400, "invalid_field", "empty_timeout must be 0–86400 seconds") }
        if let pin = r.sipPin {
            guard SIPRoomPINs.valid(pin) else { throw APIError(400, "invalid_field", "sip_pin must be 4–12 digits") }
            guard backend.sipCounters != nil else {
                throw APIError(501, "no_sip_gateway", "this relay runs no SIP gateway (--sip): sip_pin has no use")
            }
        }
        _ = try run(.createRoom(name: name, mode: mode, maxMembers: r.maxMembers,
                                emptyTimeout: r.emptyTimeout.map { .seconds($0) },
                                audience: r.audience ?? false))
        guard let room = rooms().first(where: { $0.name == name }) else { throw APIError(503, "unavailable", "room \(name) vanished") }
        _ = backend.setSIPRoomPIN(r.sipPin, room: name)  // a room made again without one loses its old PIN
        return Self.json(room, status: 201)
    }

    private func createRTPEndpoint(room: String, _ body: [UInt8]) throws(APIError) -> HTTPResponse {
        let r = try Self.decode(API.RTPEndpointRequest.self, body)
        let identity = try Self.validName(r.identity, field: "identity")
        if let name = r.name { _ = try Self.validName(name, field: "name") }
        let publish = r.publish ?? true, subscribe = r.subscribe ?? true
        guard publish || subscribe else { throw APIError(400, "invalid_field", "publish and subscribe must not both be false") }
        func address(_ text: String?, _ field: String) throws(APIError) -> PeerAddress? {
            guard let text else { return nil }
            guard let a = PeerAddress(parsing: text), a.port != 0, !a.isWildcard else {
                throw APIError(400, "invalid_field", "\(field) must be IPV4:PORT or [IPV6]:PORT with a port from 1 to 65535")
            }
            guard a.isIPv4 || backend.servesIPv6 else {
                throw APIError(400, "invalid_field",
                               "\(field) is IPv6 but this relay's UDP address is IPv4 (bind udp to [::] to serve both)")
            }
            return a
        }
        let source = try address(r.sourceAddress, "source_address"), receive = try address(r.receiveAddress, "receive_address")
        if publish && source == nil && receive == nil {
            throw APIError(400, "invalid_field", "a publishing endpoint needs source_address, the IPV4:PORT it sends from (or receive_address when it sends from there)")
        }
        if subscribe && source == nil && receive == nil {
            throw APIError(400, "invalid_field", "a subscribing endpoint needs receive_address, the IPV4:PORT it listens on")
        }
        // SRTP unless the request asks for cleartext and the relay allows it: the keys come from libsodium, here.
        let srtp = r.srtp ?? true
        if !srtp && !config.allowCleartext {
            throw APIError(403, "cleartext_refused", "this relay refuses cleartext RTP endpoints (allow_cleartext is off): leave out \"srtp\": false")
        }
        let keys = srtp ? RTPEndpointKeys(endpointSends: .random(), relaySends: .random()) : nil
        let result = backend.execute(.addRTPEndpoint(room: room, identity: identity, name: r.name, publish: publish,
                                                     subscribe: subscribe, sourceAddress: source, receiveAddress: receive, keys: keys))
        guard case .rtpEndpoint(let info)? = result else { return try answer(result) }
        // The relay address the tool can reach: of its own family, loopback when it is on loopback.
        let host = backend.mediaHosts(for: source ?? receive)[0]
        return Self.json(Self.describe(info, room: room, host: host, publish: publish, subscribe: subscribe), status: 201)
    }

    /// What the backend is told about a new endpoint: addresses, the SDP of the stream it receives, the SDES keys, and
    /// the ffmpeg options that use them.
    static func describe(_ info: RTPEndpointInfo, room: String, host address: PeerAddress, publish: Bool,
                         subscribe: Bool) -> API.RTPEndpoint {
        let host = address.host, family = address.isIPv4 ? "IP4" : "IP6"  // host as a URL writes it
        // The SDP describes the stream from the tool's side: it receives on `m=`'s port, from the relay at `c=`. With
        // SDES its `a=crypto` carries the key of that stream, the one the relay sends with (RFC 4568 §6.1).
        // RTCP travels on the RTP port both ways (`a=rtcp-mux`); Opus as RFC 7587 describes it, with in-band FEC
        // (the relay's reports drive it) and 10 ms as the shortest packet; the level extensions the relay writes; the
        // SSRC and CNAME of the one stream a subscriber receives; a session id of its own.
        let direction = publish && subscribe ? "sendrecv" : publish ? "sendonly" : "recvonly"
        let mediaPort = info.receiveAddress?.port ?? info.port
        let pt = info.payloadType
        let sessionID = UInt64(info.memberID) << 32 | UInt64(info.streamSSRC ?? info.ssrc)
        var lines = ["v=0", "o=- \(sessionID) 1 IN \(family) \(address.bareHost)", "s=Parley \(room)",
                     "c=IN \(family) \(address.bareHost)", "t=0 0",
                     "m=audio \(mediaPort) \(info.keys == nil ? "RTP/AVP" : "RTP/SAVP") \(pt)", "a=rtpmap:\(pt) opus/48000/2",
                     "a=fmtp:\(pt) minptime=10;useinbandfec=1;stereo=0;sprop-stereo=0", "a=ptime:20", "a=rtcp-mux",
                     "a=extmap:\(info.audioLevelExtensionID) urn:ietf:params:rtp-hdrext:ssrc-audio-level",
                     "a=extmap:\(info.csrcAudioLevelExtensionID) urn:ietf:params:rtp-hdrext:csrc-audio-level"]
        if let keys = info.keys { lines.append("a=" + keys.relaySends.cryptoAttribute()) }
        if let stream = info.streamSSRC { lines.append("a=ssrc:\(stream) cname:\(info.cname)") }
        lines.append("a=\(direction)")
        let sdp = lines.joined(separator: "\r\n") + "\r\n"
        let srtp = info.keys.map { keys in
            API.SRTPKeys(suite: SDESKey.suite, endpointKey: keys.endpointSends.base64, relayKey: keys.relaySends.base64,
                         endpointCrypto: "a=" + keys.endpointSends.cryptoAttribute(), relayCrypto: "a=" + keys.relaySends.cryptoAttribute())
        }
        var send: [String]?
        if publish {
            // RTCP to the relay's RTP port too (the tool sends it from its own RTP port + 1, which the relay accepts).
            let from = (info.sourceAddress.map { "?localport=\($0.port)&" } ?? "?") + "rtcpport=\(info.port)"
            send = ["-payload_type", "\(pt)", "-ssrc", "\(info.ssrc)", "-f", "rtp"]
            if let srtp {
                send! += ["-srtp_out_suite", srtp.suite, "-srtp_out_params", srtp.endpointKey, "srtp://\(host):\(info.port)\(from)"]
            } else {
                send! += ["rtp://\(host):\(info.port)\(from)"]
            }
        }
        let receive = subscribe ? ["-protocol_whitelist", srtp == nil ? "file,udp,rtp" : "file,udp,rtp,srtp", "-i", "endpoint.sdp"] : nil
        return API.RTPEndpoint(room: room, identity: info.identity, ssrc: info.ssrc, streamSSRC: info.streamSSRC, payloadType: Int(pt),
                               relayAddress: "\(host):\(info.port)", relayHost: address.bareHost, relayPort: Int(info.port),
                               sourceAddress: info.sourceAddress?.description, receiveAddress: info.receiveAddress?.description,
                               publish: publish, subscribe: subscribe, sdp: sdp, srtp: srtp, ffmpegSendArgs: send,
                               ffmpegReceiveArgs: receive)
    }

    private func run(_ command: AdminCommand) throws(APIError) -> HTTPResponse {
        try answer(backend.execute(command))
    }

    /// Seconds a text's request waits for the message store to say it kept the text.
    public static let keepWaitSeconds = 2.0

    /// Sends a room text (`command` with the number the store answers to) and, on a relay that keeps texts, waits until
    /// the store kept it: a text the room got but the store could not keep is 507 (the disk is full) or 503, code
    /// `text_not_kept`, never a silent 200.
    func sendRoomText(_ command: (UInt64) -> AdminCommand) throws(APIError) -> HTTPResponse {
        let expected = backend.messages?.keeping.expect()
        let result = backend.execute(command(expected?.id ?? 0))
        guard case .ok? = result, let (id, wait) = expected else {
            if let expected { backend.messages?.keeping.cancel(expected.id) }
            return try answer(result)
        }
        switch wait.wait(seconds: Self.keepWaitSeconds) {
        case .kept?:
            return Self.json(API.Done(ok: true, detail: nil))
        case .notKept(let reason, let full)?:
            throw APIError(full ? 507 : 503, "text_not_kept", "the text reached the room's members but was not kept in its history: \(reason)")
        case nil:
            backend.messages?.keeping.cancel(id)
            throw APIError(503, "text_not_kept", "the text reached the room's members, but the message store has not said within \(Int(Self.keepWaitSeconds)) s that it kept it (it may yet)")
        }
    }

    func answer(_ result: AdminResult?) throws(APIError) -> HTTPResponse {
        switch result {
        case .ok, .rtpEndpoint, .webRTCMember, .webCall, .iceRestarted: return Self.json(API.Done(ok: true, detail: nil))
        case .drained(let moved, let staying): return Self.json(API.Drained(moved: moved, staying: staying))
        case .notFound(let why): throw APIError(404, "not_found", why)
        case .forbidden(let why): throw APIError(403, "forbidden", why)
        case .conflict(let why): throw APIError(409, "conflict", why)
        case .unavailable(let why): throw APIError(503, "unavailable", why)
        case .invalid(let why): throw APIError(400, "invalid_field", why)
        case nil: throw APIError(503, "unavailable", "the relay did not answer in time")
        }
    }

    // MARK: Read model

    func findRoom(_ name: String) -> (RoomSnapshot, WorkerSnapshot)? {
        let worker = backend.snapshots()
        for w in worker { if let r = w.rooms.first(where: { $0.name == name }) { return (r, w) } }
        return nil
    }

    /// Every room of every worker, sorted by name.
    func rooms() -> [API.Room] {
        var out: [API.Room] = []
        for w in backend.snapshots() {
            out.reserveCapacity(out.count + w.rooms.count)
            for r in w.rooms {
                let limits = w.limits[r.name]
                let speakers = r.forwardedSpeakers.compactMap { id in r.members.first { $0.id == id }?.identity }
                out.append(API.Room(name: r.name, mode: r.mode.rawValue, members: r.members.count, speakers: speakers,
                                    createdAt: r.createdAtUnixMilliseconds,
                                    maxMembers: limits?.maxMembers ?? config.maxMembersPerRoom,
                                    emptyTimeout: (limits?.emptyTimeout ?? config.emptyRoomTimeout).wholeSeconds, worker: w.worker,
                                    audience: r.audienceMode ? r.audience : nil, recording: r.recording))
            }
        }
        return out.sorted { $0.name < $1.name }
    }

    static func member(_ m: MemberSnapshot, forwarded: [UInt32]) -> API.Member {
        API.Member(identity: m.identity, name: m.name, joinedAt: m.joinedAtUnixMilliseconds, muted: m.muted,
                   mutedByRoom: m.mutedByRoom,
                   speaking: forwarded.contains(m.id), level: Int(m.level), ssrc: m.ssrc, address: m.address.description,
                   transport: m.transport,
                   stats: API.Stats(packetsIn: m.stats.packetsIn, bytesIn: m.stats.bytesIn, packetsOut: m.stats.packetsOut,
                                    bytesOut: m.stats.bytesOut, packetsLost: m.packetsLost,
                                    jitterMs: (Double(m.jitter) / 48.0 * 100).rounded() / 100,
                                    nacksReceived: m.stats.nacksReceived, retransmitted: m.stats.retransmittedToMember,
                                    senderReports: m.stats.senderReports,
                                    roundTripMs: m.roundTrip.map { (Double($0.nanoseconds) / 10_000).rounded() / 100 }))
    }
}
