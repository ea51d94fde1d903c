import ParleyCrypto
import ParleyWire
import Testing
@testable import ParleyRelayCore
@testable import ParleyWebRTC

/// A browser as the relay's core meets one: its own certificate and DTLS client session (pinning the relay's
/// fingerprint), the ICE credentials the core handed out, and, once the handshake is done, a libsrtp2 session each way
/// from the keys its side exported. It sends through `FakeNetwork.deliverToRelay` and reads what the core sent its
/// address out of `net.undelivered` (no `FakeClient` holds that address).
final class FakeWebRTCPeer {
    /// The worker port (the one host candidate of every answer in these tests).
    static let relayPort: UInt16 = 7400
    /// Where the browser is (its checks, DTLS and media come from here).
    let address: PeerAddress
    /// Its `a=ice-ufrag`: the second half of its checks' USERNAME.
    let ufrag: String
    /// Its `a=ice-pwd`: the relay's checks of its address carry MESSAGE-INTEGRITY under it, and so do its answers.
    let password = "peer-password-0123456789"
    /// Whether it answers the relay's checks, as every ICE agent does (false: an address that never answers, such as
    /// a victim whose address a member forged).
    var answersChecks = true
    /// The relay's checks it received (Binding requests), as they came, and how many it answered.
    var relayChecks: [[UInt8]] = []
    var answered = 0
    /// Its DTLS certificate: what the offer's `a=fingerprint` names.
    let certificate: DTLSCertificate
    let context: DTLSContext
    /// What the core returned for it (the answer's ICE credentials, SSRC).
    private(set) var info: WebRTCMemberInfo!
    /// Its DTLS client session, made at `join` with the relay's fingerprint.
    private(set) var dtls: DTLSSession!
    /// Every event its DTLS session reported.
    var dtlsEvents: [DTLSEvent] = []
    /// Every datagram the relay sent it, as it came.
    var received: [[UInt8]] = []
    /// The RTP and RTCP it received, decrypted with its inbound session.
    var media: [[UInt8]] = [], rtcp: [[UInt8]] = []
    /// RTP/RTCP that did not decrypt (or came before it had keys).
    var unreadable = 0
    /// The SRTP sessions from the exported keys (nil until `handshake` connected).
    private(set) var outbound: LibSRTPSession?, inbound: LibSRTPSession?
    /// The SSRC it sends with (a browser picks its own; the relay adopts it).
    let ssrc: UInt32
    var sequence: UInt16 = 65_530  // its RTP crosses 65535 → 0 after six packets
    var timestamp: UInt32 = 4_294_966_000
    private var transactions: UInt8 = 0

    init(address: PeerAddress, ufrag: String = "pEeR", srtpProfiles: [SRTPProfile] = DTLSContext.defaultSRTPProfiles,
         ssrc: UInt32 = 0x0B0B_0001) throws {
        self.address = address
        self.ufrag = ufrag
        self.ssrc = ssrc
        certificate = try DTLSCertificate(now: FakeNetwork.startUnixMilliseconds / 1000)
        context = try DTLSContext(certificate: certificate, srtpProfiles: srtpProfiles)
    }

    /// What its offer would tell the core: its ufrag and fingerprint (or `fingerprint`: another certificate's),
    /// Opus at `payloadType`, the level extension at `levelID`, and its direction.
    func terms(payloadType: UInt8 = 109, levelID: UInt8? = 5, publish: Bool = true, subscribe: Bool = true,
               fingerprint: [UInt8]? = nil, slots: Int = 1) -> WebRTCOfferTerms {
        WebRTCOfferTerms(remoteUfrag: ufrag, remotePassword: password, remoteFingerprint: fingerprint ?? certificate.fingerprint, payloadType: payloadType,
                         audioLevelExtensionID: levelID, publish: publish, subscribe: subscribe, slots: slots)
    }

