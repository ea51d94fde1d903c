import Glibc
import CParleySys
import ParleyAuth
import ParleyClientCore
import ParleyNet
import ParleyWire

/// What one run (against the relay or the raw forwarder) measured. Counts are over the members asked for: `members`
/// is the shape's, `joined` how many got in by the end, `missingReasons` why each member absent when media started
/// was absent.
struct RunResult {
    var label = ""
    var members = 0, speakers = 0, joined = 0, joinedLate = 0
    /// Joins a cluster node sent to another node (`--server A,B,…`).
    var redirects = 0
    var durationSeconds = 0.0
    /// Packets the speakers sent, and (forward mode) the packets they were due to send, admitted or not.
    var packetsSent = 0, packetsDue = 0
    var packetsExpected = 0, packetsReceived = 0
    var duplicated = 0, outOfOrder = 0, late = 0
    var latency = LatencyHistogram()
    var joinMilliseconds: [Double] = []
    var targetCPUSeconds = 0.0
    /// The target's context switches while media flowed (every thread): waits, and preemptions mid-work.
    var targetSwitches = (voluntary: 0, involuntary: 0)
    var targetRSSMegabytes = 0.0
    var generatorCPUSeconds = 0.0
    /// How late each of the generator's 20 ms send ticks ran.
    var tickLateness = LatencyHistogram()
    var sendLatenessMaxMilliseconds: Double { tickLateness.maxMilliseconds }
    var sendLatenessP99Milliseconds: Double { tickLateness.quantileMilliseconds(0.99) }
    /// Send ticks later than `--max-tick-lateness-ms`.
    var lateTicks = 0
    var signallingReceived = 0
    /// One entry per member not in its room when media started: the relay's refusal, or why it had no welcome.
    var missingReasons: [String] = []
    /// One entry per member the relay removed while media flowed (its goodbye's reason).
    var removedReasons: [String] = []
    /// Members in their rooms when media started.
    var presentAtStart: Int { members - missingReasons.count }
    var deliveryRatio: Double { packetsExpected == 0 ? 0 : Double(packetsReceived) / Double(packetsExpected) }
    var lost: Int { max(0, packetsExpected - packetsReceived) }
    var outPacketsPerSecond: Double { Double(packetsReceived) / durationSeconds }
    var outPacketsPerCPUSecond: Double { targetCPUSeconds > 0 ? Double(packetsReceived) / targetCPUSeconds : 0 }
    func joinQuantile(_ q: Double) -> Double {
        guard !joinMilliseconds.isEmpty else { return 0 }
        let s = joinMilliseconds.sorted()
        return s[min(s.count - 1, Int((q * Double(s.count)).rounded(.up)) - 1 < 0 ? 0 : Int((q * Double(s.count)).rounded(.up)) - 1)]
    }

    /// The blocks of one side as one run: counts, durations and CPU summed, latencies and tick lateness pooled, and
    /// the members of the block that missed the most.
    static func pooled(_ runs: [RunResult]) -> RunResult {
        guard var p = runs.first else { return RunResult() }
        for r in runs.dropFirst() {
            p.joined = min(p.joined, r.joined)
            p.joinedLate = max(p.joinedLate, r.joinedLate)
            p.durationSeconds += r.durationSeconds
            p.packetsSent += r.packetsSent; p.packetsDue += r.packetsDue
            p.packetsExpected += r.packetsExpected; p.packetsReceived += r.packetsReceived
            p.duplicated += r.duplicated; p.outOfOrder += r.outOfOrder; p.late += r.late
            p.latency.merge(r.latency)
            p.joinMilliseconds += r.joinMilliseconds
            p.targetCPUSeconds += r.targetCPUSeconds
            p.targetSwitches.voluntary += r.targetSwitches.voluntary
            p.targetSwitches.involuntary += r.targetSwitches.involuntary
            p.targetRSSMegabytes = max(p.targetRSSMegabytes, r.targetRSSMegabytes)
            p.generatorCPUSeconds += r.generatorCPUSeconds
            p.tickLateness.merge(r.tickLateness)
            p.lateTicks += r.lateTicks
            p.signallingReceived += r.signallingReceived
            if r.missingReasons.count > p.missingReasons.count { p.missingReasons = r.missingReasons }
            if r.removedReasons.count > p.removedReasons.count { p.removedReasons = r.removedReasons }
        }
        return p
    }
}

