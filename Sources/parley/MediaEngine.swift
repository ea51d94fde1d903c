import Foundation
import ParleyAudioIO
import ParleyClientCore
import ParleyMedia
import ParleyNet
import ParleyWire

/// The client's media, one 20 ms tick at a time: capture → voice processing → Opus/RTP → relay, and relay →
/// jitter buffers → mix → playback; NACKs for gaps that can still be filled before play-out.
final class MediaEngine {
    let capture: CaptureSource
    var captureState: CaptureSource
    let playback: PlaybackSink
    let processor: VoiceProcessor?
    let receiver: ReceiveMixer
    var sender: SendPipeline?
    var muted: Bool
    let listenOnly: Bool
    private let frame = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 960)
    private let played = UnsafeMutableBufferPointer<Int16>.allocate(capacity: 960)
    private let nackBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1500, alignment: 16)
    private var lastCheckpoint: Int64 = 0
    private var lastReceiverReport: Int64 = 0
    private let audio: AudioOptions
    /// Counters for the live view and the summary.
    private(set) var packetsSent = 0, packetsReceived = 0, bytesReceived = 0, nacksSent = 0
    private(set) var inputEnded = false
    /// With PARLEY_TIMELINE set, the monotonic times of the first captured (sent) frame and of the first played frame
    /// go to stderr, so a benchmark can measure mouth-to-ear latency between two processes on one machine.
    private let timeline = ProcessInfo.processInfo.environment["PARLEY_TIMELINE"] != nil
    private var captureStart: Int64?, playbackStart: Int64?
    /// Level of the last captured frame (RFC 6464: 0 loud … 127 silent), for the live view.
    private(set) var inputLevel: UInt8 = 127
    /// Per SSRC: packets received.
    private(set) var receivedBySSRC: [UInt32: Int] = [:]
    /// Who speaks, from the levels of the received streams (forward rooms send no `speakers` to this client).
    var speaking = SpeakingTracker()

    init(audio: AudioOptions, listenOnly: Bool, muted: Bool) {
        self.audio = audio
        self.listenOnly = listenOnly
        self.muted = muted
        capture = audio.openCapture(listenOnly: listenOnly)
        captureState = capture
        playback = audio.openPlayback()
        var options = VoiceProcessor.Options()
        options.denoise = audio.denoise
        options.agc = audio.agc
        options.echoCancel = audio.echoCancel
        options.vad = false  // speexdsp's VAD is a placeholder ("replaced by a hack"); voice comes from the level
        let anyProcessing = audio.denoise || audio.agc || audio.echoCancel
        processor = listenOnly || !anyProcessing ? nil : try? VoiceProcessor(options: options)
        var jc = JitterBufferConfig()
        jc.minimumDelayMilliseconds = 0
        receiver = ReceiveMixer(jitterConfig: jc)
        frame.initialize(repeating: 0)
        played.initialize(repeating: 0)
    }

    deinit {
        frame.deallocate()
        played.deallocate()
        nackBuffer.deallocate()
    }

    /// Starts sending with the SSRC the relay assigned.
    func start(ssrc: UInt32) {
        guard !listenOnly else { return }
        if let sender { sender.ssrc = ssrc; return }
        do {
            sender = try SendPipeline(ssrc: ssrc, bitrate: audio.bitrate, complexity: audio.complexity, dtx: audio.dtx)
        } catch {
            fail("cannot start the Opus encoder: \(error.message)", code: 1)
        }
    }

    /// Takes an RTP or RTCP datagram from the relay.
    func receive(_ bytes: UnsafeRawBufferPointer, now: Int64) {
        if isRTCP(bytes) {
            // The relay's receiver reports about our stream drive the encoder's FEC.
            var packets = rtcpPackets(in: bytes)
            while let p = try? packets.next() {
                guard p.packetType == 201, let rr = try? ReceiverReport(parsing: p), let sender else { continue }
                for block in rr.reports where block.ssrc == sender.ssrc { sender.reportedLoss(fraction: block.fractionLost, jitter: block.jitter) }
            }
            return
        }
        guard let packet = try? RTPPacketView(parsing: bytes) else { return }
        packetsReceived += 1
        bytesReceived += bytes.count
        receivedBySSRC[packet.ssrc, default: 0] += 1
        speaking.observe(ssrc: packet.ssrc, level: packet.audioLevel(id: SendPipeline.defaultLevelExtensionID)?.level, payloadBytes: packet.payloadCount, now: now)
        receiver.receive(packet, now: now)
    }

    /// One 20 ms tick: capture and send (when joined), then play what arrived; sends NACKs that are still useful.
    func tick(now: Int64, joined: Bool, roundTrip: Int64, send: (UnsafeRawBufferPointer) -> Void) throws(AudioIOError) {
        // A file or tone starts when the member is in the room (nothing of it is lost to the join); a device is read
        // all along so it never overruns.
        if !listenOnly, joined || capture.isDevice {
            if !(try captureState.next(into: frame)) { inputEnded = true }
            if timeline, joined, captureStart == nil {
                captureStart = now
                writeLine("timeline capture_start_ns \(now)", fd: 2)
            }
            _ = processor?.process(frame, playedReference: audio.echoCancel ? UnsafeBufferPointer(played) : nil)
            inputLevel = audioLevel(UnsafeBufferPointer(frame))
            let voice = SpeechRules.standard.isSpeech(level: inputLevel)
            if joined, let sender, let packet = sender.packetize(UnsafeBufferPointer(frame), level: inputLevel, voice: voice, muted: muted) {
                send(packet)
                packetsSent += 1
            }
        }
        receiver.pull(now: now, into: played.baseAddress!)
        try playback.play(UnsafeBufferPointer(played))
        if timeline, playbackStart == nil {
            playbackStart = now
            writeLine("timeline playback_start_ns \(now)", fd: 2)
        }
        if joined { sendNacks(now: now, roundTrip: roundTrip, send: send) }
        if joined, now - lastReceiverReport >= 1_000_000_000 {
            lastReceiverReport = now
            if let report = receiver.receiverReport(reporter: sender?.ssrc ?? 0), let n = try? report.serialize(into: nackBuffer) {
                send(UnsafeRawBufferPointer(rebasing: nackBuffer[0..<n]))
            }
        }
        if now - lastCheckpoint >= 1_000_000_000 {
            lastCheckpoint = now
            try playback.checkpoint()
        }
    }

    private func sendNacks(now: Int64, roundTrip: Int64, send: (UnsafeRawBufferPointer) -> Void) {
        let rtt = max(roundTrip, 5_000_000)
        for stream in receiver.streams.values {
            let delay = Int64(stream.audio.jitter.stats.targetDelayMilliseconds * 1_000_000) + 20_000_000
            let lost = stream.nacks.due(now: now, roundTrip: rtt, playoutDelay: delay)
            guard !lost.isEmpty else { continue }
            let nack = GenericNACK(senderSSRC: sender?.ssrc ?? 0, mediaSSRC: stream.ssrc, lost: lost)
            guard let n = try? nack.serialize(into: nackBuffer) else { continue }
            send(UnsafeRawBufferPointer(rebasing: nackBuffer[0..<n]))
            nacksSent += 1
        }
    }

    /// Who is audible right now (SSRCs whose last frame played audio).
    var audibleSSRCs: [UInt32] { receiver.streams.values.filter { $0.lastOutcome == .speech }.map(\.ssrc) }

    /// Concealed frames so far over all streams.
    var concealedFrames: Int { receiver.streams.values.reduce(0) { $0 + $1.audio.jitter.stats.concealedFrames } }

    /// Device xruns so far.
    var xruns: (over: Int, under: Int) {
        var over = 0, under = 0
        if case .device(let d) = capture { over = d.overruns }
        if case .device(let d) = playback { under = d.underruns }
        return (over, under)
    }

    /// Finalises the output file (valid WAV even after Ctrl-C).
    func finish() {
        do { try playback.finish() } catch { writeLine("parley: \(error.message)", fd: 2) }
    }
}
