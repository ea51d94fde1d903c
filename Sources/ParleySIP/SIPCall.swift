import ParleyCrypto
import ParleyNet
import ParleyWire

/// Where a SIP call's audio goes in the relay: the gateway makes each call a plain-RTP member of its room (cleartext
/// on loopback, inside this host) and removes it when the call ends.
public protocol SIPRoomDirectory: AnyObject, Sendable {
    /// Adds `identity` to `room` as a plain-RTP member that sends from and receives at `source`; the relay's address
    /// for its RTP and the Opus payload type, or why not (the room does not exist, it is full).
    func join(room: String, identity: String, name: String?, source: PeerAddress) -> Result<SIPRoomLeg, SIPRoomError>
    /// Removes the call's member from its room.
    func leave(room: String, identity: String)
    /// The call's phone pressed a key in its room (RFC 4733): an event for the room's readers.
    func keyed(room: String, identity: String, digit: Character)

    // The relay's calls (`CallRouter`): a SIP party is a device online for calls under a presence `stream` of the
    // gateway's (`SIPGateway.firstStream` on); what the relay tells it comes back as `SIPCallNotice`s.

    /// Puts `identity` online under `stream` (a registered device, or a caller for its call); false when refused.
    func openPresence(stream: UInt64, identity: String, name: String) -> Bool
    /// Takes `stream` offline (a call it takes part in ends for the other party).
    func closePresence(stream: UInt64)
    /// `stream` calls `callee`: the id its notices carry, or nil when the relay did not take the call.
    func placeCall(stream: UInt64, identity: String, callee: String) -> UInt32?
    /// `stream` accepts or declines the call `callID` ringing on it.
    func answerCall(stream: UInt64, identity: String, callID: UInt32, accept: Bool)
    /// `stream` hangs up (cancels) its call `callID`.
    func hangUp(stream: UInt64, identity: String, callID: UInt32)
}

/// What the relay tells a SIP party about a call (the events a web page online for calls gets).
public struct SIPCallNotice: Equatable, Sendable {
    /// What happened.
    public enum Kind: Equatable, Sendable {
        /// A call rings on this device: from whom (identity, display name), to whom (the device's identity; for a
        /// stand-in the relay made for a call to a `sip:` address, that address).
        case incoming(from: String, name: String, callee: String)
        /// The call's state (`ringing`, `answered`, `declined`, `no_answer`, `unavailable`, `ended`, `failed`), why,
        /// and once answered its private room.
        case status(state: String, reason: String, room: String)
    }

    /// The presence stream it is for.
    public var stream: UInt64
    /// The call it is about.
    public var callID: UInt32
    /// What happened.
    public var kind: Kind

    /// A notice for `stream` about call `callID`.
    public init(stream: UInt64, callID: UInt32, kind: Kind) {
        self.stream = stream
        self.callID = callID
        self.kind = kind
    }
}

/// The relay's side of a call's media: where to send the room's RTP, with which payload type.
public struct SIPRoomLeg: Equatable, Sendable {
    /// The relay's UDP address for the call's RTP (the worker port of its room).
    public var relay: PeerAddress
    /// The payload type the relay sends and expects the room's Opus in.
    public var payloadType: UInt8
    /// The RFC 6464 header extension's id the relay reads a packet's level from (speaker selection).
    public var audioLevelExtensionID: UInt8
    /// The relay's side of one call.
    public init(relay: PeerAddress, payloadType: UInt8, audioLevelExtensionID: UInt8) {
        self.relay = relay
        self.payloadType = payloadType
        self.audioLevelExtensionID = audioLevelExtensionID
    }
}

/// Why a call could not join its room, as a SIP status.
public struct SIPRoomError: Error, Equatable, Sendable {
    /// The SIP status the INVITE is answered with.
    public var status: UInt16
    /// Its reason phrase.
    public var reason: String
    /// For the log: what the relay said.
    public var detail: String?
    /// A refusal with `status` and `reason`, and what the relay said for the log.
    public init(status: UInt16, reason: String, detail: String? = nil) {
        self.status = status
        self.reason = reason
        self.detail = detail
    }
}