/// Where the load goes.
enum LoadTarget {
    /// A Parley relay: members join through its signalling; `probe` reads its CPU and memory.
    case relay(PeerAddress, ProcessProbe?)
    /// The raw fan-out forwarder (a process of its own): members register with one datagram.
    case raw(PeerAddress, ProcessProbe)

    var address: PeerAddress {
        switch self {
        case .relay(let a, _), .raw(let a, _): return a
        }
    }

    var probe: ProcessProbe? {
        switch self {
        case .relay(_, let p): return p
        case .raw(_, let p): return p
        }
    }
}

/// RTP packet layout the speakers send (RFC 3550 header, RFC 8285 one-byte extension block of 3 words):
///
///      0      1      2      3
///   +------+------+------+------+
///   | 0x90 |M|PT  |  sequence   |   0
///   |        timestamp          |   4
///   |          SSRC             |   8
///   | 0xBE   0xDE | length = 3  |  12
///   | 0x10 |V|lvl | 0x27 | send |  16   id 1 len 1: RFC 6464 level; id 2 len 8: send time,
///   |   monotonic ns (8 bytes)  |  20   big-endian CLOCK_MONOTONIC ns, bytes 19..<27
///   |  ...      ns      | pad 0 |  24
///   |     Opus payload ...      |  28
enum LoadPacket {
    static let payloadType: UInt8 = 111
    static let levelExtensionID: UInt8 = 1
    static let sendTimeExtensionID: UInt8 = 2
    static let headerSize = RTPFixedHeader.size + RTPExtensionWriter.oneByteBlockSize(elements: 2, dataBytes: 1 + 8)
}

/// Drives every member from one thread: a poll loop over all member sockets with batched receives (recvmmsg per
/// ready socket), speakers' packets sent on absolute 20 ms deadlines, signalling sessions ticked every 100 ms.
final class LoadRun {
    let options: Options
    let clip: SpeechClip
    private(set) var target: LoadTarget
    let membersPerRoom: Int
    let prefix: String
    var members: [Member] = []
    /// Room → its speakers' member indices, by speaker slot.
    var roomSpeakers: [[Int]] = []
    /// SSRC → member index of the speaker.
    var speakerBySSRC: [UInt32: Int] = [:]
    /// poll(2) set over every member socket, allocated once per run (Glibc does not export epoll to Swift).
    /// Every member's socket on one epoll descriptor (token: the member's index): a wakeup costs what is ready, not
    /// a scan of thousands of sockets.
    private let epoll: Int32
    private let readyTokens = UnsafeMutablePointer<UInt64>.allocate(capacity: 256)
    private let progress: Bool
    private var result = RunResult()
    private var window = LatencyHistogram()
    private let mix: Bool
    private let lateNanoseconds: Int64
    private let tickLatenessLimitNanoseconds: Int64
    private var windowSent = 0, windowExpected = 0, windowReceived = 0

    // One receive batch, used for every socket in turn; allocated once.
    private static let slots = 32, slotSize = 1536
    private let rxBuffers = UnsafeMutableRawPointer.allocate(byteCount: LoadRun.slots * LoadRun.slotSize, alignment: 16)
    private let rxHeaders = UnsafeMutablePointer<parley_mmsg>.allocate(capacity: LoadRun.slots)
    private let rxIOV = UnsafeMutablePointer<iovec>.allocate(capacity: LoadRun.slots)
    private let rxNames = UnsafeMutablePointer<sockaddr_storage>.allocate(capacity: LoadRun.slots)
    private let txBuffer = UnsafeMutableRawPointer.allocate(byteCount: 1536, alignment: 16)