    /// Has the core add it to `room` as `identity` (the WHIP/WHEP POST) and prepares its DTLS client.
    @discardableResult
    func join(_ net: FakeNetwork, room: String = "lobby", identity: String = "browser", createMode: RoomMode? = nil,
              terms: WebRTCOfferTerms? = nil) throws -> WebRTCMemberInfo {
        let result = net.core.createWebRTCMember(room: room, identity: identity, displayName: "Browser", createMode: createMode,
                                                 terms: terms ?? self.terms(), now: net.now)
        guard case .webRTCMember(let info) = result else { Issue.record("got \(result)"); throw CancellationError() }
        self.info = info
        dtls = try DTLSSession(context: context, role: .client, peerFingerprint: try #require(net.shared.dtls).certificate.fingerprint)
        net.exchange()
        return info
    }

    /// The relay's ice-pwd as MESSAGE-INTEGRITY's key.
    var relayPassword: [UInt8] { Array(info.icePassword.utf8) }

    /// A connectivity check as a controlling full agent sends it: USERNAME `relayUfrag:peerUfrag` (or `username`),
    /// PRIORITY, ICE-CONTROLLING, USE-CANDIDATE when asked, MESSAGE-INTEGRITY under the relay's password (or
    /// `password`), FINGERPRINT. Each has a new transaction ID.
    func checkBytes(username: String? = nil, password: [UInt8]? = nil, useCandidate: Bool = false) -> [UInt8] {
        transactions &+= 1
        let id = [UInt8](repeating: 0xA5, count: 11) + [transactions]
        let name = username ?? "\(info.iceUfrag):\(ufrag)"
        var bytes = [UInt8](repeating: 0, count: STUNWriter.bindingRequestSize(username: name, useCandidate: useCandidate))
        let n = bytes.withUnsafeMutableBytes {
            STUNWriter.bindingRequest(transactionID: id, username: name, integrityKey: password ?? relayPassword, priority: 0x6E00_1EFF,
                                      useCandidate: useCandidate, role: .controlling(tieBreaker: 0x0102_0304_0506_0708), into: $0)
        }
        return Array(bytes.prefix(n))
    }

    /// Sends a check (from `from`, by default its own address); returns the request as sent.
    @discardableResult
    func check(_ net: FakeNetwork, from: PeerAddress? = nil, useCandidate: Bool = false) -> [UInt8] {
        let request = checkBytes(useCandidate: useCandidate)
        net.deliverToRelay(request, from: from ?? address, port: Self.relayPort)
        return request
    }

    /// Runs the network and takes what the relay sent this address since the last call, oldest first; RTP and RTCP
    /// are decrypted into `media` and `rtcp` as they come (each SRTP index only once, as a browser would). The
    /// relay's checks are answered at once (when `answersChecks`), as a browser's ICE agent answers them, and what
    /// the relay sends after an answer is taken too. The relay's checks are not in the list returned.
    @discardableResult
    func drain(_ net: FakeNetwork) -> [[UInt8]] {
        var mine: [[UInt8]] = []
        while true {
            net.exchange()
            var batch: [[UInt8]] = []
            net.undelivered.removeAll { d in
                guard d.to == address else { return false }
                batch.append(d.bytes)
                return true
            }
            received += batch
            var answeredAny = false
            for d in batch {
                if Self.isBindingRequest(d) {
                    relayChecks.append(d)
                    if answersChecks, let answer = answer(d) {
                        net.deliverToRelay(answer, from: address, port: Self.relayPort)
                        answered += 1
                        answeredAny = true
                    }
                    continue
                }
                mine.append(d)
                if d.first.map({ $0 & 0xC0 == 0x80 }) == true { decrypt(d) }
            }
            if !answeredAny { return mine }
        }
    }

    static func isBindingRequest(_ d: [UInt8]) -> Bool { d.count >= 20 && d[0] == 0 && d[1] == 1 }

    /// The success response a browser's ICE agent writes to the relay's check `request`: only when its USERNAME is
    /// `peerUfrag:relayUfrag` and its MESSAGE-INTEGRITY verifies under the peer's password.
    func answer(_ request: [UInt8]) -> [UInt8]? {
        guard let check = try? request.withUnsafeBytes({ try STUNBindingRequest(parsing: $0) }),
              check.username == "\(ufrag):\(info.iceUfrag)", check.iceControlled != nil, check.priority != nil,
              request.withUnsafeBytes({ check.hasValidIntegrity(key: Array(password.utf8), in: $0) }) else { return nil }
        var bytes = [UInt8](repeating: 0, count: STUNWriter.maxResponseSize)
        let n = bytes.withUnsafeMutableBytes {
            STUNWriter.bindingSuccess(transactionID: check.transactionID, mapped: PeerAddress(ipv4: 192, 0, 2, 1, port: 7400),
                                      integrityKey: Array(password.utf8), into: $0)
        }
        return Array(bytes.prefix(n))
    }

    private func decrypt(_ datagram: [UInt8]) {
        guard let inbound else { unreadable += 1; return }
        var buffer = datagram
        let rtcpPacket = datagram.withUnsafeBytes { isRTCP($0) }
        let n = buffer.withUnsafeMutableBytes { b -> Int? in
            try? (rtcpPacket ? inbound.unprotectRTCP(b, length: datagram.count) : inbound.unprotectRTP(b, length: datagram.count))
        }
        guard let n else { unreadable += 1; return }
        if rtcpPacket { rtcp.append(Array(buffer.prefix(n))) } else { media.append(Array(buffer.prefix(n))) }
    }

    /// Runs the DTLS handshake as the client: its flights go to the relay, the relay's come back, until neither side
    /// has anything to send. Returns whether it connected (then its SRTP sessions are ready).
    @discardableResult
    func handshake(_ net: FakeNetwork, maxRounds: Int = 12) throws -> Bool {
        if dtls.state == .new { dtlsEvents.append(dtls.start()) }
        for _ in 0..<maxRounds {
            let flight = dtls.takeOutgoing()
            for datagram in flight { net.deliverToRelay(datagram, from: address, port: Self.relayPort) }
            let back = drain(net).filter { (20...63).contains($0[0]) }
            for datagram in back { dtlsEvents.append(datagram.withUnsafeBytes { dtls.receive($0) }) }
            if flight.isEmpty && back.isEmpty { break }
        }
        guard dtls.state == .connected, let keys = dtls.keys else { return false }
        let profile = Self.libsrtpProfile(keys.profile)
        let outbound: LibSRTPSession = try #require(LibSRTPSession(masterKey: keys.localMasterKey, profile: profile, direction: .outbound))
        let inbound: LibSRTPSession = try #require(LibSRTPSession(masterKey: keys.remoteMasterKey, profile: profile, direction: .inbound))
        (self.outbound, self.inbound) = (outbound, inbound)
        return true
    }

    /// libsrtp2's name for a DTLS-SRTP profile.
    static func libsrtpProfile(_ profile: SRTPProfile) -> SRTPProtectionProfile {
        switch profile {
        case .aes128CmHmacSha1_80: .aesCM128HmacSHA1_80
        case .aeadAes128Gcm: .aeadAES128GCM
        case .aeadAes256Gcm: .aeadAES256GCM
        }
    }

    /// One RTP packet in the clear as the browser writes it: its payload type and SSRC, the RFC 6464 level (0 loud …
    /// 127 silent) at `levelID`, `payload` bytes.
    func plainRTP(level: UInt8, payloadType: UInt8 = 109, levelID: UInt8 = 5, payload: Int = 60) -> [UInt8] {
        let header = RTPHeader(payloadType: payloadType, sequenceNumber: sequence, timestamp: timestamp, ssrc: ssrc,
                               extensions: [.audioLevel(id: levelID, AudioLevel(voice: level < 127, level: level))])
        sequence &+= 1
        timestamp &+= 960
        var out = [UInt8](repeating: 0, count: header.serializedSize + payload)
        _ = out.withUnsafeMutableBytes { try! header.serialize(into: $0) }
        for i in header.serializedSize..<out.count { out[i] = UInt8(truncatingIfNeeded: i &* 7) }
        return out
    }

    /// `packet` (RTP, or RTCP when `rtcp`) protected with its outbound session.
    func protect(_ packet: [UInt8], rtcp: Bool = false) throws -> [UInt8] {
        let outbound = try #require(outbound)
        var buffer = packet + [UInt8](repeating: 0, count: LibSRTPSession.trailerCapacity)
        let n = try buffer.withUnsafeMutableBytes {
            try rtcp ? outbound.protectRTCP($0, length: packet.count) : outbound.protectRTP($0, length: packet.count)
        }
        return Array(buffer.prefix(n))
    }

    /// A receiver report from its SSRC (no blocks), in the clear.
    func plainReceiverReport() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 64)
        let n = try! bytes.withUnsafeMutableBytes { try ReceiverReport(ssrc: ssrc).serialize(into: $0) }
        return Array(bytes.prefix(n))
    }

    /// Sends one protected RTP packet; returns its clear form.
    @discardableResult
    func speak(_ net: FakeNetwork, level: UInt8 = 20) throws -> [UInt8] {
        let packet = plainRTP(level: level)
        net.deliverToRelay(try protect(packet), from: address, port: Self.relayPort)
        return packet
    }
}

