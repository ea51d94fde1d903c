import ParleyMedia
import ParleyWire

/// The mix-mode engine of one room. Every 20 ms, on absolute deadlines of the monotonic clock, it pulls a frame from
/// each publisher's jitter buffer, mixes the speakers, and encodes one shared mix for everyone not speaking plus one
/// minus-one mix per speaker. Nobody speaking: no mixing and no encoding. Each listener receives one RTP stream (the
/// room's mix SSRC, its own sequence numbers) with the contributors in the CSRC list and their levels in the RFC 6465
/// extension. The RTP header of each distinct mix is serialized once; per listener only the sequence number is patched.
///
/// In a hybrid room (`sharedOnly`) the mix is for members who may not publish only: the publishers hear each other's
/// streams forwarded, so there is one encode per frame whoever speaks, and none at all (not even a decode) while no
/// such listener is connected.
final class MixEngine {
    static let frameSamples = 960
    static let frameInterval = Interval.milliseconds(20)
    /// The RTP payload type of the mix (Opus, as the members send it).
    static let payloadType: UInt8 = 111
    let ssrc: UInt32
    let config: RelayCoreConfig
    /// Hybrid rooms: one shared mix for the members who may not publish; no minus-one mixes.
    let sharedOnly: Bool
    /// Hybrid rooms with no one to mix for: packets are not queued, frames not pulled.
    private(set) var idle = false
    /// The next mix deadline; nil while the room has no members.
    var nextDeadline: Instant?
    private(set) var frameIndex: UInt32 = 0
    /// The mix timeline's timestamp at frame 0; moved forward only when a lone speaker's forwarding ends ahead of it.
    var timestampBase: UInt32
    private let bus = AudioMixBus(frameSamples: frameSamples)
    private let sharedEncoder: OpusEncoder
    private var sharedLimiter = MixLimiter()
    var inputs: [UInt32: MixInput] = [:]
    private let mixPCM = UnsafeMutablePointer<Int16>.allocate(capacity: frameSamples)
    let packet = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
    /// The same packet as a WebRTC listener negotiated it (`webRTCPacket`).
    private let browserPacket = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
    /// Per-frame scratch (see `mix`): empty between frames.
    private var contributors: [Member] = []
    var listeners: [Member] = []
    /// Members the mixer holds references to, and publishers with an input (for `RelayCore.liveCounts`).
    var heldMembers: Int { contributors.count + listeners.count }
    var inputCount: Int { inputs.count }
    /// Mixes produced, distinct encodes done, frames a lone speaker's packet was sent on as it came (no encode), and
    /// deadlines skipped because the worker fell behind.
    private(set) var mixes = 0, encodes = 0, passedThrough = 0, skippedDeadlines = 0
    /// A lone speaker forwarded packet by packet (`MixEngine+LoneSpeaker.swift`), if one is; its packets so forwarded.
    var lone: LoneSpeaker?
    var loneForwarded = 0
    /// Forwardings of a lone speaker so far (each listener's numbering follows the current one's, `Member.mix.loneEpoch`).
    var loneEpoch: UInt32 = 0
    /// Whether the last frame's mix was sent to anyone (encoded or passed through): a lone speaker's forwarding
    /// starts only when it was not, so no listener hears the mixer's buffered audio and the forwarded packets overlap.
    var mixSending = false
    /// In-band FEC of every mix encoder, sized to the loss the room's listeners report for the mix.
    private var fec = LossAdaptiveFEC()
    /// What listeners reported about the mix, checked.
    private var reports = ListenerReports()
    /// The last shared mixes, for listeners' NACKs (`retransmission(of:to:)`).
    let history = MixHistory()
    /// While the room is recorded: where each frame of the shared mix goes (`RelayCore+Recording.swift`). The shared
    /// mix is then encoded for every frame somebody speaks, even when no listener needs it.
    var recording: (tap: RecordingTap, id: UInt64)?
    /// When the audio of the frame being mixed arrived: its deadline less the contributors' jitter-buffer delay (the
    /// recorded mix frames' time, so the mix lines up with the members' tracks, which are placed by arrival).
    private var frameHeard = Instant.origin
    /// The expected loss the mix encoders protect against: the configured floor, or more if listeners lose packets.
    var expectedLossPercent: Int32 { max(Int32(config.mixExpectedLossPercent), fec.expectedLossPercent) }