    init(options: Options, clip: SpeechClip, target: LoadTarget, membersPerRoom: Int, prefix: String, progress: Bool) throws {
        self.options = options
        self.clip = clip
        self.target = target
        self.membersPerRoom = membersPerRoom
        self.prefix = prefix
        self.progress = progress
        self.mix = options.mode == "mix"
        self.lateNanoseconds = Int64(options.lateMilliseconds * 1e6)
        self.tickLatenessLimitNanoseconds = Int64(options.maxTickLatenessMilliseconds * 1e6)
        epoll = SystemCalls.kernel.epollCreate()
        guard epoll >= 0 else { throw SystemError("epoll_create1", -epoll) }
        let destination = target.address
        for room in 0..<options.rooms {
            var speakers: [Int] = []
            for m in 0..<membersPerRoom {
                let slot = m < options.speakers ? m : nil
                let member = try Member(index: members.count, room: room, speakerSlot: slot, identity: "\(prefix)-r\(room)-m\(m)",
                                        destination: destination)
                if slot != nil { speakers.append(member.index) }
                let watched = SystemCalls.kernel.epollWatch(epoll, member.socket.fd, UInt64(member.index))
                guard watched == 0 else { throw SystemError("epoll_ctl", -watched) }
                members.append(member)
            }
            roomSpeakers.append(speakers)
        }
        for i in 0..<LoadRun.slots { rxIOV[i] = iovec(iov_base: rxBuffers + i * LoadRun.slotSize, iov_len: LoadRun.slotSize) }
    }

    deinit {
        readyTokens.deallocate()
        _ = SystemCalls.kernel.close(epoll)
        rxBuffers.deallocate(); rxHeaders.deallocate(); rxIOV.deallocate(); rxNames.deallocate(); txBuffer.deallocate()
    }

    private var isRelay: Bool { if case .relay = target { return true }; return false }

    /// The target's CPU seconds so far, every thread of its process alike for the relay and the raw forwarder.
    private func targetCPU() -> Double { target.probe?.cpuSeconds() ?? 0 }

    // MARK: Phases

    /// One run: join (or register), `durationSeconds` of media, leave. The same members and sockets serve every run.
    func run(against target: LoadTarget, durationSeconds: Double) -> RunResult {
        self.target = target
        result = RunResult()
        speakerBySSRC = [:]
        for m in members {
            m.session = nil; m.crypto = nil; m.joinedAt = nil; m.refused = nil; m.removed = nil; m.packetsSent = 0; m.packetsDue = 0; m.packetsBeforeJoin = 0; m.tallies = []
            m.destination = target.address
        }
        result.label = isRelay ? "parley (\(options.mode))" : "raw fan-out"
        result.members = members.count
        result.speakers = roomSpeakers.reduce(0) { $0 + $1.count }
        if options.storm, isRelay {
            // The speakers join and start; the listeners join over the ramp while media flows (a join storm).
            join(members.filter { $0.speakerSlot != nil })
            media(seconds: durationSeconds, storm: members.filter { $0.speakerSlot == nil })
        } else {
            join(members)
            media(seconds: durationSeconds, storm: [])
        }
        leave()
        return result
    }

    /// Where a member first asks to join: the one relay, or in a cluster (`--server A,B,…`) room r's node r mod N
    /// for its first speaker and the others round the list.
    private func contact(_ m: Member) -> PeerAddress {
        let servers = options.servers
        guard servers.count > 1 else { return target.address }
        return servers[(m.room + (m.speakerSlot == 0 ? 0 : m.index)) % servers.count]
    }

    /// A member's join: its token (an audience room's listener without publish) and session, and its first datagram.
    private func beginJoin(_ m: Member, signer: TokenSigner, unixNow: Int64, now: Int64, to node: NodePointer? = nil) {
        let grants = options.audience && m.speakerSlot == nil ? Grants(publish: false) : Grants()
        let claims = TokenClaims(identity: m.identity, room: "\(prefix)-r\(m.room)", expiresAt: unixNow + 3600,
                                 issuedAt: unixNow, grants: grants, mode: options.mode, audience: options.audience ? true : nil)
        // Like the parley client, members tell speakers from the forwarded streams (no `speakers` messages).
        // A node the cluster sent the member to: its key is insisted on there, as the parley client does.
        let pinned = node.flatMap { Base64URL.decode(Substring($0.relayKey)) }
        let session = ClientSession(server: node?.address ?? contact(m), token: signer.mint(claims), room: "\(prefix)-r\(m.room)",
                                    speakersFromMedia: true, security: options.cleartext ? .cleartext : .encrypted(relayKey: pinned),
                                    now: Instant(nanoseconds: now), unixMilliseconds: { Int64(Clock.unixMilliseconds()) })
        m.session = session
        m.joinStarted = now
        _ = session.tick(now: Instant(nanoseconds: now))
        flushSignalling(m)
    }

    private var signer: TokenSigner {
        TokenSigner(apiKey: environment("PARLEY_API_KEY") ?? DevDefaults.apiKey, apiSecret: environment("PARLEY_API_SECRET") ?? DevDefaults.apiSecret)
    }

