// libFuzzer target for what reaches the SIP gateway from its socket (Sources/ParleySIP): libre's SIP message decoder
// (`sip_msg_decode`, the stack's first parser of every datagram; a crash there is a crash of the relay), then the
// gateway's own parsers of what a decoded INVITE carries: the SDP offer (`SIPAudioOffer`, from the body as
// possibly invalid UTF-8) and, for the configuration, `SIPTrunk`/`AddressBlock`. An accepted offer must yield an
// answer that is CRLF text with one audio line at the port given and the chosen G.711; an accepted address block
// must read back from its own description as the same block.
//
// Compiled by Tests/Fuzz/run.sh together with Sources/ParleySIP/SIPAudioOffer.swift, SIPTrunk.swift and
// Sources/ParleyWire/*.swift into one module named ParleyWire, with `-I Sources/CLibre -I /usr/include/re -lre` for
// libre. Invariant violations trap through `precondition`.
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
        precondition(audio.first?.hasPrefix("m=audio 40000 RTP/AVP \(offer.law.payloadType)") == true, answer)
        precondition(lines.contains("a=rtpmap:\(offer.law.payloadType) \(offer.law.encodingName)/8000"))
    } else if case .failure(let refusal) = SIPAudioOffer.parse(text) {
        precondition(refusal.status == 488)
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
