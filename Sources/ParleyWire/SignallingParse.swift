// Signalling version 1 parsed: a datagram's header, then each message's fields (presence and calls in
// `SignallingCallCodec.swift`).

extension SignalDatagram {
    /// Parses a signalling datagram, checking magic, version, type and every field it needs.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WireError) {
        guard bytes.count >= Signalling.headerSize else { throw .truncated }
        guard bytes.count <= Signalling.maxDatagramSize else { throw .badLength }
        guard bytes[0] == Signalling.magic, bytes[1] == Signalling.version else { throw .badVersion }
        func u32(_ i: Int) -> UInt32 { UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3]) }
        let type = bytes[2]
        let f = try SignalFields(bytes, from: Signalling.headerSize)
        let message: SignalMessage
        switch type {
        case 0x01:
            message = .join(JoinRequest(token: try f.string(.token), room: try f.string(.room, maxCount: Signalling.maxDatagramSize),
                                        cookie: try f.optionalData(.cookie, maxCount: 64), nonce: try f.data(.nonce, maxCount: 32),
                                        muted: try f.bool(.muted), keyShare: try f.optionalData(.keyShare, maxCount: 64),
                                        speakersFromMedia: try f.bool(.speakersFromMedia),
                                        redundancy: try f.bool(.redundancy)))
        case 0x02: message = .leave
        case 0x03: message = .ping(timestamp: try f.u64(.timestamp))
        case 0x04: message = .setMuted(try f.u8(.muted) != 0)
        case 0x05: message = .sendText(to: try f.optionalString(.to, maxCount: Signalling.maxDatagramSize), fragment: try Self.fragment(f, bytes))
        case 0x06: message = .resume(timestamp: try f.u64(.timestamp), proof: try f.data(.proof, maxCount: 32))
        case 0x07: message = .ack
        case 0x0C: message = .pathResponse(challenge: try f.data(.challenge, maxCount: 32), proof: try f.data(.proof, maxCount: 32))
        case 0x8E: message = .pathChallenge(challenge: try f.data(.challenge, maxCount: 32))
        case 0x81: message = .retry(cookie: try f.data(.cookie, maxCount: 64))
        case 0x82:
            message = .welcome(Welcome(
                nonce: try f.data(.nonce, maxCount: 32), memberID: try f.u32(.memberID), ssrc: try f.u32(.ssrc),
                port: try f.u16(.port), sessionSecret: try f.data(.sessionSecret, maxCount: 64), room: try f.string(.room, maxCount: 128),
                mode: try f.string(.mode, maxCount: 16), identity: try f.string(.identity, maxCount: 128),
                memberCount: try f.u32(.memberCount), keepaliveMilliseconds: try f.u32(.keepalive),
                timeoutMilliseconds: try f.u32(.timeout), flags: MemberFlags(rawValue: try f.u8(.flags)),
                keyShare: try f.optionalData(.keyShare, maxCount: 64), roomMediaKey: try f.optionalData(.roomMediaKey, maxCount: 64),
                streamIndices: try Self.streamIndices(f, bytes), alternates: try Self.alternates(f, bytes)))
        case 0x83:
            guard let code = RefusalCode(rawValue: try f.u16(.code)) else { throw .badField }
            message = .refused(code: code, reason: try f.optionalString(.reason, maxCount: 512))
        case 0x84:
            var members: [MemberEntry] = []
            for r in f.all(.member) { members.append(try MemberEntry(decoding: bytes, r)) }
            message = .memberPage(index: try f.u16(.pageIndex), count: try f.u16(.pageCount), members: members)
        case 0x85:
            guard let kind = MemberEventKind(rawValue: try f.u8(.eventKind)), let r = f.range(.member) else { throw .badField }
            message = .memberEvent(kind: kind, member: try MemberEntry(decoding: bytes, r), reason: try f.optionalString(.reason, maxCount: 512))
        case 0x86:
            var speakers: [SpeakerEntry] = []
            for r in f.all(.speaker) {
                guard r.count == 9 else { throw .badLength }
                let i = r.lowerBound
                speakers.append(SpeakerEntry(memberID: u32(i), ssrc: u32(i + 4), level: bytes[i + 8] & 0x7F))
            }
            message = .speakers(speakers)
        case 0x87:
            message = .text(fromMemberID: try f.u32(.memberID), fromIdentity: try f.string(.identity, maxCount: 128),
                            direct: try f.bool(.direct), fragment: try Self.fragment(f, bytes),
                            sentAt: f.range(.sentAt) == nil ? 0 : try f.u64(.sentAt), request: try f.bool(.chatRequest))
        case 0x91: message = .textStored(messageID: try f.u32(.messageID))
        case 0x0D:
            let to = try f.string(.to, maxCount: Signalling.maxDatagramSize)
            guard !to.isEmpty else { throw .badField }
            message = .chatAnswer(to: to, accept: try f.u8(.accept) != 0)
        case 0x93:
            let material = try f.data(.roomMediaKey, maxCount: 64)
            guard !material.isEmpty else { throw .badField }
            message = .roomKey(keyID: try f.u32(.keyID), material: material, streamIndices: try Self.streamIndices(f, bytes))
        case 0x92:
            guard let state = ChatStatus.State(rawValue: try f.u8(.chatState)) else { throw .badField }
            message = .chatStatus(ChatStatus(identity: try f.string(.identity, maxCount: 128), state: state))
        case 0x88:
            message = .textStatus(messageID: try f.u32(.messageID), delivered: try f.bool(.delivered),
                                  reason: try f.optionalString(.reason, maxCount: 512))
        case 0x89:
            guard let code = GoodbyeCode(rawValue: try f.u16(.code)) else { throw .badField }
            message = .goodbye(code: code, reason: try f.optionalString(.reason, maxCount: 512))
        case 0x8F:
            var delta = MemberDelta(audience: try f.u32(.audienceCount))
            for r in f.all(.member) { delta.joined.append(try MemberEntry(decoding: bytes, r)) }
            for r in f.all(.departure) {
                guard r.count >= 4, r.count <= 4 + 512 else { throw .badLength }
                let i = r.lowerBound
                delta.left.append(MemberDelta.Departure(memberID: u32(i), reason: try SignalFields.decodeUTF8(Array(bytes[(i + 4)..<r.upperBound]))))
            }
            message = .memberDelta(delta)
        case 0x8A: message = .pong(timestamp: try f.u64(.timestamp))
        case 0x8B: message = .resumed
        case 0x90: message = .recording(active: try f.u8(.recording) != 0, id: try f.optionalString(.recordingID, maxCount: 64))
        case 0x08, 0x09, 0x0A, 0x0B, 0x8C, 0x8D: message = try Self.callMessage(type: type, f)
        default: throw .unknownType
        }
        self.init(connectionID: u32(4), sequence: u32(8), ack: u32(12), message: message)
        if message.isReliable != (sequence != 0) { throw .badField }
    }

    private static func alternates(_ f: SignalFields, _ b: UnsafeRawBufferPointer) throws(WireError) -> [String] {
        let ranges = f.all(.alternateNode)
        guard ranges.count <= Welcome.maxAlternates else { throw .badField }
        var out: [String] = []
        for r in ranges {
            guard r.count <= NodePointer.maxLength else { throw .badLength }
            out.append(try SignalFields.decodeUTF8(Array(b[r])))
        }
        return out
    }

    private static func streamIndices(_ f: SignalFields, _ b: UnsafeRawBufferPointer) throws(WireError) -> [Welcome.StreamIndex] {
        let ranges = f.all(.streamIndex)
        guard ranges.count <= Welcome.maxStreamIndices else { throw .badField }
        var out: [Welcome.StreamIndex] = []
        for r in ranges {
            guard r.count == 10 else { throw .badLength }
            var index: UInt64 = 0
            for i in (r.lowerBound + 4)..<r.upperBound { index = index << 8 | UInt64(b[i]) }
            let i = r.lowerBound
            out.append(Welcome.StreamIndex(ssrc: UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3]),
                                           index: index))
        }
        return out
    }

    private static func fragment(_ f: SignalFields, _ b: UnsafeRawBufferPointer) throws(WireError) -> TextFragment {
        var fragment = TextFragment(messageID: try f.u32(.messageID), index: try f.u8(.fragmentIndex),
                                    count: try f.u8(.fragmentCount), chunk: try f.data(.chunk, maxCount: Signalling.maxTextFragmentBytes))
        guard fragment.count >= 1, Int(fragment.count) <= Signalling.maxTextFragments, fragment.index < fragment.count
        else { throw .badField }
        // Attachment ids: on the first fragment only, at most 4, each 22 base64url characters spelling 16 bytes.
        let ids = f.all(.attachment)
        guard ids.isEmpty || fragment.index == 0, ids.count <= TextAttachments.maxCount else { throw .badField }
        for r in ids {
            guard r.count == TextAttachments.idLength else { throw .badLength }
            guard TextAttachments.isID(utf8: b[r]) else { throw .badField }
            fragment.attachments.append(String(decoding: b[r], as: UTF8.self))
        }
        return fragment
    }

    /// Parses from an array (tests and tools).
    public init(parsing bytes: [UInt8]) throws(WireError) {
        let result: Result<SignalDatagram, WireError> = bytes.withUnsafeBytes { b in Result { () throws(WireError) in try SignalDatagram(parsing: b) } }
        self = try result.get()
    }
}