    private func join(_ members: [Member]) {
        let start = Clock.monotonicNanoseconds()
        switch target {
        case .raw:
            for m in members {
                RawForwarder.registration(room: m.room).withUnsafeBytes { try? m.socket.send($0, to: m.destination) }
                m.joinStarted = start
                m.joinedAt = start
            }
            pump(until: start + 200_000_000)
        case .relay:
            let signer = self.signer
            let unixNow = Clock.unixSeconds()
            var next = 0
            let rampNanoseconds = Int64(options.ramp * 1e9)
            let patienceNanoseconds: Int64 = 15_000_000_000
            let deadline = start + rampNanoseconds + patienceNanoseconds
            var lastTick = start
            while Clock.monotonicNanoseconds() < deadline {
                let now = Clock.monotonicNanoseconds()
                while next < members.count, now >= start + rampNanoseconds * Int64(next) / Int64(members.count) {
                    beginJoin(members[next], signer: signer, unixNow: unixNow, now: now)
                    next += 1
                }
                if now - lastTick >= 100_000_000 {
                    tickSessions(now: now)
                    lastTick = now
                    // A session that gave up (no answer after its join retries) is as refused as one the relay refused.
                    for m in members where m.joinedAt == nil && m.refused == nil {
                        if case .ended(let reason) = m.session?.state { m.refused = reason }
                    }
                }
                if next == members.count && members.allSatisfy({ $0.joinedAt != nil || $0.refused != nil }) { break }
                pump(until: min(now + 5_000_000, deadline))
                if progress, (now - start) / 1_000_000_000 != (Clock.monotonicNanoseconds() - start) / 1_000_000_000 {
                    writeLine(String(format: "  joining: %d/%d members", members.count(where: { $0.joinedAt != nil }), members.count))
                }
            }
            for m in members where m.joinedAt == nil && m.refused == nil {
                m.refused = String(format: "no welcome within %.0f s of the ramp", Double(patienceNanoseconds) / 1e9)
            }
        }
        result.missingReasons = members.compactMap { $0.joinedAt == nil ? $0.refused ?? "not admitted" : nil }
    }

