import BenchmarkSupport
import Glibc
import ParleyCrypto
// crypto-bench: µs per 120-byte RTP packet to protect and unprotect it as SRTP with AEAD_AES_256_GCM (RFC 7714
// framing, ParleyCrypto's SRTPSender/SRTPReceiver), against libsodium's bare AEADs on 120 bytes in the same run
// (AES-256-GCM, XChaCha20-Poly1305), and allocations per packet (goal: 0).
//
//   swift build -c release --product crypto-bench && .build/release/crypto-bench [--json]

let options = Options.parseOrExit(CommandLine.arguments.dropFirst())
guard SRTPSender.isAvailable else {
    printToStandardError("crypto-bench: libsodium's AES-256-GCM needs AES-NI, which this CPU lacks")
    exit(1)
}
let srtp: SRTPLoop
do { srtp = try SRTPLoop() } catch { printToStandardError("crypto-bench: \(error)"); exit(1) }
let bare = BareAEADLoop()
let handshakes = HandshakeLoop()
let dtlsHandshakes: DTLSHandshakeLoop
do { dtlsHandshakes = try DTLSHandshakeLoop() } catch { printToStandardError("crypto-bench: \(error)"); exit(1) }
let dtlsCount = max(20, min(options.packets / 200, 1_000))
let handshakeCount = max(1, min(options.packets / 20, 10_000))
handshakes.prepare(handshakeCount)
let sealing: SealedChannelLoop
do { sealing = try SealedChannelLoop(capacity: options.packets) } catch { printToStandardError("crypto-bench: \(error)"); exit(1) }

// Warm up every loop once, then alternate the measurements run by run so drift on the shared machine spreads evenly.
_ = srtp.run(min(options.packets, 20_000))
for kind in BareAEADLoop.Kind.allCases { _ = bare.seal(kind, 20_000); _ = bare.open(kind, 20_000) }

var protect: [Timing] = [], unprotect: [Timing] = []
var handshake: [Timing] = [], sealed: [Timing] = [], opened: [Timing] = [], dtls: [Timing] = []
var seal: [BareAEADLoop.Kind: [Timing]] = [:], open: [BareAEADLoop.Kind: [Timing]] = [:]
Allocations.counting(true)
for _ in 0..<options.runs {
    let run = srtp.run(options.packets)
    protect.append(run.protect)
    unprotect.append(run.unprotect)
    for kind in BareAEADLoop.Kind.allCases {
        seal[kind, default: []].append(bare.seal(kind, options.packets))
        open[kind, default: []].append(bare.open(kind, options.packets))
    }
    handshake.append(handshakes.run())
    Allocations.counting(false)  // OpenSSL allocates per handshake: not a per-packet path
    dtls.append(dtlsHandshakes.run(dtlsCount))
    Allocations.counting(true)
    let channel = sealing.run(options.packets)
    sealed.append(channel.seal)
    opened.append(channel.open)
}
Allocations.counting(false)

var problems: [String] = []
if srtp.failures > 0 { problems.append("\(srtp.failures) SRTP packets failed to protect, unprotect or compare") }
if bare.failures > 0 { problems.append("\(bare.failures) bare decryptions failed") }
if handshakes.failures > 0 { problems.append("\(handshakes.failures) handshakes failed") }
if dtlsHandshakes.failures > 0 { problems.append("\(dtlsHandshakes.failures) DTLS handshakes failed") }
if sealing.failures > 0 { problems.append("\(sealing.failures) sealed messages failed to open") }
let channelAllocations = max(allocationsPerPacket(sealed), allocationsPerPacket(opened))
if channelAllocations > 0 { problems.append("SealedChannel allocated \(fixed(channelAllocations, 4)) times per message") }
let srtpAllocations = max(allocationsPerPacket(protect), allocationsPerPacket(unprotect))
if srtpAllocations > 0 { problems.append("SRTP allocated \(fixed(srtpAllocations, 4)) times per packet") }
let results = Results(options: options, protect: protect, unprotect: unprotect, seal: seal, open: open,
                      rolloverCounter: srtp.rolloverCounter, problems: problems)
let relaySide = median(handshake), channelSeal = median(sealed), channelOpen = median(opened)
let handshakesPerSecond = 1e6 / relaySide.microsecondsPerPacket
let dtlsServer = median(dtls)
let dtlsPerSecond = 1e6 / dtlsServer.microsecondsPerPacket
if !options.jsonOnly {
    print(results.table)
    print("")
    print("Noise_NK_25519_ChaChaPoly_BLAKE2b, the relay's side (read the first message, verify the token inside, answer, split):")
    print("  \(fixed(relaySide.microsecondsPerPacket, 1)) µs per handshake = \(Int(handshakesPerSecond)) handshakes per CPU-second"
          + " (median of \(options.runs) runs of \(handshakeCount))")
    print("DTLS-SRTP (WebRTC members), the relay's side as DTLS server (OpenSSL DTLS 1.2, ECDSA P-256, ECDHE, use_srtp, key export):")
    print("  \(fixed(dtlsServer.microsecondsPerPacket, 1)) µs per handshake = \(Int(dtlsPerSecond)) handshakes per CPU-second"
          + " (median of \(options.runs) runs of \(dtlsCount))")
    print("SealedChannel (ChaCha20-Poly1305, counter + replay window), 120-byte message: seal \(fixed(channelSeal.microsecondsPerPacket, 3)) µs,"
          + " open \(fixed(channelOpen.microsecondsPerPacket, 3)) µs, \(fixed(channelAllocations, 4)) allocations per message")
    print("")
}
var json = results.json
json.removeLast()  // the closing brace: the handshake and channel figures join the same object
json += ",\"nk_handshake_relay_us\":\(fixed(relaySide.microsecondsPerPacket, 1)),\"nk_handshakes_per_cpu_second\":\(Int(handshakesPerSecond))"
    + ",\"sealed_channel_seal_us\":\(fixed(channelSeal.microsecondsPerPacket, 3)),\"sealed_channel_open_us\":\(fixed(channelOpen.microsecondsPerPacket, 3))"
    + ",\"sealed_channel_allocations_per_message\":\(fixed(channelAllocations, 4))"
    + ",\"dtls_handshake_relay_us\":\(fixed(dtlsServer.microsecondsPerPacket, 1)),\"dtls_handshakes_per_cpu_second\":\(Int(dtlsPerSecond))}"
print(json)
exit(problems.isEmpty ? 0 : 1)
