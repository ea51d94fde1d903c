import CLibre
import Glibc
import ParleyCrypto
import ParleyNet
import ParleyWire

/// One answered SIP call into a room: libre's session (its dialog: re-INVITEs, BYE), the media (`SIPCallMedia`) on
/// the same event loop, the room membership. Lives on the SIP thread; `SIPGateway` holds it until it ends.
final class SIPCall {
    unowned let gateway: SIPGateway
    let room: String
    let identity: String
    let media: SIPCallMedia
    var offer: SIPAudioOffer
    var session: OpaquePointer?
    private var version: UInt64 = 1
    private let sessionID = UInt64.random(in: 1...UInt64(Int64.max))
    private var closed = false
    /// The RTCP report timer (RFC 3550's 5 s, randomized by half either way).
    private let reportTimer = UnsafeMutablePointer<tmr>.allocate(capacity: 1)

    /// The gateway's SDES key with the phone (SRTP), named in each answer.
    let localKey: SDESKey?

    private init(gateway: SIPGateway, room: String, identity: String, media: SIPCallMedia, offer: SIPAudioOffer,
                 localKey: SDESKey?) {
        self.localKey = localKey
        self.gateway = gateway
        self.room = room
        self.identity = identity
        self.media = media
        self.offer = offer
    }

    /// Sockets, the transcoder, the room membership; or why not, as a SIP status.
    static func open(gateway: SIPGateway, room: String, offer: SIPAudioOffer, caller: String,
                     from signalling: PeerAddress, number: Int)
        -> Result<SIPCall, SIPRoomError> {
        guard let phoneSocket = gateway.newPhoneSocket() else {
            return .failure(SIPRoomError(status: 503, reason: "Service Unavailable", detail: "no even RTP port free"))
        }
        return join(gateway: gateway, room: room, offer: offer, caller: caller, from: signalling,
                    identity: "sip-\(number)", phoneSocket: phoneSocket)
    }

    /// The call's room side, once its phone side is known: the loopback socket, the transcoder, the membership, both
    /// sockets on the event loop. A call placed by the gateway comes here at its answer (`SIPOutboundCall`). With
    /// SRTP, `localKey` is the key an answer already named (a random one otherwise).
    static func join(gateway: SIPGateway, room: String, offer: SIPAudioOffer, caller: String,
                     from signalling: PeerAddress, identity: String, phoneSocket: PhoneSocket, localKey: SDESKey? = nil)
        -> Result<SIPCall, SIPRoomError> {
        var keys: (remote: SDESKey, local: SDESKey)?
        if let sdes = offer.srtp {
            guard let remote = SDESKey(base64: sdes.key) else {
                return .failure(SIPRoomError(status: 488, reason: "Not Acceptable Here",
                                             detail: "the phone's SRTP key is not 30 bytes of base64"))
            }
            keys = (remote, localKey ?? SDESKey.random())
        }
        let host = gateway.settings.listen
        let loopback = host.isIPv4 ? PeerAddress(ipv4: 127, 0, 0, 1, port: 0) : PeerAddress(high: 0, low: 1, port: 0)
        let bridge: G711OpusBridge
        do {
            bridge = try G711OpusBridge(law: offer.law)
        } catch {
            return .failure(SIPRoomError(status: 503, reason: "Service Unavailable", detail: "\(error)"))
        }
        let name = caller.isEmpty || caller.utf8.count > 64
            || caller.unicodeScalars.contains(where: { $0.value < 0x20 }) ? nil : caller
        // The room side's own loopback port. A port an ended call let go of may still be its member's address for a
        // moment (the relay removes that member after the call closed the socket): then another port, the refused
        // ones held open meanwhile so that the kernel does not hand the same one back.
        var refusedSockets: [UDPSocket] = []
        var joined: (UDPSocket, SIPRoomLeg)?
        while joined == nil {
            guard let socket = try? UDPSocket(bindingTo: loopback, bufferBytes: 256 << 10),
                  let source = socket.localAddress else {
                return .failure(SIPRoomError(status: 503, reason: "Service Unavailable", detail: "no loopback socket"))
            }
            switch gateway.rooms.join(room: room, identity: identity, name: name, source: source) {
            case .success(let l): joined = (socket, l)
            case .failure(let e) where e.detail?.hasSuffix("is already a member's address") == true
                && refusedSockets.count < 3:
                refusedSockets.append(socket)
            case .failure(let e): return .failure(e)
            }
        }
        let (roomSocket, leg) = joined!
        let media = SIPCallMedia(phoneSocket: phoneSocket, roomSocket: roomSocket, bridge: bridge,
                                 phone: offer.address, signalling: signalling, room: leg,
                                 ssrc: UInt32.random(in: 1...UInt32.max), opus: offer.opus, srtp: keys,
                                 telephoneEvent: offer.telephoneEvent)
        media.held = offer.direction == "sendonly" || offer.direction == "inactive"
        let call = SIPCall(gateway: gateway, room: room, identity: identity, media: media, offer: offer,
                           localKey: keys?.local)
        let me = Unmanaged.passUnretained(call).toOpaque()
        _ = fd_listen(phoneSocket.fd, Int32(FD_READ), { _, arg in
            guard let arg else { return }
            Unmanaged<SIPCall>.fromOpaque(arg).takeUnretainedValue().media.drainPhone()
        }, me)
        _ = fd_listen(roomSocket.fd, Int32(FD_READ), { _, arg in
            guard let arg else { return }
            Unmanaged<SIPCall>.fromOpaque(arg).takeUnretainedValue().media.drainRoom()
        }, me)
        _ = fd_listen(phoneSocket.rtcp.fd, Int32(FD_READ), { _, arg in
            guard let arg else { return }
            Unmanaged<SIPCall>.fromOpaque(arg).takeUnretainedValue().media.drainRTCP()
        }, me)
        tmr_init(call.reportTimer)
        call.scheduleReport()
        gateway.live[ObjectIdentifier(call)] = call  // the gateway's 20 ms tick: digits, silence fill
        media.onDigit = { [unowned call] digit in
            call.gateway.rooms.keyed(room: call.room, identity: call.identity, digit: digit)
        }
        gateway.reachable(room: room, identity: identity, sendsDigits: media.sendsDigits)
        return .success(call)
    }

