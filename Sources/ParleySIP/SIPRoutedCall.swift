import CLibre
import Glibc
import ParleyNet
import ParleyWire

/// A SIP call to or from an identity, run by the relay's calls (`CallRouter`) as any Parley call is: the SIP party is
/// one more device online for calls (`SIPRoomDirectory.openPresence`), and an answered call puts both parties in the
/// call's private room, where the SIP side is a plain-RTP member (`SIPCall`).
///
/// - `caller`: a phone's INVITE to `sip:IDENTITY@…` (from a trunk, or from a device that authenticated). Its offer is
///   kept, the INVITE held with 183 Session Progress (no SDP); the relay rings the identity's devices (its Parley
///   clients, pages and registered SIP devices) and says how it went: ringing → 180 Ringing; answered → the room,
///   then 200 OK with the gateway's answer; unavailable → 480, declined or busy → 486, no answer → 408, failed →
///   500. The phone's CANCEL or BYE hangs up.
/// - `device`: a call rings on a registered SIP device: an INVITE to its contact (at the address it registered from).
///   Its 200 OK accepts the call in the relay; its refusal (486, 603, …) or no answer declines it; the relay's end of
///   the call (answered elsewhere, the caller's cancel, the ring timeout) cancels the INVITE or ends the dialog.
///
/// Lives on the SIP thread, held by `SIPGateway.routed` under its presence stream until it ends.
final class SIPRoutedCall {
    enum Side { case caller, device }

    unowned let gateway: SIPGateway
    let side: Side
    /// The SIP party's presence in the relay.
    let stream: UInt64
    /// The SIP party's identity in the relay's calls.
    let identity: String
    /// Its display name.
    let name: String
    /// The other party, for the log (the callee, or the caller).
    let peer: String
    /// The caller's stream is this call's own (closed at its end); a device's is its registration's.
    let ownsStream: Bool
    let phoneSocket: PhoneSocket
    /// Where the SIP party's signalling comes from.
    var signalling: PeerAddress
    var callID: UInt32?
    var session: OpaquePointer?
    /// The phone's SDP: the caller's offer, or the device's answer once it answered.
    var phoneSDP: SIPAudioOffer?
    /// In the call's room, once answered.
    var call: SIPCall?
    /// A trunk's credentials for a call placed through it, when it challenges.
    private(set) var auth: SIPTrunkAuth?
    private var finished = false

    init(gateway: SIPGateway, side: Side, stream: UInt64, identity: String, name: String, peer: String,
         ownsStream: Bool, phoneSocket: PhoneSocket, signalling: PeerAddress) {
        self.gateway = gateway
        self.side = side
        self.stream = stream
        self.identity = identity
        self.name = name
        self.peer = peer
        self.ownsStream = ownsStream
        self.phoneSocket = phoneSocket
        self.signalling = signalling
    }

    // MARK: The caller's INVITE

    /// Holds the phone's INVITE (183 Session Progress, no SDP); false when libre could not.
    func hold(_ msg: UnsafePointer<sip_msg>) -> Bool {
        let me = Unmanaged.passUnretained(self).toOpaque()
        let err = parley_sipsess_accept_provisional(&session, gateway.sessionSocket, msg, 183, "Session Progress",
            { descp, msg, arg in  // a re-INVITE once in the room: hold, resume
                guard let arg, let msg, let call = Unmanaged<SIPRoutedCall>.fromOpaque(arg).takeUnretainedValue().call
                else { return EPROTO }
                return call.reoffer(msg, answer: descp)
            },
            { _, _ in 0 },
            { _, _ in },
            { err, msg, arg in
                guard let arg else { return }
                Unmanaged<SIPRoutedCall>.fromOpaque(arg).takeUnretainedValue()
                    .sipClosed(err: err, status: msg?.pointee.scode)
            }, me)
        return err == 0
    }

    // MARK: A registered device rung

    /// Sends the INVITE to the device's contact (through the address it registered from); false when libre could not.
    func ring(contact: String, callerIdentity: String, callerName: String, auth: SIPTrunkAuth? = nil) -> Bool {
        self.auth = auth
        let listen = gateway.settings.listen, media = gateway.settings.mediaHost
        guard let body = gateway.offerBody(for: phoneSocket) else { return false }
        defer { _ = mem_deref(UnsafeMutableRawPointer(body)) }
        let host = listen.isWildcard ? media : listen
        let user = SIPGateway.userPart(callerIdentity)
        let from = "sip:\(user)@\(host.host):\(listen.port)"
        // Through the address the device registered from when its Contact names another (a NAT's mapping).
        let direct = contact.contains("@\(signalling.host):\(signalling.port)")
        let route: String? = direct ? nil : "sip:\(signalling.host):\(signalling.port);lr"
        let display = callerName.isEmpty ? callerIdentity : callerName
        let me = Unmanaged.passUnretained(self).toOpaque()
        var started: OpaquePointer?
        let err = parley_sipsess_connect(&started, gateway.sessionSocket, contact, SIPGateway.displayName(display),
                                         from, "parley", route, body, auth == nil ? nil : SIPTrunkAuth.answer,
                                         auth?.pointer,
            { descp, msg, arg in
                guard let arg, let msg, let call = Unmanaged<SIPRoutedCall>.fromOpaque(arg).takeUnretainedValue().call
                else { return EPROTO }
                return call.reoffer(msg, answer: descp)
            },
            { msg, arg in
                guard let arg, let msg else { return EPROTO }
                return Unmanaged<SIPRoutedCall>.fromOpaque(arg).takeUnretainedValue().deviceAnswered(msg)
            },
            { _, _ in },
            { _, _ in },
            { err, msg, arg in
                guard let arg else { return }
                Unmanaged<SIPRoutedCall>.fromOpaque(arg).takeUnretainedValue()
                    .sipClosed(err: err, status: msg?.pointee.scode)
            }, me)
        session = started
        if err != 0 { gateway.log("sip: INVITE to \(contact): \(String(cString: strerror(err)))") }
        return err == 0
    }

