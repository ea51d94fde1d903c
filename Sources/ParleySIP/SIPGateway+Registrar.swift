import CLibre
import Glibc
import ParleyNet
import ParleyWire

/// How a request's credentials came out.
enum SIPAuthentication: Equatable {
    /// Good: the identity they were minted for.
    case identity(String)
    /// None, or a nonce used or lapsed: challenge (again, `stale`).
    case challenge(stale: Bool)
    /// Wrong, unknown or lapsed credentials.
    case refused(String)
}

/// The registrar: devices REGISTER with the credentials the backend minted (`POST /v1/sip/credentials`), digest with
/// single-use nonces (`SIPNonces`), and each registered contact is one device of its identity online for calls.
extension SIPGateway {
    /// Credentials for `identity` (any thread): nil when the gateway has no key, or the identity cannot have any.
    public func credentials(for identity: String, lifetime: Int64) -> SIPCredentials.Minted? {
        guard let credentials = settings.credentials, SIPCredentials.validIdentity(identity) else { return nil }
        return credentials.mint(identity: identity, now: Int64(Clock.unixSeconds()), lifetime: lifetime)
    }

    /// The registrar's URI (what devices register with).
    public var registrarURI: String {
        let host = settings.listen.isWildcard ? settings.mediaHost : settings.listen
        return "sip:\(host.host):\(settings.listen.port)"
    }

    /// On the SIP thread: a request outside any dialog; true when the gateway answered it here (REGISTER).
    /// Whether `msg` was malformed and is done with: answered 400/483 (within its source's budget) or, an ACK,
    /// dropped. False: whole, on to the other listeners.
    func refuseMalformed(_ msg: UnsafePointer<sip_msg>) -> Bool {
        let verdict = SIPRequestCheck.judge(SIPRequestCheck.Fields(msg))
        guard verdict != .pass else { return false }
        count { $0.malformed += 1 }
        guard case .answer(let status, let reason, let why) = verdict,
              let source = Self.address(msg.pointee.src),
              malformedLimit.allow(source, now: Clock.monotonicNanoseconds()) else { return true }
        log("sip: \(status) \(reason) to \(Self.string(msg.pointee.met).prefix(32)) from \(source): \(why)")
        _ = parley_sip_reply(sip, msg, status, reason, "")
        return true
    }

    func request(_ msg: UnsafePointer<sip_msg>) -> Bool {
        guard Self.string(msg.pointee.met) == "REGISTER" else { return false }
        guard let source = Self.address(msg.pointee.src) else { return true }
        guard registerLimit.allow(source, now: Clock.monotonicNanoseconds()) else {
            count { $0.rateLimited += 1 }
            return true
        }
        let identity: String
        switch authenticate(msg) {
        case .identity(let i): identity = i
        case .challenge(let stale):
            challenge(msg, stale: stale)
            return true
        case .refused(let why):
            count { $0.authenticationFailures += 1 }
            log("sip: 403 to a REGISTER from \(source): \(why)")
            _ = parley_sip_reply(sip, msg, 403, "Forbidden", "")
            return true
        }
        let aor = Self.string(msg.pointee.to.uri.user)
        guard aor == identity else {
            count { $0.authenticationFailures += 1 }
            log("sip: 403 to a REGISTER from \(source): credentials of \(identity) for \(aor)")
            _ = parley_sip_reply(sip, msg, 403, "Forbidden", "")
            return true
        }
        register(msg, identity: identity, source: source)
        return true
    }

    private func register(_ msg: UnsafePointer<sip_msg>, identity: String, source: PeerAddress) {
        let expiresHeader = Int64(Self.string(msg.pointee.expires))
        guard let header = sip_msg_hdr(msg, SIP_HDR_CONTACT) else {  // a query: the bindings as they are
            _ = parley_sip_reply(sip, msg, 200, "OK", contacts(of: identity))
            return
        }
        var value = header.pointee.val
        if Self.string(value).trimmingSpaces == "*" {
            guard expiresHeader == 0 else { _ = parley_sip_reply(sip, msg, 400, "Bad Request", ""); return }
            unregister(registrations.remove(identity: identity, contact: nil), why: "unregistered")
            _ = parley_sip_reply(sip, msg, 200, "OK", "")
            return
        }
        var addr = sip_addr()
        guard sip_addr_decode(&addr, &value) == 0 else {
            _ = parley_sip_reply(sip, msg, 400, "Bad Request", "")
            return
        }
        let contact = Self.string(addr.auri)
        guard contact.hasPrefix("sip:"), contact.utf8.count <= 256,
              !contact.unicodeScalars.contains(where: { $0.value < 0x21 || $0 == "<" || $0 == ">" || $0 == "\"" })
        else { _ = parley_sip_reply(sip, msg, 400, "Bad Request", ""); return }
        let seconds = Self.expiresParameter(Self.string(addr.params)) ?? expiresHeader ?? 3_600
        if seconds == 0 {
            unregister(registrations.remove(identity: identity, contact: contact), why: "unregistered")
            _ = parley_sip_reply(sip, msg, 200, "OK", contacts(of: identity))
            return
        }
        let stream = newStream()
        switch registrations.register(identity: identity, contact: contact, source: source, seconds: seconds,
                                      now: Clock.monotonicNanoseconds(), stream: stream) {
        case .full:
            _ = parley_sip_reply(sip, msg, 503, "Service Unavailable", "")
            return
        case .refreshed:
            break
        case .added(let binding, let replaced):
            if let replaced { unregister([replaced], why: "replaced by a newer device") }
            guard rooms.openPresence(stream: binding.stream, identity: identity, name: identity) else {
                _ = registrations.remove(identity: identity, contact: contact)
                _ = parley_sip_reply(sip, msg, 503, "Service Unavailable", "")
                return
            }
            log("sip: \(identity) registered \(contact) from \(source)")
        }
        count { $0.registeredDevices = registrations.devices }
        _ = parley_sip_reply(sip, msg, 200, "OK", contacts(of: identity))
    }

