import BenchmarkSupport
import ParleyAuth
import ParleyCrypto
import ParleyRelayCore
import ParleyWebRTC
import ParleyWire

/// Rooms of WebRTC members (what browsers are to the relay): each joined as the HTTP API joins one
/// (`createWebRTCMember`), passed its ICE check (a STUN Binding request with MESSAGE-INTEGRITY) and its DTLS handshake
/// with a real client `DTLSSession`, so its SRTP keys are DTLS-SRTP's (AEAD_AES_128_GCM through libsrtp2). The first
/// member of each room speaks; the others receive its packets as their one rewritten stream, each protected with
/// that listener's own keys. Timed like `Scenario.run`: ns per received and per forwarded packet, allocations.
final class WebRTCScenario {
    let core: RelayCore
    var clock = ManualClock()
    /// Each room's speaker: its address and its SRTP packets, made before the clock starts.
    private var speakers: [(address: PeerAddress, packets: [[UInt8]])] = []
    private(set) var failures: [String] = []

    init(rooms: Int, membersPerRoom: Int, packetsPerSpeaker: Int) throws {
        let server = try DTLSContext(certificate: DTLSCertificate(now: 1_800_000_000))
        let client = try DTLSContext(certificate: DTLSCertificate(now: 1_800_000_000))
        let shared = RelayShared(config: RelayCoreConfig(), verifier: TokenVerifier(keys: [DevDefaults.apiKey: DevDefaults.apiSecret]),
                                 cookieSecret: Crypto.randomBytes(32), workerPorts: [7400], dtls: server)
        core = RelayCore(shared: shared, workerIndex: 0, log: SilentLog())
        var index = 0
        for room in 0..<rooms {
            let name = "webrtc-\(room)"
            _ = core.createRoom(name: name, mode: .forward, maxMembers: nil, emptyTimeout: nil, now: clock.now)
            for member in 0..<membersPerRoom {
                index += 1
                let address = PeerAddress(ipv4: 0x0B00_0000 | UInt32(index), port: 50_000)
                let speaks = member == 0
                let terms = WebRTCOfferTerms(remoteUfrag: "peer\(index)", remotePassword: Self.peerPassword, remoteFingerprint: client.certificate.fingerprint, payloadType: 111,
                                             audioLevelExtensionID: 1, publish: speaks, subscribe: !speaks)
                guard case .webRTCMember(let info) = core.createWebRTCMember(room: name, identity: "browser-\(index)", displayName: nil,
                                                                            createMode: nil, terms: terms, now: clock.now) else {
                    failures.append("member \(index) was not created")
                    continue
                }
                let keys = try connect(address: address, info: info, remoteUfrag: "peer\(index)", client: client, server: server)
                if speaks, let keys { speakers.append((address, try Self.packets(packetsPerSpeaker, keys: keys, ssrc: UInt32(0x5000_0000 + index)))) }
                clock.advance(by: .milliseconds(2))
            }
        }
    }

    /// Every member's offer's ice-pwd.
    static let peerPassword = "bench-peer-password-0123"

    /// The member's ICE check (and its answer to the relay's check back) and DTLS handshake, through the core; its
    /// keys once connected.
    private func connect(address: PeerAddress, info: WebRTCMemberInfo, remoteUfrag: String, client: DTLSContext,
                         server: DTLSContext) throws -> DTLSSRTPKeys? {
        var check = [UInt8](repeating: 0, count: 256)
        let n = check.withUnsafeMutableBytes {
            STUNWriter.bindingRequest(transactionID: Crypto.randomBytes(12), username: "\(info.iceUfrag):\(remoteUfrag)",
                                      integrityKey: Array(info.icePassword.utf8), priority: 1, useCandidate: true,
                                      role: .controlling(tieBreaker: 1), into: $0)
        }
        check.withUnsafeBytes { core.handle(UnsafeRawBufferPointer(rebasing: $0[0..<n]), from: address, now: clock.now) }
        // The relay checks the address back (its answer proves the browser receives there), as a browser answers.
        var answers: [[UInt8]] = []
        for i in 0..<core.output.count where core.output[i].to == address {
            let bytes = Array(core.output[i].bytes)
            guard let request = try? bytes.withUnsafeBytes({ try STUNBindingRequest(parsing: $0) }) else { continue }
            var answer = [UInt8](repeating: 0, count: STUNWriter.maxResponseSize)
            let size = answer.withUnsafeMutableBytes {
                STUNWriter.bindingSuccess(transactionID: request.transactionID, mapped: address, integrityKey: Array(Self.peerPassword.utf8), into: $0)
            }
            answers.append(Array(answer.prefix(size)))
        }
        core.outputSent()
        for answer in answers { answer.withUnsafeBytes { core.handle($0, from: address, now: clock.now) } }
        core.outputSent()
        let dtls = try DTLSSession(context: client, role: .client, peerFingerprint: server.certificate.fingerprint)
        dtls.start()
        for _ in 0..<8 where dtls.state != .connected {
            var back: [[UInt8]] = []
            for d in dtls.takeOutgoing() {
                d.withUnsafeBytes { core.handle($0, from: address, now: clock.now) }
                for i in 0..<core.output.count where core.output[i].to == address { back.append(Array(core.output[i].bytes)) }
                core.outputSent()
            }
            for d in back { _ = d.withUnsafeBytes { dtls.receive($0) } }
        }
        guard dtls.state == .connected, let keys = dtls.keys else {
            failures.append("\(address) did not connect")
            return nil
        }
        return keys
    }

    /// `count` SRTP packets of one speaker: 20 ms of Opus-sized payload each, the level at id 1, protected in order.
    static func packets(_ count: Int, keys: DTLSSRTPKeys, ssrc: UInt32) throws -> [[UInt8]] {
        let profile: SRTPProtectionProfile = keys.profile == .aes128CmHmacSha1_80 ? .aesCM128HmacSHA1_80
            : keys.profile == .aeadAes256Gcm ? .aeadAES256GCM : .aeadAES128GCM
        guard let outbound = LibSRTPSession(masterKey: keys.localMasterKey, profile: profile, direction: .outbound) else {
            throw WebRTCError("srtp", "libsrtp refused the keys")
        }
        return try (0..<count).map { i in
            let header = RTPHeader(payloadType: 111, sequenceNumber: UInt16(truncatingIfNeeded: i), timestamp: UInt32(i) &* 960, ssrc: ssrc,
                                   extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: 20))])
            var out = [UInt8](repeating: 0, count: header.serializedSize + 90 + LibSRTPSession.trailerCapacity)
            let size = try out.withUnsafeMutableBytes { try header.serialize(into: $0) }
            let n = try out.withUnsafeMutableBytes { try outbound.protectRTP($0, length: size + 90) }
            return Array(out.prefix(n))
        }
    }

    /// Feeds every speaker's packets `range` (interleaved, 20 ms apart per speaker) as the worker loop would.
    func run(_ range: Range<Int>) -> PacketFigures {
        let core = core, speakers = speakers
        return timedPass(core, clock: &clock, range: range, streams: speakers.count) { s, i, now in
            speakers[s].packets[i].withUnsafeBytes { core.handle($0, from: speakers[s].address, now: now) }
        }
    }
}
