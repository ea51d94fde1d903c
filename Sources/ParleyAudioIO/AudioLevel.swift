import Glibc

/// RFC 6464 level of a frame: −dBov of its RMS, 0 (loud) … 127 (silent).
///
/// 0 dBov is the RMS of a full-scale square wave (32767); a full-scale sine is about 3 dBov and a −20 dBFS sine
/// (peak 3277) about 23. Digital silence, and anything quieter than −127 dBov, is 127. Does not allocate.
public func audioLevel(_ frame: UnsafeBufferPointer<Int16>) -> UInt8 {
    guard !frame.isEmpty else { return 127 }
    var sumOfSquares: Double = 0
    for sample in frame {
        let value = Double(sample)
        sumOfSquares += value * value
    }
    let meanSquare = sumOfSquares / Double(frame.count)
    guard meanSquare > 0 else { return 127 }
    let fullScale = 32767.0
    let dBov = 10 * log10(meanSquare / (fullScale * fullScale))
    let level = (-dBov).rounded()
    if level <= 0 { return 0 }
    if level >= 127 { return 127 }
    return UInt8(level)
}
