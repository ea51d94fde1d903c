import CLibre
import Glibc
import ParleyNet
import ParleyWire

/// A notice on its way to the SIP thread (libre's message queue carries pointers).
final class SIPNoticeBox: @unchecked Sendable {
    let notice: SIPCallNotice
    init(_ notice: SIPCallNotice) { self.notice = notice }
}

/// Calls to and from identities: a phone's INVITE to `sip:IDENTITY@…` placed as a call in the relay, the relay's
/// notices to the gateway's presence streams (`SIPRoutedCall`), a call ringing on a registered device.
extension SIPGateway {
    /// The message queue's id for a notice (1 is a dial request).
    static let noticeMessage: Int32 = 2

    /// Hands the relay's notice for one of the gateway's streams to the SIP thread (any thread; never waits).
    public func deliver(_ notice: SIPCallNotice) {
        guard let mailbox else { return }
        let box = Unmanaged.passRetained(SIPNoticeBox(notice))
        if mqueue_push(mailbox, Self.noticeMessage, box.toOpaque()) != 0 { box.release() }
    }

    /// A fresh presence stream id (the gateway's own range).
    func newStream() -> UInt64 {
        defer { nextStream &+= 1 }
        return nextStream
    }

    /// On the SIP thread: a notice to the call it is about, or a call ringing on a registered device.
    func handle(_ notice: SIPCallNotice) {
        if let routed = routed[notice.stream] {
            if case .incoming = notice.kind {  // one call at a time per device: the relay says busy before this
                return rooms.answerCall(stream: notice.stream, identity: routed.identity, callID: notice.callID,
                                        accept: false)
            }
            return routed.notice(notice)
        }
        guard case .incoming(let from, let name, let callee) = notice.kind else { return }
        guard let device = registrations.binding(stream: notice.stream) else {
            return dial(callee, from: from, name: name, notice: notice)
        }
        guard let phoneSocket = newPhoneSocket() else {
            return rooms.answerCall(stream: notice.stream, identity: device.identity, callID: notice.callID,
                                    accept: false)
        }
        let call = SIPRoutedCall(gateway: self, side: .device, stream: device.stream, identity: device.identity,
                                 name: device.identity, peer: from, ownsStream: false, phoneSocket: phoneSocket,
                                 signalling: device.source)
        call.callID = notice.callID
        guard call.ring(contact: device.contact, callerIdentity: from, callerName: name) else {
            log("sip: \(device.identity)'s device \(device.contact): libre could not send the INVITE")
            call.finish("not rung")
            return rooms.answerCall(stream: notice.stream, identity: device.identity, callID: notice.callID,
                                    accept: false)
        }
        routed[device.stream] = call
        log("sip: ringing \(device.identity)'s device \(device.contact) at \(device.source) for a call from \(from)")
    }

    /// A Parley identity calls a `sip:` address: the relay rang a stand-in for it (`notice.stream`), and the gateway
    /// places the call through the trunk that lets it out (`SIPTrunks.outbound`), or declines it: no trunk, no call.
    func dial(_ callee: String, from: String, name: String, notice: SIPCallNotice) {
        func decline(_ why: String) {
            log("sip: the call from \(from) to \(callee) is not placed: \(why)")
            rooms.answerCall(stream: notice.stream, identity: callee, callID: notice.callID, accept: false)
        }
        guard let target = SIPTarget(parsing: callee) else {
            return decline("not sip:USER@HOST[:PORT], a numeric host")
        }
        guard let (trunk, nextHop) = settings.trunks.outbound(for: target) else {
            count { $0.refusedOutsideTrunks += 1 }
            return decline("no trunk lets a call out to \(target)")
        }
        guard let phoneSocket = newPhoneSocket() else {
            return decline("no socket")
        }
        let call = SIPRoutedCall(gateway: self, side: .device, stream: notice.stream, identity: callee, name: callee,
                                 peer: from, ownsStream: false, phoneSocket: phoneSocket, signalling: nextHop)
        call.callID = notice.callID
        guard call.ring(contact: target.description, callerIdentity: from, callerName: name,
                        auth: SIPTrunkAuth(trunk)) else {
            call.finish("not placed")
            return decline("libre could not send the INVITE")
        }
        routed[notice.stream] = call
        log("sip: calling \(target) for \(from) through trunk \(trunk.name) (via \(nextHop))")
    }