    init(ssrc: UInt32, timestampBase: UInt32, config: RelayCoreConfig, sharedOnly: Bool = false) throws(OpusError) {
        self.ssrc = ssrc
        self.sharedOnly = sharedOnly
        self.timestampBase = timestampBase
        self.config = config
        sharedEncoder = try Self.makeEncoder(config, expectedLossPercent: Int32(config.mixExpectedLossPercent))
        mixPCM.initialize(repeating: 0, count: Self.frameSamples)
        contributors.reserveCapacity(16)
        listeners.reserveCapacity(64)
    }

    deinit {
        mixPCM.deallocate()
        packet.deallocate()
        browserPacket.deallocate()
    }

    static func makeEncoder(_ config: RelayCoreConfig, expectedLossPercent: Int32) throws(OpusError) -> OpusEncoder {
        let e = try OpusEncoder(sampleRate: 48_000, channels: 1, application: .voip)
        try e.setComplexity(Int32(config.mixComplexity))
        try e.setBitrate(Int32(config.mixBitrate))
        try e.setInbandFEC(true)
        try e.setExpectedPacketLoss(percent: expectedLossPercent)
        return e
    }

    /// A listener's receiver report block about the mix, from member `listener` of a room of `listeners`: checked
    /// against that listener's earlier ones, then the listeners' reports of the last two seconds — the worst, or the
    /// second worst from three listeners on (`ListenerReports`) — resize every mix encoder's FEC.
    func listenerReported(_ block: ReportBlock, by listener: UInt32, listeners: Int, now: Instant) -> ListenerReports.Verdict {
        let verdict = reports.take(block, from: listener, now: now)
        reports.forget(olderThan: now - ListenerReports.maxAge)
        let heard = reports.aggregate(listeners: listeners, since: now - Self.reportWindow)
        guard fec.report(fractionLost: heard.fractionLost, jitter: heard.jitter) else { return verdict }
        let percent = expectedLossPercent
        try? sharedEncoder.setExpectedPacketLoss(percent: percent)
        for input in inputs.values { try? input.minusOneEncoder?.setExpectedPacketLoss(percent: percent) }
        return verdict
    }

    /// Listeners' reports about the mix count for this long (clients report every second).
    static let reportWindow = Interval.seconds(2)

    /// The mix timeline's RTP timestamp at `now` (what a sender report pairs with the wall clock): the next frame's
    /// timestamp, less the 48 kHz samples between `now` and its deadline. Nil while the clock is stopped.
    func rtpTimestamp(at now: Instant) -> UInt32? {
        guard let deadline = nextDeadline else { return nil }
        let next = timestampBase &+ frameIndex &* UInt32(Self.frameSamples)
        let samples = (now - deadline).nanoseconds * Int64(Self.clockRate) / 1_000_000_000
        return next &+ UInt32(truncatingIfNeeded: samples)
    }

    /// The RTP clock rate of the mix (Opus).
    static let clockRate = 48_000

    /// Starts the clock when the first member arrives.
    func start(now: Instant) {
        if nextDeadline == nil { nextDeadline = now + Self.frameInterval }
    }

    /// Stops the clock when the room empties: an empty room costs nothing.
    func stop() { nextDeadline = nil }

    /// Queues a publisher's packet into its jitter buffer (`retransmission`: it filled a gap; kept out of the delay estimate).
    func insert(_ packet: RTPPacketView, from member: Member, arrival: Instant, retransmission: Bool = false) {
        guard !idle, let input = input(for: member) else { return }
        input.stream.insert(packet, arrival: arrival, retransmission: retransmission)
    }

    /// Forgets a member that left.
    func remove(_ member: Member) {
        if lone?.memberID == member.id { endLoneSpeaker() }  // the mix timeline stays ahead of what was forwarded
        inputs[member.id] = nil
    }

