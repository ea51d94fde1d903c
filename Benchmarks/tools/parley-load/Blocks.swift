/// The order Parley and the raw forwarder take turns in, and how their blocks are compared. Pure.
///
/// Each side runs `blocksPerSide` blocks, in pairs that alternate which side goes first — P R, R P, P R, … — so a
/// drift in the machine's other load (a build starting, a CPU warming up) falls on both sides alike, as in mix-bench.
enum Blocks {
    enum Side: Equatable { case parley, raw }

    static func order(blocksPerSide: Int) -> [Side] {
        (0..<blocksPerSide).flatMap { $0 % 2 == 0 ? [Side.parley, .raw] : [.raw, .parley] }
    }

    /// Parley's figure ÷ the raw forwarder's for each pair of blocks (the k-th block of each side); pairs where the raw
    /// figure is zero are left out.
    static func pairRatios(parley: [Double], raw: [Double]) -> [Double] {
        zip(parley, raw).compactMap { $1 > 0 ? $0 / $1 : nil }
    }

    /// What each Parley block spent per output datagram beyond its raw pair, in ns (1e9/parley − 1e9/raw, both in
    /// output packets per CPU-second): the figure that holds on a machine whose kernel path is faster or slower,
    /// where the ratio moves with it. A pair with either side at zero is left out.
    static func pairExtraNanoseconds(parley: [Double], raw: [Double]) -> [Double] {
        zip(parley, raw).compactMap { $0 > 0 && $1 > 0 ? 1e9 / $0 - 1e9 / $1 : nil }
    }

    /// The median (mean of the middle two for an even count); nil when empty.
    static func median(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let s = values.sorted()
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }
}