    /// `seconds` of media; `storm`: members that join over the ramp meanwhile (`--storm`).
    private func media(seconds: Double, storm: [Member]) {
        let capacity = Int(seconds * 50) + 200
        // Speaker streams start at a talkspurt, spread over the clip; sequence numbers start near the wrap.
        for (r, speakers) in roomSpeakers.enumerated() {
            for (slot, i) in speakers.enumerated() {
                let s = members[i]
                s.clipPosition = clip.talkspurtStarts[(r * 7 + slot * 3) % clip.talkspurtStarts.count]
                s.sequenceStart = UInt16(truncatingIfNeeded: 65_500 &+ i * 17)
                s.sequence = s.sequenceStart
                s.timestamp = UInt32(truncatingIfNeeded: i &* 7_919_000)
                speakerBySSRC[s.ssrc] = i
            }
        }
        for m in members {
            if mix {
                m.tallies = [StreamTally(capacity: capacity)]
            } else {
                m.tallies = roomSpeakers[m.room].map { i in
                    var t = StreamTally(capacity: capacity)
                    t.firstSequence = members[i].sequenceStart
                    return t
                }
            }
        }
        // Every speaker asked for keeps its clip running, admitted or not: what it would have sent is due to every
        // other member asked for in its room (`ExpectedPackets`).
        let speakers = roomSpeakers.joined().map { members[$0] }
        let listenersPerSpeaker = membersPerRoom - 1

        let start = Clock.monotonicNanoseconds()
        let end = start + Int64(seconds * 1e9)
        let cpu0 = targetCPU(), gen0 = Clock.processCPUSeconds()
        let switches0 = target.probe?.contextSwitches()
        let signer = self.signer, unixNow = Clock.unixSeconds()
        let rampNanoseconds = Int64(options.ramp * 1e9)
        var nextJoin = 0
        var nextTick = start, nextSecond = start + 1_000_000_000, lastSessionTick = start
        var lastCPU = cpu0, lastGen = gen0
        while true {
            var now = Clock.monotonicNanoseconds()
            if now >= nextTick && nextTick < end {
                result.tickLateness.add(now - nextTick)
                if now - nextTick > tickLatenessLimitNanoseconds { result.lateTicks += 1 }
                for s in speakers where tick(s) { windowExpected += listenersPerSpeaker }
                nextTick += 20_000_000
                now = Clock.monotonicNanoseconds()
            }
            while nextJoin < storm.count, now >= start + rampNanoseconds * Int64(nextJoin) / Int64(storm.count) {
                beginJoin(storm[nextJoin], signer: signer, unixNow: unixNow, now: now)
                nextJoin += 1
            }
            if now - lastSessionTick >= 100_000_000 { tickSessions(now: now); lastSessionTick = now }
            if now >= nextSecond {
                let cpu = targetCPU(), gen = Clock.processCPUSeconds()
                if progress {
                    let loss = windowExpected > 0 && !mix ? max(0, 1 - Double(windowReceived) / Double(windowExpected)) * 100 : 0
                    writeLine(String(format: "  %4.0f s  members %d/%d  in %6d pps  out %7d pps  loss %5.2f %%  p99 %6.2f ms  %@ CPU %5.1f %%  load-gen CPU %5.1f %%",
                                     Double(now - start) / 1e9, members.count(where: { $0.joinedAt != nil }), members.count, windowSent, windowReceived, loss,
                                     window.quantileMilliseconds(0.99), isRelay ? "relay" : "raw", (cpu - lastCPU) * 100, (gen - lastGen) * 100))
                }
                lastCPU = cpu; lastGen = gen
                windowSent = 0; windowExpected = 0; windowReceived = 0
                window.reset()
                nextSecond += 1_000_000_000
            }
            if now >= end + 500_000_000 { break }   // half a second after the last send for packets in flight
            let nextJoinAt = nextJoin < storm.count ? start + rampNanoseconds * Int64(nextJoin) / Int64(storm.count) : Int64.max
            pump(until: min(nextTick < end ? nextTick : end + 500_000_000, nextSecond, nextJoinAt))
        }
        // A storm's listeners are missing only if they never got in.
        result.missingReasons += storm.compactMap { $0.joinedAt == nil ? $0.refused ?? "not admitted by the end of the run" : nil }
        result.durationSeconds = seconds
        result.targetCPUSeconds = targetCPU() - cpu0
        if let before = switches0, let after = target.probe?.contextSwitches() {
            result.targetSwitches = (after.voluntary - before.voluntary, after.involuntary - before.involuntary)
        }
        result.generatorCPUSeconds = Clock.processCPUSeconds() - gen0
        result.targetRSSMegabytes = target.probe?.rssMegabytes() ?? 0
        result.packetsSent = speakers.reduce(0) { $0 + $1.packetsSent }
        result.packetsDue = speakers.reduce(0) { $0 + $1.packetsDue }
        if mix {
            result.packetsExpected = ExpectedPackets.mix(members.map {
                ExpectedPackets.MixReceipt(room: $0.room, isSpeaker: $0.speakerSlot != nil, range: $0.tallies[0].highestOffset + 1)
            })
        } else {
            result.packetsExpected = ExpectedPackets.forward(packetsDue: speakers.map(\.packetsDue), membersPerRoom: membersPerRoom)
                - members.reduce(0) { $0 + $1.packetsBeforeJoin }  // --storm: nobody can hear what was sent before it came
        }
        // Every member's receipts count, late joiners' too; what they missed is in `packetsExpected`.
        for m in members {
            for t in m.tallies {
                result.packetsReceived += t.received
                result.duplicated += t.duplicated
                result.outOfOrder += t.outOfOrder
                result.late += t.late
            }
        }
        let joined = members.filter { $0.joinedAt != nil }
        result.joined = joined.count
        result.joinedLate = joined.count(where: { $0.joinedAt! > start })
        result.joinMilliseconds = joined.map { Double($0.joinedAt! - $0.joinStarted) / 1e6 }
        result.removedReasons = members.compactMap(\.removed)
    }

    private func leave() {
        let now = Clock.monotonicNanoseconds()
        for m in members {
            guard let s = m.session else { continue }
            s.leave(now: Instant(nanoseconds: now))
            flushSignalling(m)
        }
        pump(until: now + 200_000_000)
    }

    // MARK: Sending

    /// Advances the speaker's clip by one frame; returns whether a packet was due (not a suppressed DTX frame), and
    /// sends it if the speaker is admitted.
    private func tick(_ s: Member) -> Bool {
        let f = clip.frames[s.clipPosition]
        s.clipPosition = (s.clipPosition + 1) % clip.frames.count
        defer { s.timestamp &+= 960 }
        guard f.sent else { return false }
        s.packetsDue += 1
        if s.joinedAt != nil { send(s, f) }
        return true
    }

