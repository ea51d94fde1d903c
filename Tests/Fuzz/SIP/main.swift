// libFuzzer target for what reaches the SIP gateway from its socket (Sources/ParleySIP): libre's SIP message decoder
// (`sip_msg_decode`, the stack's first parser of every datagram; a crash there is a crash of the relay) and the
// gateway's check of what a decoded request must carry (`SIPRequestCheck`: 400 or 483 if anything), then what the
// gateway reads from a phone's RTCP (`SIPCallRTCP`), and its own parsers of what a decoded INVITE carries: the SDP
// offer (`SIPAudioOffer`, from the body as possibly invalid UTF-8), the RFC 4733 events a phone keys a room's PIN with
// (`DTMFCollector`, `SIPRoomPINs`) and, for the configuration, `SIPTrunk`/`AddressBlock`. An accepted offer must yield
// an answer that is CRLF text with one audio line at the port given and the chosen codec (Opus straight through, or
// G.711); the digits collected must be keys, at most the collector's capacity; an accepted address block must read back
// from its own description as the same block.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleySIP/SIPAudioOffer.swift, SIPTrunk.swift, SIPDTMF.swift,
// SIPRequestCheck.swift, SIPCallRTCP.swift and Sources/ParleyWire/*.swift into one module named ParleyWire, with
// `-I Sources/CLibre -I /usr/include/re -lre` for libre. Invariant violations trap through `precondition`.
import CLibre

/// libFuzzer's entry: one input, every parser above.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    // libre: the datagram as its UDP transport hands it to the decoder.
    if let mb = mbuf_alloc(max(size, 1)) {
        _ = mbuf_write_mem(mb, data, size)
        mbuf_set_pos(mb, 0)
        var msg: UnsafeMutablePointer<sip_msg>?
        if sip_msg_decode(&msg, mb) == 0, let msg {
            // The gateway's first look at every decoded request (`SIPRequestCheck`): 400 or 483, or on.
            if msg.pointee.req, case .answer(let status, _, _) = SIPRequestCheck.judge(.init(UnsafePointer(msg))) {
                precondition(status == 400 || status == 483)
            }
            _ = mem_deref(UnsafeMutableRawPointer(msg))
        }
        _ = mem_deref(UnsafeMutableRawPointer(mb))
    }
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    if case .success(let offer) = SIPAudioOffer.parse(text) {
        precondition(offer.direction == "sendrecv" || ["sendonly", "recvonly", "inactive"].contains(offer.direction))
        let answer = offer.answer(host: PeerAddress(ipv4: 198, 51, 100, 7, port: 0), port: 40_000, sessionID: 1,
                                  version: 1)
        let scalars = Array(answer.unicodeScalars)
        precondition(answer.hasSuffix("\r\n"))
        for (i, c) in scalars.enumerated() where c == "\n" { precondition(i > 0 && scalars[i - 1] == "\r") }
        let lines = answer.split(separator: "\r\n").map(String.init)
        let audio = lines.filter { $0.hasPrefix("m=audio ") }
        let payloadType = offer.opus ?? offer.law.payloadType
        let profile = offer.srtp == nil ? "RTP/AVP" : "RTP/SAVP"
        precondition(audio.first?.hasPrefix("m=audio 40000 \(profile) \(payloadType)") == true, answer)
        precondition(lines.contains(offer.opus == nil ? "a=rtpmap:\(payloadType) \(offer.law.encodingName)/8000"
                                    : "a=rtpmap:\(payloadType) opus/48000/2"), answer)
    } else if case .failure(let refusal) = SIPAudioOffer.parse(text) {
        precondition(refusal.status == 488)
    }
    // The input as RTCP from a phone (`SIPCallRTCP`): read whole or not at all; the report after it well-formed.
    var rtcp = SIPCallRTCP(ssrc: 0xAAAA, clockRate: 8_000)
    rtcp.received(ssrc: 0xB0B, sequence: 1, timestamp: 0, now: 0)
    let took = rtcp.take(UnsafeRawBufferPointer(start: data, count: size), now: 1_000_000,
                         unixMilliseconds: 1_796_000_000_000)
    precondition(took || rtcp.compoundsReceived == 0)
    if let rtt = rtcp.roundTrip { precondition(rtt.nanoseconds >= 0 && rtt < .seconds(10)) }
    let report = UnsafeMutableRawBufferPointer.allocate(byteCount: 256, alignment: 4)
    let length = rtcp.report(into: report, now: 2_000_000, unixMilliseconds: 1_796_000_000_001, cname: "sip-1@parley")
    var packets = rtcpPackets(in: UnsafeRawBufferPointer(rebasing: report[0..<length]))
    var count = 0
    while let packet = try? packets.next() {  // an RR (nothing sent yet) and the CNAME
        count += 1
        precondition(packet.packetType == 201 || packet.packetType == 202)
    }
    precondition(length > 0 && count == 2)
    report.deallocate()
    _ = rtcp.summary
    // The input as telephone-event payloads of 4 bytes, a new press every other one.
    var dtmf = DTMFCollector(capacity: 8)
    var timestamp: UInt32 = 0
    var offset = 0
    while offset + 4 <= size {
        timestamp &+= UInt32(data[offset] & 1)
        if let digit = dtmf.take(UnsafeRawBufferPointer(start: data + offset, count: 4), timestamp: timestamp) {
            precondition("0123456789*#ABCD".contains(digit))
        }
        precondition(dtmf.digits.count <= 8)
        _ = SIPRoomPINs.judge(dtmf.digits, pin: "2468")
        offset += 4
    }
    for line in text.split(whereSeparator: \.isNewline).prefix(4) {
        if let block = AddressBlock(parsing: String(line)) {
            precondition(AddressBlock(parsing: block.description) == block, block.description)
            precondition(block.contains(block.base))
        }
        if case .success(let trunk) = SIPTrunk.parse(String(line)) {
            precondition(!trunk.blocks.isEmpty && (trunk.user == nil) == (trunk.password == nil))
        }
    }
    return 0
}