    private func input(for member: Member) -> MixInput? {
        if let i = inputs[member.id] { return i }
        var jc = JitterBufferConfig()
        jc.minimumDelay = .milliseconds(Int64(config.mixMinimumJitterDelayMilliseconds))
        jc.startupWaits = false
        guard let stream = try? AudioReceiveStream(jitterConfig: jc) else { return nil }
        // RED's copies fill the member's uplink gaps; from anyone else payload type 63 is not RED.
        stream.redPayloadType = member.kind.speaksRedundancy ? RedundantAudio.defaultPayloadType : nil
        let i = MixInput(stream: stream, frameSamples: Self.frameSamples)
        inputs[member.id] = i
        return i
    }

    /// Runs every mix whose deadline has passed (at most 3 back to back; further behind, it skips ahead).
    /// `shared`, in a cluster, takes each frame's mix for the members of the room's other nodes (sequence 0; each
    /// node numbers it per member), with its frame index; `send` gets each member's packet (a member of another node
    /// only its minus-one mix).
    func run(room: Room, now: Instant, shared: ((UnsafeRawBufferPointer, UInt32) -> Void)? = nil, send: (UnsafeRawBufferPointer, Member) -> Void) {
        guard var deadline = nextDeadline else { return }
        var done = 0
        while deadline <= now && done < 3 {
            mix(room: room, deadline: deadline, shared: shared, send: send)
            deadline += Self.frameInterval
            frameIndex &+= 1
            done += 1
        }
        if deadline <= now {
            let behind = (now - deadline) / Self.frameInterval + 1
            skippedDeadlines += Int(behind)
            deadline += behind * Self.frameInterval
            frameIndex &+= UInt32(truncatingIfNeeded: behind)
        }
        nextDeadline = deadline
    }