    /// Sends frame `f` of the speaker's clip.
    private func send(_ s: Member, _ f: SpeechClip.Frame) {
        let p = txBuffer
        clip.payloads.withUnsafeBytes { src in
            (p + LoadPacket.headerSize).copyMemory(from: src.baseAddress! + f.offset, byteCount: f.count)
        }
        let header = UnsafeMutableRawBufferPointer(start: p, count: LoadPacket.headerSize)
        RTPFixedHeader(marker: f.marker, payloadType: LoadPacket.payloadType, sequenceNumber: s.sequence, timestamp: s.timestamp,
                       ssrc: s.ssrc, hasExtension: true).write(into: header)
        var block = RTPExtensionWriter(into: header, at: RTPFixedHeader.extensionOffset(csrcCount: 0))
        block.appendElement(id: LoadPacket.levelExtensionID, byte: AudioLevel(voice: f.voice, level: f.level).byte)
        block.beginElement(id: LoadPacket.sendTimeExtensionID, dataCount: 8)
        block.append(bigEndian: UInt64(Clock.monotonicNanoseconds()))
        block.finish()
        var length = LoadPacket.headerSize + f.count
        if let crypto = s.crypto {
            // SRTP in place (the buffer has room for the tag), as the parley client protects each packet.
            guard let n = crypto.protect(UnsafeRawBufferPointer(start: p, count: length), into: UnsafeMutableRawBufferPointer(start: p, count: 1536)) else { return }
            length = n
        }
        try? s.socket.send(UnsafeRawBufferPointer(start: p, count: length), to: s.destination)
        s.sequence &+= 1
        s.packetsSent += 1
        windowSent += 1
    }

    private func flushSignalling(_ m: Member) {
        guard let s = m.session else { return }
        for d in s.drainOutgoing() { try? m.socket.send(d, to: s.destination) }
    }

    private func tickSessions(now: Int64) {
        for m in members {
            guard let s = m.session else { continue }
            _ = s.tick(now: Instant(nanoseconds: now))
            flushSignalling(m)
        }
    }

    // MARK: Receiving

    /// Receives and accounts for everything that arrives until `deadline` (monotonic ns).
    private func pump(until deadline: Int64) {
        while true {
            let now = Clock.monotonicNanoseconds()
            let remaining = deadline - now
            if remaining <= 0 { return }
            let n = SystemCalls.kernel.epollWait(epoll, readyTokens, 256, Int32(min(remaining / 1_000_000, 1000)))
            if n <= 0 { if remaining < 1_000_000 { return } else { continue } }
            for i in 0..<Int(n) { drain(members[Int(readyTokens[i])]) }
        }
    }

    private func drain(_ m: Member) {
        while true {
            for i in 0..<LoadRun.slots {
                var h = msghdr()
                h.msg_iov = rxIOV + i
                h.msg_iovlen = 1
                h.msg_name = UnsafeMutableRawPointer(rxNames + i)
                h.msg_namelen = socklen_t(MemoryLayout<sockaddr_storage>.size)
                rxHeaders[i] = parley_mmsg(msg_hdr: h, msg_len: 0)
            }
            let n = Int(SystemCalls.kernel.recvmmsg(m.socket.fd, rxHeaders, UInt32(LoadRun.slots)))
            if n <= 0 { return }
            let arrival = Clock.monotonicNanoseconds()
            for i in 0..<n {
                let bytes = UnsafeRawBufferPointer(start: rxBuffers + i * LoadRun.slotSize, count: Int(rxHeaders[i].msg_len))
                guard bytes.count >= 12 else { continue }
                if bytes[0] == Signalling.magic {
                    result.signallingReceived += 1
                    guard let from = PeerAddress(storage: rxNames + i) else { continue }
                    handleSignalling(m, bytes, from: from, now: arrival)
                } else if bytes[0] >> 6 == 2 && !(bytes[1] >= 192 && bytes[1] <= 223) {
                    receiveRTP(m, bytes, arrival: arrival)
                }
            }
            if n < LoadRun.slots { return }
        }
    }

