/// Parsing and serializing of the presence and call messages (types 0x08–0x0B and 0x8C–0x8D).
///
/// ```
/// 0x08 register       token (1), cookie (3, after a retry), nonce (4)
/// 0x09 call invite    call id (33, u32 ≠ 0), to (25, callee identity), key share (48, optional)
/// 0x0A call answer    call id (33), accept (34, u8: 1 accept, 0 decline), key share (48, optional)
/// 0x0B call hang-up   call id (33)
/// 0x8C incoming call  call id (33), identity (12, caller), name (35, caller's display name; may be absent),
///                     key share (48, the caller's; optional), chat request (57, u8 1: no accepted chat with the caller)
/// 0x8D call status    call id (33), call state (36, u8), reason (19), room (2) and token (1) with `answered`,
///                     key share (48, the callee's, to the caller with `answered`; optional)
/// ```
/// A key share is absent or exactly 32 bytes (`CallKeyShare.length`); any other length refuses the datagram
/// (`.badLength`). Peers that predate the field skip it as an unknown tag.
extension SignalDatagram {
    static func callMessage(type: UInt8, _ f: SignalFields) throws(WireError) -> SignalMessage {
        switch type {
        case 0x08:
            return .register(RegisterRequest(token: try f.string(.token), cookie: try f.optionalData(.cookie, maxCount: 64),
                                             nonce: try f.data(.nonce, maxCount: 32)))
        case 0x09:
            let to = try f.string(.to, maxCount: Signalling.maxDatagramSize)  // the relay answers a name it cannot know
            guard !to.isEmpty else { throw .badField }
            return .callInvite(callID: try callID(f), to: to, keyShare: try keyShare(f))
        case 0x0A: return .callAnswer(callID: try callID(f), accept: try f.u8(.accept) != 0, keyShare: try keyShare(f))
        case 0x0B: return .callHangup(callID: try callID(f))
        case 0x8C:
            return .incomingCall(callID: try callID(f), fromIdentity: try f.string(.identity, maxCount: 128),
                                 fromName: try f.optionalString(.name, maxCount: 255), keyShare: try keyShare(f),
                                 request: try f.bool(.chatRequest))
        case 0x8D:
            guard let state = CallState(rawValue: try f.u8(.callState)) else { throw .badField }
            let status = CallStatus(callID: try callID(f), state: state, reason: try f.optionalString(.reason, maxCount: 512),
                                    room: try f.optionalString(.room, maxCount: 128), token: try f.optionalString(.token),
                                    keyShare: try keyShare(f))
            // Only an answered call names a room, and then it must name one and carry its token.
            guard (state == .answered) == !status.room.isEmpty, status.room.isEmpty == status.token.isEmpty else { throw .badField }
            return .callStatus(status)
        default:
            throw .unknownType
        }
    }

    /// The optional key share: absent (empty) or exactly `CallKeyShare.length` bytes.
    private static func keyShare(_ f: SignalFields) throws(WireError) -> [UInt8] {
        let share = try f.optionalData(.callKeyShare, maxCount: CallKeyShare.length)
        guard share.isEmpty || share.count == CallKeyShare.length else { throw .badLength }
        return share
    }

    private static func callID(_ f: SignalFields) throws(WireError) -> UInt32 {
        let id = try f.u32(.callID)
        guard id != 0 else { throw .badField }
        return id
    }

    static func writeCall(_ message: SignalMessage, _ w: inout SignalWriter) {
        switch message {
        case .register(let r):
            w.field(.token, string: r.token)
            if !r.cookie.isEmpty { w.field(.cookie, r.cookie) }
            w.field(.nonce, r.nonce)
        case .callInvite(let id, let to, let share):
            w.field(.callID, u32: id); w.field(.to, string: to)
            if !share.isEmpty { w.field(.callKeyShare, share) }
        case .callAnswer(let id, let accept, let share):
            w.field(.callID, u32: id); w.field(.accept, u8: accept ? 1 : 0)
            if !share.isEmpty { w.field(.callKeyShare, share) }
        case .callHangup(let id):
            w.field(.callID, u32: id)
        case .incomingCall(let id, let identity, let name, let share, let request):
            w.field(.callID, u32: id); w.field(.identity, string: identity)
            if !name.isEmpty { w.field(.name, string: name) }
            if !share.isEmpty { w.field(.callKeyShare, share) }
            if request { w.field(.chatRequest, u8: 1) }
        case .callStatus(let s):
            w.field(.callID, u32: s.callID); w.field(.callState, u8: s.state.rawValue)
            if !s.reason.isEmpty { w.field(.reason, string: s.reason) }
            if !s.room.isEmpty { w.field(.room, string: s.room) }
            if !s.token.isEmpty { w.field(.token, string: s.token) }
            if !s.keyShare.isEmpty { w.field(.callKeyShare, s.keyShare) }
        default:
            break
        }
    }
}