    private func mix(room: Room, deadline: Instant, shared: ((UnsafeRawBufferPointer, UInt32) -> Void)?, send: (UnsafeRawBufferPointer, Member) -> Void) {
        bus.clear()
        frameHeard = deadline
        // Scratch lists for this frame only: emptied on the way out, so the mixer never keeps a member that leaves
        // between frames (each member holds its room, and the room this mixer).
        defer {
            contributors.removeAll(keepingCapacity: true)
            listeners.removeAll(keepingCapacity: true)
        }
        if sharedOnly {
            for m in room.members where m.canSubscribe && m.hasDestination && !m.canPublish && m.isLocal { listeners.append(m) }
            idle = listeners.isEmpty && shared == nil && recording == nil
            if idle { return }
        }
        var loneMuted = false
        for m in room.members where m.canPublish {
            if m.muted, m.id == lone?.memberID { loneMuted = true }
            guard let input = inputs[m.id] else { continue }
            let outcome = input.stream.pull(now: deadline, into: input.pcm)
            // A contributor is playing audio and has spoken recently (RFC 6464 level): the comfort-noise frames an
            // encoder sends before DTX settles, or steady background noise, do not cost a mix.
            let spokeRecently = room.selector.state(of: m.id).lastSpeech.map { deadline - $0 <= config.speakingHold } ?? false
            input.contributing = outcome != .silence && !m.muted && spokeRecently
            if input.contributing { contributors.append(m) }
        }
        // A lone speaker forwarded as it speaks: its buffered frames were sent already. Someone else contributing, the
        // speaker muted (its numbers would leave a gap), a recording or a cascade (which take the mix frame by frame)
        // end the forwarding, and the mixer goes on from the packets after the last one forwarded.
        if let forwarded = lone {
            if contributors.contains(where: { $0.id != forwarded.memberID }) || recording != nil || shared != nil
                || loneMuted {
                endLoneSpeaker()
                contributors.removeAll { $0.id == forwarded.memberID }
                inputs[forwarded.memberID]?.contributing = false
            } else {
                mixSending = false
                passThroughHold = 0
                return
            }
        }
        for m in contributors { if let input = inputs[m.id] { bus.add(input.pcm) } }
        mixSending = !contributors.isEmpty
        mixes += 1
        if recording != nil, let held = contributors.compactMap({ inputs[$0.id]?.stream.jitter.stats.currentDelayMilliseconds }).min() {
            frameHeard = deadline - Interval(seconds: held / 1000)
        }
        guard !contributors.isEmpty else {  // nobody speaking: no encode work
            passThroughHold = 0
            return
        }
        // One speaker, and this frame is exactly one of its packets as it came: the shared mix is that packet (no
        // second coding, no encode work). A frame the speaker's buffer concealed, rebuilt or stretched is encoded.
        // Each switch from passed-through to encoded frames costs the listeners' decoders a glitch (the encoder's
        // frames follow its own earlier ones, not the speaker's), so after an encoded frame the talkspurt stays
        // encoded for `passThroughHoldFrames`; and while listeners report loss (their FEC is sized for them, the
        // speaker's is not) nothing passes through. Measured on moderate: passing every passable frame through
        // scored 2.10 PESQ-WB against 2.50 encoding all (`measure.py --profile moderate --modes mix`).
        var passThrough: UnsafeRawBufferPointer?
        if passThroughHold > 0 { passThroughHold -= 1 }
        if config.mixPassThrough, contributors.count == 1, fec.expectedLossPercent == 0, passThroughHold == 0,
           let input = inputs[contributors[0].id], let p = input.stream.passThroughPayload, p.count <= Self.maxPassThroughBytes {
            passThrough = p
        } else {
            passThroughHold = Self.passThroughHoldFrames
        }

        if !sharedOnly {
            listeners.removeAll(keepingCapacity: true)
            for m in room.members where m.canSubscribe && m.hasDestination && !(inputs[m.id]?.contributing ?? false) { listeners.append(m) }
        }
        if !listeners.isEmpty || shared != nil || recording != nil {
            if passThrough == nil { bus.mix(into: mixPCM, limiter: &sharedLimiter) }
            encodeAndSend(sharedEncoder, excluding: nil, room: room, to: listeners, shared: shared, passThrough: passThrough, send: send)
        }
        guard !sharedOnly else { return }  // hybrid: the speakers hear each other forwarded
        // Each speaker hears the others (a lone speaker hears nothing, so nothing is encoded for it); a speaker of
        // another node too, through its node.
        guard contributors.count > 1 else { return }
        for speaker in contributors where speaker.canSubscribe && (speaker.hasDestination || !speaker.isLocal) {
            guard let input = inputs[speaker.id] else { continue }
            if input.minusOneEncoder == nil { input.minusOneEncoder = try? Self.makeEncoder(config, expectedLossPercent: expectedLossPercent) }
            guard let encoder = input.minusOneEncoder else { continue }
            bus.mix(excluding: input.pcm, into: mixPCM, limiter: &input.minusOneLimiter)
            listeners.removeAll(keepingCapacity: true)
            listeners.append(speaker)
            encodeAndSend(encoder, excluding: speaker, room: room, to: listeners, send: send)
        }
    }

    /// Frames a talkspurt stays encoded after an encoded frame before a lone speaker's packets pass through again.
    static let passThroughHoldFrames = 50
    /// Frames left before pass-through may resume (0 at the start of a talkspurt).
    private var passThroughHold = 0

    /// Set in the frame number a lone speaker's forwarded packet is kept under in `history` (never a mixed frame's).
    static let forwardedFrame: UInt32 = 0x8000_0000

    /// Largest lone-speaker payload sent on as it is (an Opus frame is at most 1,275 bytes; the packet buffer holds
    /// the header too).
    static let maxPassThroughBytes = 1_275

