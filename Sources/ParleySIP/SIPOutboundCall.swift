import CLibre
import Glibc
import ParleyNet
import ParleyWire

/// A call to place, from any thread to the SIP thread (through libre's thread-safe message queue).
final class SIPDialRequest: @unchecked Sendable {
    let target: SIPTarget
    let room: String
    let identity: String
    let name: String?

    init(target: SIPTarget, room: String, identity: String, name: String?) {
        self.target = target
        self.room = room
        self.identity = identity
        self.name = name
    }
}

/// A call the gateway places (UAC): its offer from a socket facing the phone, the INVITE through its trunk, and at the
/// answer the room side (`SIPCall.join`). Lives on the SIP thread, held by `SIPGateway.outbound` until it ends.
final class SIPOutboundCall {
    unowned let gateway: SIPGateway
    let request: SIPDialRequest
    let trunk: SIPTrunk
    let phoneSocket: PhoneSocket
    var session: OpaquePointer?
    /// Once answered.
    var call: SIPCall?
    /// The trunk's credentials, when it challenges.
    let auth: SIPTrunkAuth?

    init(gateway: SIPGateway, request: SIPDialRequest, trunk: SIPTrunk, phoneSocket: PhoneSocket) {
        self.gateway = gateway
        self.request = request
        self.trunk = trunk
        self.phoneSocket = phoneSocket
        auth = SIPTrunkAuth(trunk)
    }

    /// Sends the INVITE to `nextHop` (the target, or the trunk's proxy as a loose route); false when libre could not.
    func start(nextHop: PeerAddress) -> Bool {
        let listen = gateway.settings.listen, media = gateway.settings.mediaHost
        guard let body = gateway.offerBody(for: phoneSocket) else { return false }
        defer { _ = mem_deref(UnsafeMutableRawPointer(body)) }
        let host = listen.isWildcard ? media : listen
        let from = "sip:parley@\(host.host):\(listen.port)"
        let route: String? = nextHop == request.target.host ? nil : "sip:\(nextHop.host):\(nextHop.port);lr"
        let me = Unmanaged.passUnretained(self).toOpaque()
        var started: OpaquePointer?
        let err = request.target.description.withCString { to in
            withOptionalCString(route) { route in
                parley_sipsess_connect(&started, gateway.sessionSocket, to, "Parley", from, "parley", route, body,
                                       auth == nil ? nil : SIPTrunkAuth.answer, auth?.pointer,
                    { descp, msg, arg in  // a re-INVITE once answered
                        guard let arg, let msg,
                              let call = Unmanaged<SIPOutboundCall>.fromOpaque(arg).takeUnretainedValue().call
                        else { return EPROTO }
                        return call.reoffer(msg, answer: descp)
                    },
                    { msg, arg in  // the answer (200 OK with SDP)
                        guard let arg, let msg else { return EPROTO }
                        return Unmanaged<SIPOutboundCall>.fromOpaque(arg).takeUnretainedValue().answered(msg)
                    },
                    { _, _ in },  // progress (180, 183): ringing
                    { _, _ in },  // established (our ACK sent)
                    { err, msg, arg in
                        guard let arg else { return }
                        let me = Unmanaged<SIPOutboundCall>.fromOpaque(arg).takeUnretainedValue()
                        me.closed(err: err, status: msg?.pointee.scode,
                                  reason: msg.map { SIPGateway.string($0.pointee.reason) })
                    }, me)
            }
        }
        session = started
        return err == 0
    }

    /// The phone's answer: its SDP read as an offer would be, then the room side; a nonzero result ends the call.
    private func answered(_ msg: UnsafePointer<sip_msg>) -> Int32 {
        guard let text = SIPGateway.body(msg), case .success(let answer) = SIPAudioOffer.parse(text) else {
            gateway.log("sip: \(request.target) answered with nothing the gateway can play: hung up")
            return EPROTO
        }
        let signalling = SIPGateway.address(msg.pointee.src) ?? answer.address
        switch SIPCall.join(gateway: gateway, room: request.room, offer: answer, caller: request.name ?? "",
                            from: signalling, identity: request.identity, phoneSocket: phoneSocket) {
        case .success(let joined):
            joined.session = session
            call = joined
            gateway.calls[ObjectIdentifier(joined)] = joined  // from now on it ends as any call does
            gateway.count { $0.answered += 1 }
            gateway.log("sip: \(joined.identity) (\(request.target)) answered and joined room \(request.room) "
                        + "through trunk \(trunk.name) (\(answer.codecName))")
            return 0
        case .failure(let e):
            gateway.log("sip: \(request.target) answered but cannot join room \(request.room): \(e.detail ?? e.reason)")
            return EPROTO
        }
    }

    /// libre ended the session: before an answer, the dial failed; after, the call ended.
    private func closed(err: Int32, status: UInt16?, reason: String?) {
        if let call {
            call.session = nil  // libre frees its own session
            gateway.ended(call, reason: err == 0 || err == ECONNRESET ? "BYE" : String(cString: strerror(err)))
        } else {
            let code = status.flatMap { $0 >= 300 ? $0 : nil } ?? (err == ETIMEDOUT ? 408 : 500)
            let why = reason.flatMap { $0.isEmpty ? nil : $0 }
                ?? (code == 408 ? "no answer" : String(cString: strerror(err)))
            gateway.count { $0.unanswered += 1 }
            gateway.log("sip: \(request.identity), the call to \(request.target) for room \(request.room), ended "
                        + "unanswered: \(code) \(why)")
        }
        if let session { _ = mem_deref(UnsafeMutableRawPointer(session)) }
        session = nil
        gateway.outbound.removeValue(forKey: ObjectIdentifier(self))
    }
}

/// `body` with `text` as a C string, or NULL.
private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}