/// One call's media: a socket facing the phone (its port in the gateway's SDP answer) and one facing the relay on
/// loopback; each RTP packet is transcoded as it comes (`G711OpusBridge`) and sent on with the gateway's own SSRC,
/// sequence numbers and timestamps (8 kHz towards the phone, 48 kHz towards the room, as RFC 7587 clocks Opus).
/// Only the phone (from the offer's host or the host its SIP came from; the port it sends from is where the room's
/// audio goes, symmetric RTP) and the relay are listened to: anything else is counted and dropped.
final class SIPCallMedia {
    let phoneSocket: PhoneSocket
    let roomSocket: UDPSocket
    let bridge: G711OpusBridge
    var phone: PeerAddress
    /// Where the call's SIP came from: a phone behind a NAT sends its RTP from that host, whatever its SDP says.
    let signalling: PeerAddress
    var latched = false
    let room: SIPRoomLeg
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 2_048, alignment: 16)
    private let out = UnsafeMutableRawBufferPointer.allocate(byteCount: 4_096, alignment: 16)
    private var toRoom: RTPFixedHeader
    /// The phone's RTP timestamp the next packet should carry (its last one plus its samples).
    private var nextPhoneTimestamp: UInt32?
    private var toPhone: RTPFixedHeader
    private(set) var packetsFromPhone = 0, packetsFromRoom = 0, dropped = 0
    /// The phone put the call on hold (its re-INVITE said sendonly or inactive): nothing is sent to it.
    var held = false
    /// The phone's Opus payload type when its packets and the room's pass as they are (no transcoding).
    let opus: UInt8?
    /// SDES-SRTP with the phone (RTP/SAVP): its packets are checked and decrypted with its key, the gateway's
    /// encrypted with its own. Nil: plain RTP.
    var srtpIn: LibSRTPSession?
    let srtpOut: LibSRTPSession?
    /// Added to the phone's RTP timestamps into the room (Opus straight through: both clocks are 48 kHz).
    private let timestampOffset = UInt32.random(in: 0...UInt32.max)
    /// RTCP with the phone: its reports and ours (`SIPCallRTCP`).
    private(set) var rtcp: SIPCallRTCP
    /// Where the phone's RTCP comes from once it came (symmetric, as its RTP); until then its RTP port's next.
    private var phoneRTCP: PeerAddress?
    /// The phone's telephone-event payload type (RFC 4733), when its offer had one.
    let telephoneEvent: UInt8?
    /// The keys the phone presses once in its room: each new press to `onDigit`.
    private var keys = DTMFCollector(capacity: 1)
    var onDigit: ((Character) -> Void)?
    /// Digits to send the phone (`sendDTMF`, one tick per 20 ms), and the current event's RTP timestamp.
    var digitsOut = DTMFSender(clockRate: 8_000)
    private var eventTimestamp: UInt32 = 0
    /// When the last packet went to the phone (monotonic ns): a G.711 stream silent longer than `fillAfter` is
    /// filled with silence (`fillSilence`).
    private var lastToPhone: Int64 = 0
    /// Whether the last packet to the phone was fill: the room's next packet starts a talkspurt (marker).
    private var filling = false
    static let fillAfter: Int64 = 60_000_000

    init(phoneSocket: PhoneSocket, roomSocket: UDPSocket, bridge: G711OpusBridge, phone: PeerAddress,
         signalling: PeerAddress, room: SIPRoomLeg, ssrc: UInt32, opus: UInt8? = nil,
         srtp: (remote: SDESKey, local: SDESKey)? = nil, telephoneEvent: UInt8? = nil) {
        self.opus = opus
        self.telephoneEvent = telephoneEvent
        srtpIn = srtp.flatMap { LibSRTPSession(key: $0.remote, direction: .inbound) }
        srtpOut = srtp.flatMap { LibSRTPSession(key: $0.local, direction: .outbound) }
        self.phoneSocket = phoneSocket
        self.signalling = signalling
        self.roomSocket = roomSocket
        self.bridge = bridge
        self.phone = phone
        self.room = room
        toRoom = RTPFixedHeader(payloadType: room.payloadType, sequenceNumber: UInt16.random(in: 0...UInt16.max),
                                timestamp: UInt32.random(in: 0...UInt32.max), ssrc: ssrc)
        toPhone = RTPFixedHeader(payloadType: opus ?? bridge.law.payloadType,
                                 sequenceNumber: UInt16.random(in: 0...UInt16.max),
                                 timestamp: UInt32.random(in: 0...UInt32.max), ssrc: ssrc ^ 0x5A5A_5A5A)
        rtcp = SIPCallRTCP(ssrc: ssrc ^ 0x5A5A_5A5A, clockRate: opus == nil ? 8_000 : 48_000)
    }

    deinit {
        buffer.deallocate()
        out.deallocate()
    }

    /// Everything waiting on the phone's socket, into the room.
    func drainPhone() {
        while let (received, from) = phoneSocket.receive(into: buffer) {
            var n = received
            if isRTCP(n) {  // RTCP on the RTP port (RFC 5761)
                takeRTCP(n, from: from)
                continue
            }
            if let srtpIn {  // a packet that fails its check is dropped before anything reads it
                guard let plain = try? srtpIn.unprotectRTP(buffer, length: n) else { dropped += 1; continue }
                n = plain
            }
            guard sameHost(from, phone) || sameHost(from, signalling),
                  let packet = try? RTPPacketView(parsing: UnsafeRawBufferPointer(rebasing: buffer[0..<n])) else {
                dropped += 1
                continue
            }
            if let telephoneEvent, packet.payloadType == telephoneEvent {  // a key pressed (RFC 4733)
                let event = UnsafeRawBufferPointer(rebasing: buffer[packet.payloadRange])
                if let digit = keys.take(event, timestamp: packet.timestamp) { onDigit?(digit) }
                continue
            }
            guard packet.payloadType == opus ?? bridge.law.payloadType else {
                dropped += 1
                continue
            }
            if !latched || from.port != phone.port {
                phone = from  // symmetric RTP: answer where the phone sends from (a NAT's mapping)
                latched = true
            }
            rtcp.received(ssrc: packet.ssrc, sequence: packet.sequenceNumber, timestamp: packet.timestamp,
                          now: Clock.monotonicNanoseconds())
            let payload = UnsafeRawBufferPointer(rebasing: buffer[packet.payloadRange])
            if opus != nil {
                passToRoom(payload, timestamp: packet.timestamp, marker: packet.marker)
                continue
            }
            // A jump in the phone's timestamps (a loss, a new stream): what waits is dropped and the room's timeline
            // moves by as much (at 48 kHz), within a second; anything larger is taken as a new start.
            if let expected = nextPhoneTimestamp, packet.timestamp != expected {
                bridge.dropPending()
                let gap = Int32(bitPattern: packet.timestamp &- expected)
                if gap > 0 && gap <= 8_000 { toRoom.timestamp &+= UInt32(gap) * 6 }
            }
            nextPhoneTimestamp = packet.timestamp &+ UInt32(payload.count)
            guard bridge.push(g711: payload) else { dropped += 1; continue }
            // Each 20 ms: the fixed header, the level (RFC 6464: the relay picks its speakers by it), the Opus packet.
            let start = RTPFixedHeader.size + RTPExtensionWriter.oneByteBlockSize(elements: 1, dataBytes: 1)
            while case let length = bridge.popOpus(into: UnsafeMutableRawBufferPointer(rebasing: out[start...])),
                  length > 0 {
                toRoom.sequenceNumber &+= 1
                toRoom.marker = false
                toRoom.hasExtension = true
                toRoom.write(into: out)
                var levels = RTPExtensionWriter(into: out, at: RTPFixedHeader.size)
                let level = bridge.lastLevel
                levels.appendElement(id: room.audioLevelExtensionID,
                                     byte: AudioLevel(voice: level <= Self.voiceLevel, level: level).byte)
                _ = levels.finish()
                try? roomSocket.send(UnsafeRawBufferPointer(rebasing: out[0..<(start + length)]), to: room.relay)
                toRoom.timestamp &+= 960
            }
            packetsFromPhone += 1
        }
    }

    /// A phone's Opus packet into the room as it is: the gateway's header (its SSRC and numbering, the phone's
    /// timestamp moved by a fixed offset), the level the relay selects speakers by.
    private func passToRoom(_ payload: UnsafeRawBufferPointer, timestamp: UInt32, marker: Bool) {
        let start = RTPFixedHeader.size + RTPExtensionWriter.oneByteBlockSize(elements: 1, dataBytes: 1)
        guard start + payload.count <= out.count, let base = payload.baseAddress else { dropped += 1; return }
        toRoom.sequenceNumber &+= 1
        toRoom.timestamp = timestamp &+ timestampOffset
        toRoom.marker = marker
        toRoom.hasExtension = true
        toRoom.write(into: out)
        var levels = RTPExtensionWriter(into: out, at: RTPFixedHeader.size)
        let level = bridge.level(ofOpus: payload)
        levels.appendElement(id: room.audioLevelExtensionID,
                             byte: AudioLevel(voice: level <= Self.voiceLevel, level: level).byte)
        _ = levels.finish()
        (out.baseAddress! + start).copyMemory(from: base, byteCount: payload.count)
        try? roomSocket.send(UnsafeRawBufferPointer(rebasing: out[0..<(start + payload.count)]), to: room.relay)
        packetsFromPhone += 1
    }

    /// Everything waiting from the relay, to the phone.
    func drainRoom() {
        while let (n, from) = roomSocket.receive(into: buffer) {
            guard from == room.relay, !isRTCP(n),
                  let packet = try? RTPPacketView(parsing: UnsafeRawBufferPointer(rebasing: buffer[0..<n])) else {
                dropped += 1
                continue
            }
            guard !held else { continue }
            let payload = UnsafeRawBufferPointer(rebasing: buffer[packet.payloadRange])
            let body = UnsafeMutableRawBufferPointer(rebasing: out[RTPFixedHeader.size...])
            if opus != nil {  // as it is: the relay's stream to this member is already one continuous stream
                guard payload.count <= body.count, let base = payload.baseAddress else { dropped += 1; continue }
                body.baseAddress!.copyMemory(from: base, byteCount: payload.count)
                toPhone.sequenceNumber &+= 1
                toPhone.timestamp = packet.timestamp
                toPhone.marker = packet.marker
                toPhone.write(into: out)
                sendToPhone(RTPFixedHeader.size + payload.count)
                continue
            }
            let length = bridge.g711(fromOpus: payload, into: body)
            guard length > 0 else { dropped += 1; continue }
            toPhone.sequenceNumber &+= 1
            toPhone.timestamp &+= UInt32(length)
            toPhone.marker = packet.marker || filling
            filling = false
            toPhone.write(into: out)
            sendToPhone(RTPFixedHeader.size + length)
        }
    }

    /// `out[0..<length]` (an RTP packet: audio, or with `audio` false a telephone-event) to the phone, encrypted
    /// first with SRTP.
    private func sendToPhone(_ length: Int, audio: Bool = true) {
        var n = length
        if let srtpOut {
            guard let protected = try? srtpOut.protectRTP(out, length: n) else { dropped += 1; return }
            n = protected
        }
        try? phoneSocket.send(UnsafeRawBufferPointer(rebasing: out[0..<n]), to: phone)
        packetsFromRoom += 1
        let now = Clock.monotonicNanoseconds()
        if audio { lastToPhone = now }  // the events of a digit go beside the audio (silence fill included)
        rtcp.sent(timestamp: toPhone.timestamp, payloadBytes: length - RTPFixedHeader.size, now: now)
    }

    /// At each 20 ms tick: when nothing went to a G.711 phone for `fillAfter` (its room is silent: a forward room
    /// sends nothing while nobody speaks), 20 ms of G.711 silence on the stream's timeline, so that the phone's
    /// stream never stops (trunks and PBXs end calls whose RTP stops; a jitter buffer holds its last packets until
    /// later ones come). Not on hold, not before the phone's address is known, not for Opus (whose DTX is silence).
    func fillSilence() {
        guard opus == nil, !held, Clock.monotonicNanoseconds() - lastToPhone >= Self.fillAfter else { return }
        toPhone.sequenceNumber &+= 1
        toPhone.timestamp &+= 160
        toPhone.marker = false
        toPhone.write(into: out)
        let silence: UInt8 = bridge.law == .mu ? 0xFF : 0xD5
        for i in 0..<160 { out[RTPFixedHeader.size + i] = silence }
        filling = true
        sendToPhone(RTPFixedHeader.size + 160)
        lastToPhone -= 45_000_000  // the next tick fills again (even one 5 ms early): every 20 ms till the room speaks
    }

    /// Whether digits can be sent to this phone: it offered telephone-event, and the call is G.711 (its events are
    /// clocked at 8 kHz, as the audio then is; an Opus call's audio runs at 48 kHz).
    var sendsDigits: Bool { telephoneEvent != nil && opus == nil }

    /// One 20 ms tick of the digits being sent (`digitsOut`): an RFC 4733 packet in the audio's stream (its SSRC and
    /// numbering; the event's timestamp is the stream's time at its start), or nothing between digits or on hold.
    func sendDTMF() {
        guard let telephoneEvent, let packet = digitsOut.tick(), !held else { return }
        if packet.starts { eventTimestamp = toPhone.timestamp }
        toPhone.sequenceNumber &+= 1
        var header = toPhone
        header.payloadType = telephoneEvent
        header.timestamp = eventTimestamp
        header.marker = packet.starts
        header.hasExtension = false
        header.write(into: out)
        for (i, byte) in packet.payload.enumerated() { out[RTPFixedHeader.size + i] = byte }
        sendToPhone(RTPFixedHeader.size + 4, audio: false)
    }

    /// Everything waiting on the phone's RTCP port.
    func drainRTCP() {
        while let (n, from) = phoneSocket.rtcp.receive(into: buffer) { takeRTCP(n, from: from) }
    }

    /// `buffer[0..<n]`, RTCP from `from`: from the phone's hosts only, checked and decrypted first with SRTP (SRTCP).
    private func takeRTCP(_ received: Int, from: PeerAddress) {
        guard sameHost(from, phone) || sameHost(from, signalling) else { dropped += 1; return }
        var n = received
        if let srtpIn {
            guard let plain = try? srtpIn.unprotectRTCP(buffer, length: n) else { dropped += 1; return }
            n = plain
        }
        let now = Clock.monotonicNanoseconds()
        guard rtcp.take(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), now: now,
                        unixMilliseconds: Clock.unixMilliseconds()) else { dropped += 1; return }
        phoneRTCP = from
    }

    /// The gateway's report to the phone (`SIPCallRTCP.report`), SRTCP when the call is SRTP; nothing while held.
    func sendReport(cname: String) {
        guard !held else { return }
        let room = UnsafeMutableRawBufferPointer(rebasing: out[0..<256])
        var n = rtcp.report(into: room, now: Clock.monotonicNanoseconds(), unixMilliseconds: Clock.unixMilliseconds(),
                            cname: cname)
        guard n > 0 else { return }
        if let srtpOut {
            guard let protected = try? srtpOut.protectRTCP(out, length: n) else { return }
            n = protected
        }
        let to = phoneRTCP ?? phone.withPort(phone.port &+ 1)
        try? phoneSocket.rtcp.send(UnsafeRawBufferPointer(rebasing: out[0..<n]), to: to)
    }

    /// The level (−dBov) at or below which a phone's packet is marked as voice.
    static let voiceLevel: UInt8 = 50

    private func sameHost(_ a: PeerAddress, _ b: PeerAddress) -> Bool { a.high == b.high && a.low == b.low }

    /// RTCP on an RTP port (RFC 5761: packet types 200-204 in the second byte).
    private func isRTCP(_ n: Int) -> Bool {
        n >= 2 && (200...204).contains(buffer[1])
    }
}