    /// Writes the mix's header into `packet`, then its payload: `mixPCM` encoded with `encoder`, or `passThrough` as
    /// it is; and sends it to `targets` (and `shared`).
    private func encodeAndSend(_ encoder: OpusEncoder, excluding: Member?, room: Room, to targets: [Member],
                               shared: ((UnsafeRawBufferPointer, UInt32) -> Void)? = nil, passThrough: UnsafeRawBufferPointer? = nil,
                               send: (UnsafeRawBufferPointer, Member) -> Void) {
        // Header: V=2, X=1 (RFC 6465 levels), CC = contributors heard (≤ 15), PT 111, seq patched per listener.
        var csrcCount = 0
        for c in contributors where c !== excluding && csrcCount < RTPFixedHeader.maxCSRCCount { csrcCount += 1 }
        guard csrcCount > 0 else { return }
        RTPFixedHeader(payloadType: Self.payloadType, sequenceNumber: 0, timestamp: timestampBase &+ frameIndex &* UInt32(Self.frameSamples),
                       ssrc: ssrc, csrcCount: csrcCount, hasExtension: true).write(into: packet)
        // One RFC 6465 element: one level per CSRC, in CSRC-list order.
        var levels = RTPExtensionWriter(into: packet, at: RTPFixedHeader.extensionOffset(csrcCount: csrcCount))
        levels.beginElement(id: config.csrcAudioLevelExtensionID, dataCount: csrcCount)
        var written = 0
        for c in contributors where c !== excluding && written < csrcCount {
            RTPFixedHeader.writeCSRC(c.ssrc, at: written, into: packet)
            levels.append(AudioLevel.level(loudness: room.selector.state(of: c.id).loudness))
            written += 1
        }
        let headerSize = levels.finish()
        let p = packet.baseAddress!
        let pcm = UnsafeBufferPointer(start: UnsafePointer(mixPCM), count: Self.frameSamples)
        let body = UnsafeMutableRawBufferPointer(start: p + headerSize, count: packet.count - headerSize)
        let n: Int
        if let passThrough {
            body.copyMemory(from: passThrough)
            n = passThrough.count
            passedThrough += 1
        } else {
            guard let written = try? encoder.encode(pcm, frameSize: Self.frameSamples, into: body), written > 0 else { return }
            n = written
            encodes += 1
        }
        if excluding == nil { history.store(frame: frameIndex, packet: UnsafeRawBufferPointer(start: p, count: headerSize + n)) }
        if excluding == nil, let recording {
            recording.tap.recordMix(id: recording.id, timestamp: timestampBase &+ frameIndex &* UInt32(Self.frameSamples), at: frameHeard,
                                    payload: UnsafeRawBufferPointer(start: p + headerSize, count: n))
        }
        if let shared {
            RTPFixedHeader.patchSequenceNumber(0, in: packet)
            packet[1] &= 0x7F
            shared(UnsafeRawBufferPointer(start: p, count: headerSize + n), frameIndex)
        }
        deliverPatched(to: targets, headerSize: headerSize, payloadBytes: n, csrcCount: csrcCount, frame: frameIndex,
                       shared: excluding == nil, send: send)
    }

    /// Another node's mix frame (`RelayCore+Cascade.swift`) to members here: numbered and marked per member as this
    /// node's own mix is. `shared`: the mixing node's shared mix (kept for NACKs), not one member's minus-one mix.
    func deliver(_ rtp: UnsafeRawBufferPointer, frame: UInt32, shared: Bool, to targets: [Member], send: (UnsafeRawBufferPointer, Member) -> Void) {
        guard !targets.isEmpty, rtp.count <= packet.count, let view = try? RTPPacketView(parsing: rtp) else { return }
        packet.copyMemory(from: rtp)
        if shared { history.store(frame: frame, packet: rtp) }
        let headerSize = view.payloadOffset
        deliverPatched(to: targets, headerSize: headerSize, payloadBytes: view.payloadCount, csrcCount: view.csrcCount, frame: frame,
                       shared: shared, send: send)
    }