    private func handleSignalling(_ m: Member, _ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Int64) {
        guard let s = m.session else { return }
        for event in s.handle(bytes, from: from, now: Instant(nanoseconds: now)) {
            switch event {
            case .welcomed(let w):
                if m.joinedAt == nil {
                    m.joinedAt = now
                    if options.storm { m.packetsBeforeJoin = roomSpeakers[m.room].reduce(0) { $1 == m.index ? $0 : $0 + members[$1].packetsDue } }
                }
                if m.speakerSlot != nil, speakerBySSRC[m.ssrc] == m.index {   // welcomed after media started
                    speakerBySSRC[m.ssrc] = nil
                    speakerBySSRC[w.ssrc] = m.index
                }
                m.ssrc = w.ssrc
                m.destination = s.destination
                m.crypto = try? s.makeMediaCrypto()
            case .roomKey(let key, let indices):
                try? m.crypto?.installRoomKey(key, streamIndices: indices)
            case .refused(.roomElsewhere, let reason) where m.redirects < 3 && (try? NodePointer(parsing: reason)) != nil:
                // A cluster: the room lives on another node; join there (the join time runs on from the first ask).
                let started = m.joinStarted
                m.redirects += 1
                result.redirects += 1
                beginJoin(m, signer: signer, unixNow: Clock.unixSeconds(), now: now, to: try? NodePointer(parsing: reason))
                m.joinStarted = started
                return
            case .refused(_, let reason):
                m.refused = reason
            case .goodbye(_, let reason):
                if m.joinedAt != nil, m.removed == nil { m.removed = reason }
            default:
                break
            }
        }
        flushSignalling(m)
    }

    private func receiveRTP(_ m: Member, _ received: UnsafeRawBufferPointer, arrival: Int64) {
        var bytes = received
        if let crypto = m.crypto {
            // Only packets that authenticate count as delivered (decrypted as a listener would, in place).
            let buffer = UnsafeMutableRawBufferPointer(mutating: received)
            guard let n = crypto.unprotect(received, into: buffer) else { return }
            bytes = UnsafeRawBufferPointer(rebasing: received[..<n])
        }
        m.session?.noteTraffic(now: Instant(nanoseconds: arrival))
        let sequence = UInt16(bytes[2]) << 8 | UInt16(bytes[3])
        let timestamp = bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self).bigEndian
        let ssrc = bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self).bigEndian
        let latency: Int64
        let slot: Int
        if mix {
            slot = 0
            if m.tallies[0].firstSequence == nil {
                m.tallies[0].firstSequence = sequence
                m.tallies[0].firstArrival = arrival
                m.tallies[0].firstTimestamp = timestamp
            }
            // No send time survives the mix: delay relative to the first packet, through the mix's RTP clock.
            let t = m.tallies[0]
            latency = arrival - t.firstArrival - Int64(Int32(bitPattern: timestamp &- t.firstTimestamp)) * 1_000_000 / 48
        } else {
            guard let speaker = speakerBySSRC[ssrc], let s = members[speaker].speakerSlot,
                  let sent = Self.sendTime(bytes) else { return }
            slot = s
            latency = arrival - sent
        }
        guard m.tallies[slot].record(sequence: sequence) else { return }
        if latency > lateNanoseconds { m.tallies[slot].late += 1 }
        result.latency.add(latency)
        window.add(latency)
        windowReceived += 1
    }

    /// The send time from the one-byte header extension element with id 2 (8 bytes), walking the RFC 8285 block.
    static func sendTime(_ b: UnsafeRawBufferPointer) -> Int64? {
        guard b[0] & 0x10 != 0 else { return nil }
        var offset = 12 + Int(b[0] & 0x0F) * 4
        guard b.count >= offset + 4, b[offset] == 0xBE, b[offset + 1] == 0xDE else { return nil }
        let end = offset + 4 + (Int(b[offset + 2]) << 8 | Int(b[offset + 3])) * 4
        guard end <= b.count else { return nil }
        offset += 4
        while offset < end {
            let head = b[offset]
            if head == 0 { offset += 1; continue }
            let id = head >> 4, length = Int(head & 0x0F) + 1
            if id == 15 { return nil }
            if id == LoadPacket.sendTimeExtensionID, length == 8, offset + 9 <= end {
                return Int64(bitPattern: b.loadUnaligned(fromByteOffset: offset + 1, as: UInt64.self).bigEndian)
            }
            offset += 1 + length
        }
        return nil
    }
}

func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