/// A STUN message put together attribute by attribute, for the shapes `STUNWriter` never writes (no
/// MESSAGE-INTEGRITY, no PRIORITY, a byte changed after the HMAC): RFC 8489 §14.5's length rules, FINGERPRINT last.
struct STUNCheckBuilder {
    var type: UInt16 = 0x0001
    var transactionID = [UInt8](repeating: 0x3C, count: 12)
    /// Attributes before MESSAGE-INTEGRITY, as (type, value); values are padded with zeros.
    var attributes: [(UInt16, [UInt8])] = []
    /// MESSAGE-INTEGRITY's key, or nil for none.
    var integrityKey: [UInt8]?
    /// A byte index to flip after MESSAGE-INTEGRITY was computed (FINGERPRINT is computed after it: still valid).
    var tamperAt: Int?

    static func tlv(_ type: UInt16, _ value: [UInt8]) -> [UInt8] {
        [UInt8(type >> 8), UInt8(type & 0xFF), UInt8(value.count >> 8), UInt8(value.count & 0xFF)] + value
            + [UInt8](repeating: 0, count: (4 - value.count % 4) % 4)
    }

    static func bigEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<(T.bitWidth / 8)).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    /// The check attributes a controlling agent sends: USERNAME, PRIORITY, ICE-CONTROLLING.
    static func checkAttributes(username: String, priority: Bool = true, role: Bool = true) -> [(UInt16, [UInt8])] {
        var attributes: [(UInt16, [UInt8])] = [(0x0006, Array(username.utf8))]
        if priority { attributes.append((0x0024, bigEndian(UInt32(0x6E00_1EFF)))) }
        if role { attributes.append((0x802A, bigEndian(UInt64(0x0102_0304_0506_0708)))) }
        return attributes
    }

    var bytes: [UInt8] {
        var body = attributes.flatMap { Self.tlv($0.0, $0.1) }
        func header(_ length: Int) -> [UInt8] {
            Self.bigEndian(type) + Self.bigEndian(UInt16(length)) + Self.bigEndian(STUN.magicCookie) + transactionID
        }
        if let key = integrityKey {
            let covered = header(body.count + 24) + body
            var mac = [UInt8](repeating: 0, count: 20)
            covered.withUnsafeBytes { raw in
                mac.withUnsafeMutableBytes { STUNMessageIntegrity.hmac(key: key, message: raw, into: $0.baseAddress!) }
            }
            body += Self.tlv(0x0008, mac)
        }
        var message = header(body.count + 8) + body
        if let i = tamperAt { message[i] ^= 0x01 }
        let crc = message.withUnsafeBytes { STUNFingerprint.value(over: $0) }
        return message + Self.tlv(0x8028, Self.bigEndian(crc))
    }
}
