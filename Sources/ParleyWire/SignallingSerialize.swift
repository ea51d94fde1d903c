// Signalling version 1 serialized into a caller-owned buffer (presence and calls in `SignallingCallCodec.swift`).

extension SignalDatagram {
    /// Serializes into `buffer`, returning the bytes written; `bufferTooSmall` if it does not fit
    /// (callers pass a buffer of `Signalling.maxDatagramSize`).
    public func serialize(into buffer: UnsafeMutableRawBufferPointer) throws(WireError) -> Int {
        var w = SignalWriter(buffer)
        w.u8(Signalling.magic); w.u8(Signalling.version); w.u8(message.typeCode); w.u8(0)
        w.u32(connectionID); w.u32(sequence); w.u32(ack)
        switch message {
        case .join(let j):
            w.field(.token, string: j.token); w.field(.room, string: j.room)
            if !j.cookie.isEmpty { w.field(.cookie, j.cookie) }
            w.field(.nonce, j.nonce)
            if j.muted { w.field(.muted, u8: 1) }
            if !j.keyShare.isEmpty { w.field(.keyShare, j.keyShare) }
            if j.speakersFromMedia { w.field(.speakersFromMedia, u8: 1) }
            if j.redundancy { w.field(.redundancy, u8: 1) }
        case .leave, .ack, .resumed: break
        case .ping(let t), .pong(let t): w.field(.timestamp, u64: t)
        case .setMuted(let m): w.field(.muted, u8: m ? 1 : 0)
        case .sendText(let to, let fragment):
            if !to.isEmpty { w.field(.to, string: to) }
            Self.write(fragment, &w)
        case .resume(let t, let proof): w.field(.timestamp, u64: t); w.field(.proof, proof)
        case .retry(let cookie): w.field(.cookie, cookie)
        case .pathChallenge(let c): w.field(.challenge, c)
        case .pathResponse(let c, let proof): w.field(.challenge, c); w.field(.proof, proof)
        case .welcome(let x):
            w.field(.nonce, x.nonce); w.field(.memberID, u32: x.memberID); w.field(.ssrc, u32: x.ssrc)
            w.field(.port, u16: x.port); w.field(.sessionSecret, x.sessionSecret); w.field(.room, string: x.room)
            w.field(.mode, string: x.mode); w.field(.identity, string: x.identity); w.field(.memberCount, u32: x.memberCount)
            w.field(.keepalive, u32: x.keepaliveMilliseconds); w.field(.timeout, u32: x.timeoutMilliseconds)
            w.field(.flags, u8: x.flags.rawValue)
            if !x.keyShare.isEmpty { w.field(.keyShare, x.keyShare) }
            if !x.roomMediaKey.isEmpty { w.field(.roomMediaKey, x.roomMediaKey) }
            for a in x.alternates.prefix(Welcome.maxAlternates) where a.utf8.count <= NodePointer.maxLength { w.field(.alternateNode, string: a) }
            Self.write(x.streamIndices, &w)
        case .refused(let code, let reason):
            w.field(.code, u16: code.rawValue)
            if !reason.isEmpty { w.field(.reason, string: reason) }
        case .memberPage(let index, let count, let members):
            w.field(.pageIndex, u16: index); w.field(.pageCount, u16: count)
            for m in members { w.field(.member, m.encoded) }
        case .memberEvent(let kind, let member, let reason):
            w.field(.eventKind, u8: kind.rawValue); w.field(.member, member.encoded)
            if !reason.isEmpty { w.field(.reason, string: reason) }
        case .memberDelta(let delta):
            w.field(.audienceCount, u32: delta.audience)
            for m in delta.joined { w.field(.member, m.encoded) }
            for d in delta.left { w.field(.departure, Self.encoded(d)) }
        case .speakers(let list):
            for s in list {
                w.u8(SignalTag.speaker.rawValue); w.u16(9); w.u32(s.memberID); w.u32(s.ssrc); w.u8(s.level & 0x7F)
            }
        case .text(let from, let identity, let direct, let fragment, let sentAt, let request):
            w.field(.memberID, u32: from); w.field(.identity, string: identity)
            if direct { w.field(.direct, u8: 1) }
            Self.write(fragment, &w)
            if sentAt != 0 { w.field(.sentAt, u64: sentAt) }
            if request { w.field(.chatRequest, u8: 1) }
        case .textStored(let id):
            w.field(.messageID, u32: id)
        case .chatAnswer(let to, let accept):
            w.field(.to, string: to); w.field(.accept, u8: accept ? 1 : 0)
        case .chatStatus(let status):
            w.field(.identity, string: status.identity); w.field(.chatState, u8: status.state.rawValue)
        case .roomKey(let id, let material, let indices):
            w.field(.keyID, u32: id); w.field(.roomMediaKey, material)
            Self.write(indices, &w)
        case .textStatus(let id, let delivered, let reason):
            w.field(.messageID, u32: id); w.field(.delivered, u8: delivered ? 1 : 0)
            if !reason.isEmpty { w.field(.reason, string: reason) }
        case .goodbye(let code, let reason):
            w.field(.code, u16: code.rawValue)
            if !reason.isEmpty { w.field(.reason, string: reason) }
        case .recording(let active, let id):
            w.field(.recording, u8: active ? 1 : 0)
            if !id.isEmpty { w.field(.recordingID, string: id) }
        case .register, .callInvite, .callAnswer, .callHangup, .incomingCall, .callStatus:
            Self.writeCall(message, &w)
        }
        guard !w.overflow, w.offset <= Signalling.maxDatagramSize else { throw .bufferTooSmall }
        return w.offset
    }

    /// Each stream's position (`streamIndex`: SSRC, 48-bit index), at most `Welcome.maxStreamIndices`.
    private static func write(_ indices: [Welcome.StreamIndex], _ w: inout SignalWriter) {
        for s in indices.prefix(Welcome.maxStreamIndices) {
            w.u8(SignalTag.streamIndex.rawValue); w.u16(10); w.u32(s.ssrc)
            w.u16(UInt16(truncatingIfNeeded: s.index >> 32)); w.u32(UInt32(truncatingIfNeeded: s.index))
        }
    }

    /// A departure's field: member id (4), then the reason (UTF-8, at most 512 bytes).
    static func encoded(_ d: MemberDelta.Departure) -> [UInt8] {
        var out: [UInt8] = []
        for shift in stride(from: 24, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: d.memberID >> UInt32(shift))) }
        var reason = d.reason
        while reason.utf8.count > 512 { reason.removeLast() }  // whole characters: the field stays valid UTF-8
        return out + Array(reason.utf8)
    }

    /// A fragment's fields. Its attachment ids are written as given: `TextFragment.split` is where a sender's are
    /// checked (a datagram the parser refuses would never be acknowledged).
    private static func write(_ fragment: TextFragment, _ w: inout SignalWriter) {
        w.field(.messageID, u32: fragment.messageID); w.field(.fragmentIndex, u8: fragment.index)
        w.field(.fragmentCount, u8: fragment.count); w.field(.chunk, fragment.chunk)
        for id in fragment.attachments { w.field(.attachment, string: id) }
    }

    /// Serializes into a new array (tests and tools; the relay serializes into its own buffers).
    public func serialized() throws(WireError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Signalling.maxDatagramSize)
        let result: Result<Int, WireError> = out.withUnsafeMutableBytes { b in Result { () throws(WireError) in try serialize(into: b) } }
        out.removeSubrange(try result.get()...)
        return out
    }
}