    /// The shared-mix packet numbered `sequence` that `listener` was sent, rebuilt exactly as it was sent (its
    /// sequence number, marker and, for a WebRTC member, payload type and header), or nil when it was a minus-one mix
    /// or is no longer kept (`forwardedOnly`: a lone speaker's forwarded packets only). Valid until the next mix or
    /// rebuild.
    func retransmission(of sequence: UInt16, to listener: Member, forwardedOnly: Bool = false) -> UnsafeRawBufferPointer? {
        guard let sent = listener.mix.log?.shared(sequence), !forwardedOnly || sent.frame & Self.forwardedFrame != 0,
              let kept = history.packet(frame: sent.frame),
              let view = try? RTPPacketView(parsing: kept), kept.count <= packet.count else { return nil }
        packet.copyMemory(from: kept)
        RTPFixedHeader.patchSequenceNumber(sequence, in: packet)
        packet[1] = sent.marker ? packet[1] | 0x80 : packet[1] & 0x7F
        if let webrtc = listener.webrtc {
            return webRTCPacket(payloadType: webrtc.payloadType, sequence: sequence, csrcCount: view.csrcCount,
                                headerSize: view.payloadOffset, payloadBytes: view.payloadCount)
        }
        return UnsafeRawBufferPointer(start: packet.baseAddress!, count: kept.count)
    }

    /// The packet in `packet` to each target: its sequence number and marker, as a browser negotiated it.
    private func deliverPatched(to targets: [Member], headerSize: Int, payloadBytes n: Int, csrcCount: Int, frame frameIndex: UInt32,
                                shared: Bool, send: (UnsafeRawBufferPointer, Member) -> Void) {
        let p = packet.baseAddress!
        for listener in targets {
            let sequence = listener.mix.sequence
            RTPFixedHeader.patchSequenceNumber(sequence, in: packet)
            listener.mix.sequence &+= 1
            listener.mix.packetsSent &+= 1   // the listener's sender report counts (RFC 3550: payload octets)
            listener.mix.octetsSent &+= UInt32(truncatingIfNeeded: n)
            // The marker bit on the first packet of each talkspurt (RFC 3551 §4.1): the first this listener gets
            // after frames it got nothing for (no one else spoke), so its jitter buffer may adapt there.
            let marker = listener.mix.lastFrame.map { frameIndex != $0 &+ 1 } ?? true
            listener.mix.lastFrame = frameIndex
            if listener.mix.log == nil { listener.mix.log = MixSendLog() }
            listener.mix.log!.record(sequence: sequence, frame: frameIndex, marker: marker, shared: shared)
            packet[1] = marker ? packet[1] | 0x80 : packet[1] & 0x7F
            if let webrtc = listener.webrtc {
                send(webRTCPacket(payloadType: webrtc.payloadType, sequence: sequence, csrcCount: csrcCount, headerSize: headerSize, payloadBytes: n),
                     listener)
            } else {
                send(UnsafeRawBufferPointer(start: p, count: headerSize + n), listener)
            }
        }
    }

    /// The packet just patched for a listener, as a WebRTC member negotiated it: its offer's Opus payload type (Firefox
    /// offers 109, not 111) and no RFC 6465 element, which no browser negotiates — the relay's id for it may be one the
    /// browser gave another extension (Chrome's 3 is transport-wide-cc). The CSRCs stay: they name who is heard.
    func webRTCPacket(payloadType: UInt8, sequence: UInt16, csrcCount: Int, headerSize: Int, payloadBytes: Int) -> UnsafeRawBufferPointer {
        let marker = packet[1] & 0x80 != 0
        // Timestamp and SSRC as the packet has them (this node's mix, or the mixing node's).
        let timestamp = UInt32(bigEndian: UnsafeRawBufferPointer(packet).loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        let ssrc = UInt32(bigEndian: UnsafeRawBufferPointer(packet).loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        RTPFixedHeader(marker: marker, payloadType: payloadType, sequenceNumber: sequence,
                       timestamp: timestamp, ssrc: ssrc, csrcCount: csrcCount,
                       hasExtension: false).write(into: browserPacket)
        let csrcs = RTPFixedHeader.extensionOffset(csrcCount: 0)
        let fixed = RTPFixedHeader.extensionOffset(csrcCount: csrcCount)
        let q = browserPacket.baseAddress!, p = packet.baseAddress!
        (q + csrcs).copyMemory(from: p + csrcs, byteCount: fixed - csrcs)
        (q + fixed).copyMemory(from: p + headerSize, byteCount: payloadBytes)
        return UnsafeRawBufferPointer(start: q, count: fixed + payloadBytes)
    }
}