    /// The device's 200 OK: its SDP kept, the call accepted in the relay (the room comes as a notice).
    private func deviceAnswered(_ msg: UnsafePointer<sip_msg>) -> Int32 {
        guard let text = SIPGateway.body(msg), case .success(let answer) = SIPAudioOffer.parse(text), let callID else {
            gateway.log("sip: \(identity)'s device answered with nothing the gateway can play: hung up")
            return EPROTO
        }
        phoneSDP = answer
        signalling = SIPGateway.address(msg.pointee.src) ?? signalling
        gateway.rooms.answerCall(stream: stream, identity: identity, callID: callID, accept: true)
        return 0
    }

    // MARK: What the relay says

    /// A notice about this call from the relay.
    func notice(_ notice: SIPCallNotice) {
        guard case .status(let state, let reason, let room) = notice.kind, notice.callID == callID else { return }
        switch state {
        case "ringing":
            if side == .caller, let session { _ = parley_sipsess_progress(session, 180, "Ringing") }
        case "answered":
            joinRoom(room)
        default:
            if call != nil { return finish("\(state): \(reason)") }  // a BYE to the phone
            switch side {
            case .caller:
                let (code, phrase) = Self.refusal(state)
                if let session { _ = parley_sipsess_reject(session, code, phrase) }
                finish("\(code) \(phrase) (\(state)\(reason.isEmpty ? "" : ": \(reason)"))")
            case .device:
                finish("cancelled: \(reason)")  // freeing the pending session sends CANCEL
            }
        }
    }

    /// The SIP status a caller's INVITE is refused with for the relay's final call state.
    static func refusal(_ state: String) -> (UInt16, String) {
        switch state {
        case "unavailable": (480, "Temporarily Unavailable")
        case "declined": (486, "Busy Here")
        case "no_answer": (408, "Request Timeout")
        case "ended": (487, "Request Terminated")
        default: (500, "Server Internal Error")
        }
    }

    /// The call was answered: the SIP side joins its private room; the caller's INVITE is answered 200 OK.
    private func joinRoom(_ room: String) {
        guard call == nil, let offer = phoneSDP, !room.isEmpty else { return }
        let member = "sip-\(gateway.nextCall)"
        gateway.nextCall += 1
        switch SIPCall.join(gateway: gateway, room: room, offer: offer, caller: name, from: signalling,
                            identity: member, phoneSocket: phoneSocket) {
        case .success(let joined):
            joined.session = session
            call = joined
            if side == .caller, !joined.answerRinging() { return finish("libre could not answer the INVITE") }
            gateway.count { $0.answered += 1 }
            gateway.log("sip: \(identity) in a call with \(peer) (room \(room), \(offer.codecName))")
        case .failure(let e):
            if side == .caller, let session { _ = parley_sipsess_reject(session, e.status, e.reason) }
            finish("cannot join the call's room: \(e.detail ?? e.reason)")
        }
    }

    // MARK: The end

    /// libre ended the SIP side (BYE, CANCEL, a refusal or a timeout from the device).
    private func sipClosed(err: Int32, status: UInt16?) {
        session = nil  // libre frees it
        call?.session = nil
        if let callID {
            if side == .device && call == nil && phoneSDP == nil {
                gateway.rooms.answerCall(stream: stream, identity: identity, callID: callID, accept: false)
            } else {
                gateway.rooms.hangUp(stream: stream, identity: identity, callID: callID)
            }
        }
        let why = status.map { $0 >= 300 ? "\($0)" : "BYE" } ?? (err == 0 || err == ECONNRESET ? "BYE" : "\(err)")
        finish(why)
    }

    /// Ends everything this side holds, once: the room's member, the SIP session, the stream it owns.
    func finish(_ why: String) {
        guard !finished else { return }
        finished = true
        if let call {
            call.session = session
            session = nil
            call.close()
            gateway.count { $0.ended += 1 }
        } else {
            fd_close(phoneSocket.fd)
        }
        if let session { _ = mem_deref(UnsafeMutableRawPointer(session)) }
        session = nil
        if ownsStream { gateway.rooms.closePresence(stream: stream) }
        gateway.routed.removeValue(forKey: stream)
        let rtcp = call.map { "; \($0.media.rtcp.summary)" } ?? ""
        gateway.log("sip: \(identity)'s call with \(peer) ended: \(why)\(rtcp)")
    }
}
