import CLibre
import Dispatch
import Glibc
import ParleyNet
import ParleyWire
import Synchronization

/// The relay's SIP gateway (issue 40, first part: phones and trunks dial into rooms). libre runs on a thread of its
/// own — its SIP transactions, dialogs and sessions, and each call's media sockets on the same event loop — so
/// nothing here needs a lock but the counters.
///
/// An INVITE is let in only from a trunk's address blocks (`SIPTrunks`): any other source is answered 403 and counted
/// as a toll-fraud attempt, and nothing is ever forwarded to another SIP target (no open relay).
/// `sip:room-NAME@…` joins room NAME as a plain-RTP member (`SIPRoomDirectory`); its audio is G.711 to the phone,
/// Opus to the room (`G711OpusBridge`). Other targets are 404 for now.
public final class SIPGateway: @unchecked Sendable {
    /// Where the gateway listens and whom it lets in.
    public struct Settings: Sendable {
        /// Where SIP listens (UDP).
        public var listen: PeerAddress
        /// The address written in SDP answers for the phone's RTP (the listen address unless it is a wildcard).
        public var mediaHost: PeerAddress
        /// Who may call in.
        public var trunks: SIPTrunks
        /// The digest credentials devices register and call with (nil: no device may register).
        public var credentials: SIPCredentials?
        /// Settings with the SDP's address the listen address unless given.
        public init(listen: PeerAddress, mediaHost: PeerAddress? = nil, trunks: SIPTrunks,
                    credentials: SIPCredentials? = nil) {
            self.listen = listen
            self.mediaHost = mediaHost ?? listen
            self.trunks = trunks
            self.credentials = credentials
        }
    }

    /// What the gateway has done, for logs and metrics.
    public struct Counters: Sendable, Equatable {
        /// INVITEs over their source's budget (`SIPRateLimit`), not answered.
        public var rateLimited = 0
        /// Calls answered and joined to their room.
        public var answered = 0
        /// Answered calls that have ended.
        public var ended = 0
        /// INVITEs from outside every trunk (403), and calls out no trunk allows: toll-fraud attempts.
        public var refusedOutsideTrunks = 0
        /// INVITEs refused for another reason (no such room, no codec in common, the room full).
        public var refusedOther = 0
        /// Calls the gateway placed that ended before an answer (busy, unavailable, no answer).
        public var unanswered = 0
        /// REGISTERs and INVITEs whose credentials were wrong, unknown or lapsed (403).
        public var authenticationFailures = 0
        /// Devices registered now.
        public var registeredDevices = 0
        /// Requests missing what RFC 3261 requires (400, or 483 at Max-Forwards 0), not acted on.
        public var malformed = 0
    }

    /// The first presence stream id of the gateway's SIP parties (the HTTP API's event streams count up from 1).
    public static let firstStream: UInt64 = 1 << 62

    let settings: Settings
    let rooms: SIPRoomDirectory
    let log: @Sendable (String) -> Void
    private let counters = Mutex(Counters())
    private var thread: OSThread?
    // The libre thread's own state below: touched only from callbacks on that thread.
    var sip: OpaquePointer?
    var sessionSocket: OpaquePointer?
    var calls: [ObjectIdentifier: SIPCall] = [:]
    /// Every call with media up (into a room, routed, past a PIN), for the 20 ms tick and digits to send.
    var live: [ObjectIdentifier: SIPCall] = [:]
    /// The gateway's one 20 ms tick for all calls (`pace`): one wakeup of the SIP thread, not one per call.
    let paceTimer = UnsafeMutablePointer<tmr>.allocate(capacity: 1)
    /// Calls the gateway placed, from the INVITE until they end.
    var outbound: [ObjectIdentifier: SIPOutboundCall] = [:]
    /// libre's thread-safe queue into the SIP thread: dial requests (`dial`).
    var mailbox: OpaquePointer?
    var nextCall = 1
    /// Calls into rooms with a PIN, until they end (`SIPLobby`).
    var lobbies: [ObjectIdentifier: SIPLobby] = [:]
    /// Rooms' PINs (set from the HTTP API's threads, read on the SIP thread).
    let pins = Mutex(SIPRoomPINs())
    /// The calls in rooms by room and identity, and whether each can be sent digits (`sendDigits`).
    let digitCalls = Mutex<[String: Bool]>([:])
    /// Calls to and from identities, by the SIP party's presence stream (`SIPRoutedCall`).
    var routed: [UInt64: SIPRoutedCall] = [:]
    var nextStream = SIPGateway.firstStream
    /// Registered devices (`SIPGateway+Registrar.swift`).
    var registrations = SIPRegistrations()
    var nonces = SIPNonces()
    var registrar: OpaquePointer?
    /// The listener that turns away malformed requests before the others see them.
    var checker: OpaquePointer?
    let sweepTimer = UnsafeMutablePointer<tmr>.allocate(capacity: 1)
    /// REGISTERs and authenticated INVITEs per source: 20 a second after 40.
    var registerLimit = SIPRateLimit(perSecond: 20, burst: 40)
    /// A trunk's sources: 500 calls a second each after a burst of 500 (a carrier sends all its calls from a few
    /// hosts; this stops a loop, not a busy trunk).
    var trunkLimit = SIPRateLimit(perSecond: 500, burst: 500)
    /// Anyone else (refused with 403 anyway): 2 a second after 5, so a flood gets few answers.
    var strangerLimit = SIPRateLimit(perSecond: 2, burst: 5)
    /// Malformed requests answered per source: 2 a second after 5 (a 400 is as long as the request it answers, so a
    /// spoofed flood reflects no more than it sends, and little of that).
    var malformedLimit = SIPRateLimit(perSecond: 2, burst: 5)

