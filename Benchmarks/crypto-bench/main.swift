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

// Warm up every loop once, then alternate the measurements run by run so drift on the shared machine spreads evenly.
_ = srtp.run(min(options.packets, 20_000))
for kind in BareAEADLoop.Kind.allCases { _ = bare.seal(kind, 20_000); _ = bare.open(kind, 20_000) }

var protect: [Timing] = [], unprotect: [Timing] = []
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
}
Allocations.counting(false)

var problems: [String] = []
if srtp.failures > 0 { problems.append("\(srtp.failures) SRTP packets failed to protect, unprotect or compare") }
if bare.failures > 0 { problems.append("\(bare.failures) bare decryptions failed") }
let srtpAllocations = max(allocationsPerPacket(protect), allocationsPerPacket(unprotect))
if srtpAllocations > 0 { problems.append("SRTP allocated \(fixed(srtpAllocations, 4)) times per packet") }
let results = Results(options: options, protect: protect, unprotect: unprotect, seal: seal, open: open,
                      rolloverCounter: srtp.rolloverCounter, problems: problems)
if !options.jsonOnly {
    print(results.table)
    print("")
}
print(results.json)
exit(problems.isEmpty ? 0 : 1)