    /// The gateway's SDP answer to the current offer.
    private func answerBody() -> UnsafeMutablePointer<mbuf>? {
        version += 1
        let sdp = offer.answer(host: gateway.settings.mediaHost, port: media.phoneSocket.localAddress?.port ?? 0,
                               sessionID: sessionID, version: version, localKey: localKey?.base64)
        return SIPGateway.buffer(sdp)
    }

    /// Answers the INVITE with 200 OK and the SDP answer; false when libre could not.
    func accept(_ msg: UnsafePointer<sip_msg>) -> Bool {
        guard let body = answerBody() else { return false }
        defer { _ = mem_deref(UnsafeMutableRawPointer(body)) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let err = parley_sipsess_accept(&session, gateway.sessionSocket, msg, 200, "OK", "parley", body,
            { descp, msg, arg in  // a re-INVITE with an offer: hold, resume, another address
                guard let arg, let msg else { return EPROTO }
                return Unmanaged<SIPCall>.fromOpaque(arg).takeUnretainedValue().reoffer(msg, answer: descp)
            },
            { _, _ in 0 },  // an answer to an offer of ours: the gateway makes none
            { _, _ in },  // established (the ACK came)
            { err, _, arg in
                guard let arg else { return }
                let call = Unmanaged<SIPCall>.fromOpaque(arg).takeUnretainedValue()
                // libre closes with ECONNRESET when the other side sent BYE.
                call.gateway.ended(call, reason: err == 0 || err == ECONNRESET ? "BYE" : String(cString: strerror(err)))
            }, me)
        return err == 0
    }

    /// Answers an INVITE kept ringing (`SIPRoutedCall`: its session came from a provisional accept) with 200 OK and
    /// the SDP answer; false when libre could not.
    func answerRinging() -> Bool {
        guard let session, let body = answerBody() else { return false }
        defer { _ = mem_deref(UnsafeMutableRawPointer(body)) }
        return parley_sipsess_answer(session, 200, "OK", body) == 0
    }

    /// A re-INVITE's offer: the same room, perhaps another address or direction (hold: sendonly or inactive).
    func reoffer(_ msg: UnsafePointer<sip_msg>, answer: UnsafeMutablePointer<UnsafeMutablePointer<mbuf>?>?)
        -> Int32 {
        guard let text = SIPGateway.body(msg), case .success(let next) = SIPAudioOffer.parse(text),
              next.law == offer.law, next.opus == offer.opus, (next.srtp == nil) == (offer.srtp == nil)
        else { return EPROTO }
        if let sdes = next.srtp, sdes.key != offer.srtp?.key {  // the phone's new key (RFC 4568 §7.1.4)
            guard let key = SDESKey(base64: sdes.key), let inbound = LibSRTPSession(key: key, direction: .inbound)
            else { return EPROTO }
            media.srtpIn = inbound
        }
        if next.address.high != offer.address.high || next.address.low != offer.address.low
            || next.address.port != offer.address.port {
            media.phone = next.address
            media.latched = false
        }
        offer = next
        media.held = next.direction == "sendonly" || next.direction == "inactive"
        answer?.pointee = answerBody()
        return 0
    }

    /// The next RTCP report in 2.5-7.5 s (RFC 3550 §6.3.1's 5 s minimum, randomized).
    private func scheduleReport() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        tmr_start(reportTimer, UInt64.random(in: 2_500...7_500), { arg in
            guard let arg else { return }
            let call = Unmanaged<SIPCall>.fromOpaque(arg).takeUnretainedValue()
            call.media.sendReport(cname: "\(call.identity)@parley")
            call.scheduleReport()
        }, me)
    }

    /// Queues `digits` for the phone (sent at the gateway's next ticks); false when they cannot be (`DTMFSender`).
    func sendDigits(_ digits: String) -> Bool {
        !closed && media.sendsDigits && media.digitsOut.enqueue(digits)
    }

    deinit { reportTimer.deallocate() }

    /// Ends the call: BYE when libre's session is still up, the fds and the report timer out of the loop, the member
    /// out of its room.
    func close() {
        guard !closed else { return }
        closed = true
        tmr_cancel(reportTimer)
        gateway.live.removeValue(forKey: ObjectIdentifier(self))
        gateway.reachable(room: room, identity: identity, sendsDigits: nil)
        fd_close(media.phoneSocket.fd)
        fd_close(media.phoneSocket.rtcp.fd)
        fd_close(media.roomSocket.fd)
        if let session { _ = mem_deref(UnsafeMutableRawPointer(session)) }
        session = nil
        gateway.rooms.leave(room: room, identity: identity)
    }
}