    /// A gateway that puts calls into `rooms` and writes a line to `log` for each call and each refusal.
    public init(settings: Settings, rooms: SIPRoomDirectory, log: @escaping @Sendable (String) -> Void) {
        self.settings = settings
        self.rooms = rooms
        self.log = log
    }

    /// The counters now (any thread).
    public var snapshot: Counters { counters.withLock { $0 } }
    func count(_ change: (inout Counters) -> Void) { counters.withLock { change(&$0) } }

    /// Starts the SIP thread; returns once it listens, or throws why it cannot.
    public func start() throws(SIPConfigError) {
        let ready = DispatchSemaphore(value: 0)
        let outcome = Mutex<String?>(nil)
        let context = Unmanaged.passRetained(self)
        do {
            thread = try OSThread(name: "parley-sip") {
                let gateway = context.takeRetainedValue()
                if let error = gateway.setUp() {
                    outcome.withLock { $0 = error }
                    ready.signal()
                    return
                }
                ready.signal()
                _ = re_main(nil)
            }
        } catch {
            throw SIPConfigError("cannot start the SIP thread: \(error)")
        }
        ready.wait()
        if let error = outcome.withLock({ $0 }) { throw SIPConfigError(error) }
    }

    /// On the SIP thread: libre, the UDP transport and the session listener. The error, or nil.
    private func setUp() -> String? {
        var err = libre_init()
        guard err == 0 else { return "libre_init failed: \(String(cString: strerror(err)))" }
        // A DNS client libre's SIP stack requires; the gateway only ever sends to numeric addresses.
        var dnsServer = sa()
        _ = sa_set_str(&dnsServer, "127.0.0.1", 53)
        var dnsc: OpaquePointer?
        err = dnsc_alloc(&dnsc, nil, &dnsServer, 1)
        guard err == 0 else { return "dnsc_alloc failed: \(String(cString: strerror(err)))" }
        err = sip_alloc(&sip, dnsc, 32, 32, 32, "Parley", nil, nil)
        guard err == 0 else { return "sip_alloc failed: \(String(cString: strerror(err)))" }
        var local = sa()
        err = sa_set_str(&local, settings.listen.bareHost, settings.listen.port)
        guard err == 0 else { return "bad SIP address \(settings.listen)" }
        err = parley_sip_transp_add_udp(sip, &local)
        guard err == 0 else {
            return "cannot listen for SIP on udp \(settings.listen): \(String(cString: strerror(err)))"
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        // First of the listeners: a request without what RFC 3261 requires goes no further (`SIPRequestCheck`).
        err = sip_listen(&checker, sip, true, { msg, arg in
            guard let msg, let arg else { return true }
            return Unmanaged<SIPGateway>.fromOpaque(arg).takeUnretainedValue().refuseMalformed(msg)
        }, me)
        guard err == 0 else { return "sip_listen failed: \(String(cString: strerror(err)))" }
        err = sipsess_listen(&sessionSocket, sip, 32, { msg, arg in
            guard let msg, let arg else { return }
            Unmanaged<SIPGateway>.fromOpaque(arg).takeUnretainedValue().incoming(msg)
        }, me)
        guard err == 0 else { return "sipsess_listen failed: \(String(cString: strerror(err)))" }
        err = mqueue_alloc(&mailbox, { id, data, arg in
            guard let data, let arg else { return }
            let gateway = Unmanaged<SIPGateway>.fromOpaque(arg).takeUnretainedValue()
            if id == SIPGateway.noticeMessage {
                gateway.handle(Unmanaged<SIPNoticeBox>.fromOpaque(data).takeRetainedValue().notice)
            } else if id == SIPGateway.digitsMessage {
                gateway.keyDigits(Unmanaged<DigitsBox>.fromOpaque(data).takeRetainedValue())
            } else {
                gateway.place(Unmanaged<SIPDialRequest>.fromOpaque(data).takeRetainedValue())
            }
        }, me)
        guard err == 0 else { return "mqueue_alloc failed: \(String(cString: strerror(err)))" }
        err = sip_listen(&registrar, sip, true, { msg, arg in
            guard let msg, let arg else { return false }
            return Unmanaged<SIPGateway>.fromOpaque(arg).takeUnretainedValue().request(msg)
        }, me)
        guard err == 0 else { return "sip_listen failed: \(String(cString: strerror(err)))" }
        tmr_init(sweepTimer)
        scheduleSweep()
        tmr_init(paceTimer)
        pace()
        return nil
    }

    /// A new INVITE: from a trunk's address blocks, or from a device with the backend's credentials (challenged when
    /// it sent none and registered from that host); anything else 403. To `sip:room-NAME@…`: answered and joined to
    /// the room; to `sip:IDENTITY@…`: rung as a call to that identity (`SIPRoutedCall`).
    func incoming(_ msg: UnsafePointer<sip_msg>) {
        let source = Self.address(msg.pointee.src)
        let trunk = source.flatMap { settings.trunks.trunk(for: $0) }
        guard let source else {
            count { $0.refusedOutsideTrunks += 1 }
            _ = sip_treply(nil, sip, msg, 403, "Forbidden")
            return
        }
        let device = trunk == nil && (Self.hasCredentials(msg) || registrations.hasDevice(at: source))
        let now = Clock.monotonicNanoseconds()
        let allowed = trunk != nil ? trunkLimit.allow(source, now: now)
            : device ? registerLimit.allow(source, now: now) : strangerLimit.allow(source, now: now)
        guard allowed else {
            count { $0.rateLimited += 1 }
            return
        }
        let caller: (identity: String, name: String)
        let fromName = Self.string(msg.pointee.from.dname)
        if let trunk {
            let user = Self.userPart(Self.string(msg.pointee.from.uri.user))
            caller = ("sip:\(user.isEmpty ? "anonymous" : user)@\(trunk.name)", fromName)
        } else if device {
            switch authenticate(msg) {
            case .identity(let identity): caller = (identity, fromName)
            case .challenge(let stale): return challenge(msg, stale: stale)
            case .refused(let why):
                count { $0.authenticationFailures += 1 }
                log("sip: 403 to an INVITE from \(source): \(why)")
                _ = sip_treply(nil, sip, msg, 403, "Forbidden")
                return
            }
        } else {
            count { $0.refusedOutsideTrunks += 1 }
            log("sip: 403 to an INVITE from \(source), outside every trunk")
            _ = sip_treply(nil, sip, msg, 403, "Forbidden")
            return
        }
        let user = Self.string(msg.pointee.uri.user)
        guard user.hasPrefix("room-"), user.count > 5 else {
            return callIdentity(msg, callee: user, caller: caller, source: source)
        }
        let room = String(user.dropFirst(5))
        guard let body = Self.body(msg) else { return refuse(msg, 488, "Not Acceptable Here") }
        let offer: SIPAudioOffer
        switch SIPAudioOffer.parse(body) {
        case .success(let o): offer = o
        case .failure(let refusal): return refuse(msg, refusal.status, refusal.reason)
        }
        if let pin = pins.withLock({ $0.pin(for: room) }) {
            return enterLobby(msg, room: room, pin: pin, offer: offer, source: source)
        }
        let call: SIPCall
        switch SIPCall.open(gateway: self, room: room, offer: offer, caller: Self.string(msg.pointee.from.dname),
                            from: source, number: nextCall) {
        case .success(let c): call = c
        case .failure(let e): return refuse(msg, e.status, e.reason, detail: e.detail)
        }
        nextCall += 1
        guard call.accept(msg) else {
            call.close()
            return refuse(msg, 500, "Server Internal Error")
        }
        calls[ObjectIdentifier(call)] = call
        count { $0.answered += 1 }
        log("sip: \(call.identity) from \(source) joined room \(room) (\(offer.codecName))"
            + (offer.srtp == nil ? "" : " with SRTP"))
    }

    /// Calls `target` through the trunk that lets it out and, when it answers, makes it a member of `room` as
    /// `identity` (named `name`). Returns at once, from any thread: the trunk's name, or why the call is not placed
    /// (403: no trunk lets it out). How it goes is logged; an answered call is seen in the room's members.
    public func call(_ target: SIPTarget, room: String, identity: String, name: String?)
        -> Result<String, SIPRoomError> {
        guard let (trunk, _) = settings.trunks.outbound(for: target) else {
            count { $0.refusedOutsideTrunks += 1 }
            let why = "no trunk lets a call out to \(target)"
            return .failure(SIPRoomError(status: 403, reason: "Forbidden", detail: why))
        }
        guard let mailbox else { return .failure(SIPRoomError(status: 503, reason: "Service Unavailable")) }
        let request = Unmanaged.passRetained(SIPDialRequest(target: target, room: room, identity: identity, name: name))
        guard mqueue_push(mailbox, 1, request.toOpaque()) == 0 else {
            request.release()
            return .failure(SIPRoomError(status: 503, reason: "Service Unavailable"))
        }
        return .success(trunk.name)
    }

    /// On the SIP thread: the trunk, the phone's socket, the INVITE.
    func place(_ request: SIPDialRequest) {
        guard let (trunk, nextHop) = settings.trunks.outbound(for: request.target),
              let phoneSocket = newPhoneSocket() else {
            return log("sip: \(request.identity), the call to \(request.target), could not be placed")
        }
        let call = SIPOutboundCall(gateway: self, request: request, trunk: trunk, phoneSocket: phoneSocket)
        guard call.start(nextHop: nextHop) else {
            return log("sip: \(request.identity), the call to \(request.target): libre could not send the INVITE")
        }
        outbound[ObjectIdentifier(call)] = call
        log("sip: calling \(request.target) for room \(request.room) through trunk \(trunk.name) (via \(nextHop))")
    }

    func ended(_ call: SIPCall, reason: String) {
        guard calls.removeValue(forKey: ObjectIdentifier(call)) != nil else { return }
        call.close()
        count { $0.ended += 1 }
        log("sip: \(call.identity) left room \(call.room): \(reason); \(call.media.rtcp.summary)")
    }

    func refuse(_ msg: UnsafePointer<sip_msg>, _ status: UInt16, _ reason: String, detail: String? = nil) {
        count { $0.refusedOther += 1 }
        log("sip: \(status) \(reason) to an INVITE for \(Self.string(msg.pointee.uri.user))"
            + (detail.map { ": \($0)" } ?? ""))
        _ = sip_treply(nil, sip, msg, status, reason)
    }

    static func string(_ text: pl) -> String {
        guard let p = text.p, text.l > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: p, count: text.l), as: UTF8.self)
    }

    static func body(_ msg: UnsafePointer<sip_msg>) -> String? {
        guard let mb = msg.pointee.mb, mbuf_get_left(mb) > 0, let start = mbuf_buf(mb) else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: start, count: mbuf_get_left(mb)), as: UTF8.self)
    }

    static func address(_ value: sa) -> PeerAddress? {
        var a = value
        switch sa_af(&a) {
        case AF_INET: return PeerAddress(ipv4: sa_in(&a), port: sa_port(&a))
        case AF_INET6:
            var bytes = [UInt8](repeating: 0, count: 16)
            sa_in6(&a, &bytes)
            let high = bytes[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let low = bytes[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return PeerAddress(high: high, low: low, port: sa_port(&a))
        default: return nil
        }
    }
}
