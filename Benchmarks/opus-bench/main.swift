// opus-bench: what the ParleyMedia Opus wrapper costs over calling libopus directly.
//
// Both paths encode the same pre-generated 10 s speech-like signal (repeated to --frames frames) with the same
// settings, and decode the same packets. Each round runs both paths over all frames with fresh codec states,
// interleaved in blocks of 50 frames (A B B A …) so drift and noise on this shared machine hit both alike; the
// per-frame medians over the rounds are reported, and the two bitstreams must be identical.
import BenchmarkSupport
import Glibc
import ParleyMedia

let options = Options.parseOrExit(CommandLine.arguments.dropFirst())
let signal = SpeechSignal.make(seconds: 10)  // 500 frames
var wrappedTrain = PacketTrain(frames: options.frames)
var directTrain = PacketTrain(frames: options.frames)
var pcm = [Int16](repeating: 0, count: 5_760)  // 120 ms: any packet fits

do {
    // Warm up both paths (code, caches, page faults in the packet buffers).
    _ = try encodeRound(signal, frames: options.frames, complexity: options.complexity, wrapped: &wrappedTrain, direct: &directTrain)

    var encodeWrappedUs: [Double] = [], encodeDirectUs: [Double] = []
    var decodeWrappedUs: [Double] = [], decodeDirectUs: [Double] = []
    let perFrame = { (ns: Int64) in Double(ns) / 1_000 / Double(options.frames) }
    for _ in 0..<options.rounds {
        let encode = try encodeRound(signal, frames: options.frames, complexity: options.complexity, wrapped: &wrappedTrain, direct: &directTrain)
        encodeWrappedUs.append(perFrame(encode.wrapper))
        encodeDirectUs.append(perFrame(encode.direct))
        let decode = try decodeRound(directTrain, into: &pcm)
        decodeWrappedUs.append(perFrame(decode.wrapper))
        decodeDirectUs.append(perFrame(decode.direct))
    }
    let identical = wrappedTrain.checksum == directTrain.checksum
        && wrappedTrain.offsets[options.frames] == directTrain.offsets[options.frames]
    guard identical else {
        printToStandardError("opus-bench: the wrapper and direct libopus produced different packets")
        exit(1)
    }

    let encW = median(encodeWrappedUs), encD = median(encodeDirectUs)
    let decW = median(decodeWrappedUs), decD = median(decodeDirectUs)
    func f(_ v: Double, _ digits: Int = 2) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let r = (v * scale).rounded() / scale
        var s = "\(r)"
        let decimals = s.split(separator: ".").last.map(\.count) ?? 0
        if !s.contains(".") { s += "." }
        return s + String(repeating: "0", count: max(0, digits - decimals))
    }
    let json = "{\"encode_us_wrapper\":\(f(encW)),\"encode_us_direct\":\(f(encD)),\"encode_ratio\":\(f(encW / encD, 3)),"
        + "\"decode_us_wrapper\":\(f(decW)),\"decode_us_direct\":\(f(decD)),\"decode_ratio\":\(f(decW / decD, 3)),\"frames\":\(options.frames)}"
    if !options.jsonOnly {
        let bytes = Double(directTrain.offsets[options.frames]) / Double(options.frames)
        print("opus-bench: 48 kHz mono, 20 ms frames, VOIP, 32 kbit/s, FEC on (10 % loss), complexity \(options.complexity)")
        print("  \(options.frames) frames per run (\(f(bytes, 1)) B/packet), \(options.rounds) rounds interleaving wrapper/direct every \(blockFrames) frames, median µs of thread CPU per frame")
        print("  identical packets from both paths: yes")
        print("")
        print("            wrapper     direct    ratio   (per-round wrapper | direct)")
        print("  encode  \(pad(f(encW), 9))  \(pad(f(encD), 9))  \(pad(f(encW / encD, 3), 7))   \(encodeWrappedUs.map { f($0, 1) }.joined(separator: " ")) | \(encodeDirectUs.map { f($0, 1) }.joined(separator: " "))")
        print("  decode  \(pad(f(decW), 9))  \(pad(f(decD), 9))  \(pad(f(decW / decD, 3), 7))   \(decodeWrappedUs.map { f($0, 1) }.joined(separator: " ")) | \(decodeDirectUs.map { f($0, 1) }.joined(separator: " "))")
        print("")
    }
    print(json)
} catch {
    printToStandardError("opus-bench: \(error)")
    exit(1)
}

/// `s` right-aligned in `width` columns.
func pad(_ s: String, _ width: Int) -> String { String(repeating: " ", count: max(0, width - s.count)) + s }