    /// `Contact:` lines of `identity`'s bindings with what is left of each.
    private func contacts(of identity: String) -> String {
        let now = Clock.monotonicNanoseconds()
        return registrations.bindings(of: identity).map {
            "Contact: <\($0.contact)>;expires=\(max(0, ($0.expiresAt - now) / 1_000_000_000))\r\n"
        }.joined()
    }

    /// Bindings gone: their presence offline, a call ringing on one of them cancelled.
    func unregister(_ gone: [SIPRegistrations.Binding], why: String) {
        for b in gone {
            routed[b.stream]?.finish("the device is gone (\(why))")
            rooms.closePresence(stream: b.stream)
            log("sip: \(b.identity)'s device \(b.contact): \(why)")
        }
        count { $0.registeredDevices = registrations.devices }
    }

    /// Checks a request's digest credentials (`Authorization` or `Proxy-Authorization`).
    func authenticate(_ msg: UnsafePointer<sip_msg>) -> SIPAuthentication {
        guard let credentials = settings.credentials else { return .refused("this relay mints no SIP credentials") }
        guard let header = sip_msg_hdr(msg, SIP_HDR_AUTHORIZATION) ?? sip_msg_hdr(msg, SIP_HDR_PROXY_AUTHORIZATION)
        else { return .challenge(stale: false) }
        var value = header.pointee.val
        var response = httpauth_digest_resp()
        guard httpauth_digest_response_decode(&response, &value) == 0 else {
            return .refused("a malformed Authorization")
        }
        guard Self.string(response.realm) == credentials.realm else { return .challenge(stale: false) }
        let username = Self.string(response.username)
        guard let (identity, password) = credentials.check(username: username, now: Int64(Clock.unixSeconds())) else {
            return .refused("credentials \(username.prefix(80)) unknown or lapsed")
        }
        var ha1 = [UInt8](repeating: 0, count: 16)
        let secret = Array("\(username):\(credentials.realm):\(password)".utf8)
        md5(secret, secret.count, &ha1)
        var method = msg.pointee.met
        guard httpauth_digest_response_auth(&response, &method, ha1) == 0 else {
            return .refused("a wrong password for \(identity)")
        }
        guard nonces.consume(Self.string(response.nonce), now: Clock.monotonicNanoseconds()) else {
            return .challenge(stale: true)
        }
        return .identity(identity)
    }

    /// 401 with a fresh nonce.
    func challenge(_ msg: UnsafePointer<sip_msg>, stale: Bool) {
        guard let realm = settings.credentials?.realm else {
            _ = parley_sip_reply(sip, msg, 403, "Forbidden", "")
            return
        }
        var random = [UInt8](repeating: 0, count: 16)
        rand_bytes(&random, random.count)
        let nonce = nonces.issue(random: random, now: Clock.monotonicNanoseconds())
        let header = "WWW-Authenticate: Digest realm=\"\(realm)\", nonce=\"\(nonce)\", algorithm=MD5, qop=\"auth\""
            + (stale ? ", stale=true" : "") + "\r\n"
        _ = parley_sip_reply(sip, msg, 401, "Unauthorized", header)
    }

    /// Whether the request carries digest credentials.
    static func hasCredentials(_ msg: UnsafePointer<sip_msg>) -> Bool {
        sip_msg_hdr(msg, SIP_HDR_AUTHORIZATION) != nil || sip_msg_hdr(msg, SIP_HDR_PROXY_AUTHORIZATION) != nil
    }

    /// A Contact's `expires=` parameter.
    static func expiresParameter(_ params: String) -> Int64? {
        for p in params.split(separator: ";") {
            let kv = p.split(separator: "=", maxSplits: 1)
            if kv.count == 2, kv[0].trimmingSpaces.lowercased() == "expires" { return Int64(kv[1].trimmingSpaces) }
        }
        return nil
    }

    /// Every 5 s on the SIP thread: lapsed registrations offline.
    func scheduleSweep() {
        tmr_start(sweepTimer, 5_000, { arg in
            guard let arg else { return }
            let gateway = Unmanaged<SIPGateway>.fromOpaque(arg).takeUnretainedValue()
            let lapsed = gateway.registrations.expire(now: Clock.monotonicNanoseconds())
            gateway.unregister(lapsed, why: "registration lapsed")
            gateway.scheduleSweep()
        }, Unmanaged.passUnretained(self).toOpaque())
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: String {
        let scalars = unicodeScalars.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }
        return String(String.UnicodeScalarView(scalars.reversed()))
    }
}
