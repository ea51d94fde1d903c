import CLibre
import Glibc
import ParleyCrypto
import ParleyNet
import ParleyWire

/// A call into a room that has a PIN, before the PIN: answered (200 OK with the SDP answer, so the phone's keys
/// reach the gateway as RFC 4733 telephone-events on its media socket) but no member of anything yet, and nothing
/// sent to it. The right PIN joins it to the room (`SIPCall.join`, the same socket); three wrong tries or 30 s end it
/// with a BYE. Lives on the SIP thread, held by `SIPGateway.lobbies` until the call ends.
final class SIPLobby {
    unowned let gateway: SIPGateway
    let room: String
    let pin: String
    let offer: SIPAudioOffer
    let caller: String
    let signalling: PeerAddress
    let identity: String
    let phoneSocket: PhoneSocket
    var session: OpaquePointer?
    /// In the room, once the PIN was right.
    var call: SIPCall?
    private var dtmf = DTMFCollector()
    /// With SRTP: the gateway's key (in the answer, then the call's) and the phone's, to read its keys with.
    private let localKey: SDESKey?
    private let srtpIn: LibSRTPSession?
    private var wrongTries = 0
    private var ended = false
    private let timer = UnsafeMutablePointer<tmr>.allocate(capacity: 1)
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2_048, alignment: 16)

    init(gateway: SIPGateway, room: String, pin: String, offer: SIPAudioOffer, caller: String, signalling: PeerAddress,
         identity: String, phoneSocket: PhoneSocket) {
        self.gateway = gateway
        self.room = room
        self.pin = pin
        self.offer = offer
        self.caller = caller
        self.signalling = signalling
        self.identity = identity
        self.phoneSocket = phoneSocket
        localKey = offer.srtp == nil ? nil : SDESKey.random()
        srtpIn = offer.srtp.flatMap { SDESKey(base64: $0.key) }.flatMap { LibSRTPSession(key: $0, direction: .inbound) }
        tmr_init(timer)
    }

    deinit {
        timer.deallocate()
        buffer.deallocate()
    }

    /// Answers the INVITE, listens for the phone's keys, starts the 30 s; false when libre could not answer.
    func accept(_ msg: UnsafePointer<sip_msg>) -> Bool {
        let sdp = offer.answer(host: gateway.settings.mediaHost, port: phoneSocket.localAddress?.port ?? 0,
                               sessionID: UInt64.random(in: 1...UInt64(Int64.max)), version: 1,
                               localKey: localKey?.base64)
        guard offer.srtp == nil || srtpIn != nil, let body = SIPGateway.buffer(sdp) else { return false }
        defer { _ = mem_deref(UnsafeMutableRawPointer(body)) }
        let me = Unmanaged.passUnretained(self).toOpaque()
        let err = parley_sipsess_accept(&session, gateway.sessionSocket, msg, 200, "OK", "parley", body,
            { descp, msg, arg in
                guard let arg, let msg, let call = Unmanaged<SIPLobby>.fromOpaque(arg).takeUnretainedValue().call
                else { return EPROTO }
                return call.reoffer(msg, answer: descp)
            },
            { _, _ in 0 },
            { _, _ in },
            { err, _, arg in
                guard let arg else { return }
                let lobby = Unmanaged<SIPLobby>.fromOpaque(arg).takeUnretainedValue()
                lobby.session = nil  // libre frees it
                lobby.call?.session = nil
                lobby.end(err == 0 || err == ECONNRESET ? "BYE" : String(cString: strerror(err)))
            }, me)
        guard err == 0 else { return false }
        _ = fd_listen(phoneSocket.fd, Int32(FD_READ), { _, arg in
            guard let arg else { return }
            Unmanaged<SIPLobby>.fromOpaque(arg).takeUnretainedValue().drain()
        }, me)
        tmr_start(timer, UInt64(SIPRoomPINs.deadlineNanoseconds / 1_000_000), { arg in
            guard let arg else { return }
            let lobby = Unmanaged<SIPLobby>.fromOpaque(arg).takeUnretainedValue()
            guard lobby.call == nil else { return }
            lobby.end("no PIN within \(SIPRoomPINs.deadlineNanoseconds / 1_000_000_000) s")
        }, me)
        return true
    }

    /// The phone's packets before the PIN: only its telephone-events are read; its audio goes nowhere.
    private func drain() {
        while call == nil, !ended, let (received, from) = phoneSocket.receive(into: buffer) {
            var n = received
            if let srtpIn {
                guard received >= 2, !(200...204).contains(buffer[1]),
                      let plain = try? srtpIn.unprotectRTP(buffer, length: received) else { continue }
                n = plain
            }
            guard from.high == signalling.high && from.low == signalling.low
                    || from.high == offer.address.high && from.low == offer.address.low,
                  let packet = try? RTPPacketView(parsing: UnsafeRawBufferPointer(rebasing: buffer[0..<n])),
                  packet.payloadType == offer.telephoneEvent,
                  dtmf.take(UnsafeRawBufferPointer(rebasing: buffer[packet.payloadRange]), timestamp: packet.timestamp)
                    != nil else { continue }
            switch SIPRoomPINs.judge(dtmf.digits, pin: pin) {
            case .more: continue
            case .right: return join()
            case .wrong:
                wrongTries += 1
                dtmf.clear()
                gateway.log("sip: \(identity), a wrong PIN for room \(room) (\(wrongTries) of \(SIPRoomPINs.tries))")
                if wrongTries >= SIPRoomPINs.tries { return end("\(SIPRoomPINs.tries) wrong PINs") }
            }
        }
    }

    /// The right PIN: the call joins the room on the same socket.
    private func join() {
        tmr_cancel(timer)
        fd_close(phoneSocket.fd)
        switch SIPCall.join(gateway: gateway, room: room, offer: offer, caller: caller, from: signalling,
                            identity: identity, phoneSocket: phoneSocket, localKey: localKey) {
        case .success(let joined):
            joined.session = session
            call = joined
            gateway.count { $0.answered += 1 }
            gateway.log("sip: \(identity) keyed the PIN and joined room \(room) (\(offer.codecName))")
        case .failure(let e):
            end("the PIN was right but the room refused: \(e.detail ?? e.reason)")
        }
    }

    /// Ends the call once: BYE when it is up, the member out of its room, the lobby forgotten.
    func end(_ why: String) {
        guard !ended else { return }
        ended = true
        tmr_cancel(timer)
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
        gateway.lobbies.removeValue(forKey: ObjectIdentifier(self))
        gateway.log("sip: \(identity) left room \(room): \(why)" + (call.map { "; \($0.media.rtcp.summary)" } ?? ""))
    }
}