    /// A phone calls `callee` (an identity): its offer kept, the INVITE held, the call placed in the relay.
    func callIdentity(_ msg: UnsafePointer<sip_msg>, callee: String, caller: (identity: String, name: String),
                      source: PeerAddress) {
        guard SIPCredentials.validIdentity(callee) else { return refuse(msg, 404, "Not Found") }
        guard let body = Self.body(msg) else { return refuse(msg, 488, "Not Acceptable Here") }
        let offer: SIPAudioOffer
        switch SIPAudioOffer.parse(body) {
        case .success(let o): offer = o
        case .failure(let refusal): return refuse(msg, refusal.status, refusal.reason)
        }
        guard let phoneSocket = newPhoneSocket() else {
            return refuse(msg, 503, "Service Unavailable")
        }
        let stream = newStream()
        guard rooms.openPresence(stream: stream, identity: caller.identity, name: caller.name) else {
            return refuse(msg, 503, "Service Unavailable", detail: "the relay did not put the caller online")
        }
        let call = SIPRoutedCall(gateway: self, side: .caller, stream: stream, identity: caller.identity,
                                 name: caller.name, peer: callee, ownsStream: true, phoneSocket: phoneSocket,
                                 signalling: source)
        call.phoneSDP = offer
        guard call.hold(msg) else {
            call.finish("libre could not hold the INVITE")
            return refuse(msg, 500, "Server Internal Error")
        }
        routed[stream] = call
        guard let id = rooms.placeCall(stream: stream, identity: caller.identity, callee: callee) else {
            if let session = call.session { _ = parley_sipsess_reject(session, 500, "Server Internal Error") }
            return call.finish("the relay did not take the call")
        }
        call.callID = id
        log("sip: \(caller.identity) from \(source) calls \(callee) (\(offer.codecName))")
    }

    /// Sets (nil: removes) `room`'s PIN, 4-12 digits (any thread): a phone calling into it keys it before it joins.
    public func setPIN(_ pin: String?, for room: String) {
        pins.withLock { $0.set(pin, for: room) }
    }

    /// A call into a room with a PIN: answered, and a member only once the phone keyed it (RFC 4733).
    func enterLobby(_ msg: UnsafePointer<sip_msg>, room: String, pin: String, offer: SIPAudioOffer,
                    source: PeerAddress) {
        guard offer.telephoneEvent != nil else {
            return refuse(msg, 488, "Not Acceptable Here", detail: "room \(room) has a PIN and the phone offers no "
                          + "telephone-event to key it with")
        }
        guard let phoneSocket = newPhoneSocket() else {
            return refuse(msg, 503, "Service Unavailable")
        }
        let lobby = SIPLobby(gateway: self, room: room, pin: pin, offer: offer,
                             caller: Self.string(msg.pointee.from.dname), signalling: source,
                             identity: "sip-\(nextCall)", phoneSocket: phoneSocket)
        nextCall += 1
        guard lobby.accept(msg) else { return refuse(msg, 500, "Server Internal Error") }
        lobbies[ObjectIdentifier(lobby)] = lobby
        log("sip: \(lobby.identity) from \(source) for room \(room): waiting for its PIN")
    }

    /// A socket facing a phone: on the SIP address's host, a port of the kernel's choosing; nil when none is left.
    func newPhoneSocket() -> PhoneSocket? {
        PhoneSocket.open(on: settings.listen)
    }

    /// `sdp` in a libre buffer read from its start (the caller derefs it); nil when it cannot be allocated.
    static func buffer(_ sdp: String) -> UnsafeMutablePointer<mbuf>? {
        guard let mb = mbuf_alloc(sdp.utf8.count) else { return nil }
        _ = mbuf_write_str(mb, sdp)
        mbuf_set_pos(mb, 0)
        return mb
    }

    /// The gateway's own offer (a call it places, or a device it rings) for the phone socket `socket`, in a buffer.
    func offerBody(for socket: PhoneSocket) -> UnsafeMutablePointer<mbuf>? {
        Self.buffer(SIPAudioOffer.offer(host: settings.mediaHost, port: socket.localAddress?.port ?? 0,
                                        sessionID: UInt64.random(in: 1...UInt64(Int64.max))))
    }

    /// A relay identity as a SIP user part: RFC 3261's unreserved characters kept, anything else `-`, 64 at most.
    static func userPart(_ identity: String) -> String {
        String(String.UnicodeScalarView(identity.unicodeScalars.prefix(64).map { c in
            c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c)
                          || "-_.!~*'()+".unicodeScalars.contains(c)) ? c : "-"
        }))
    }

    /// A display name as a quoted string's content: printable, no quotes or backslashes, 64 characters at most.
    static func displayName(_ name: String) -> String {
        String(String.UnicodeScalarView(name.unicodeScalars.prefix(64).filter {
            $0.value >= 0x20 && $0 != "\"" && $0 != "\\"
        }))
    }
}
