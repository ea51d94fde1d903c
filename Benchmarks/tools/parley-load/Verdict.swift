import Foundation

/// Whether a run measured what it was asked to, and the exit status that says so. Pure: built from counts.
///
/// Exit statuses: 0 the figures stand; 1 the run could not be made; 2 usage; 3 members asked for were missing (refused,
/// never welcomed, admitted after media started, or removed by the relay while media flowed); 4 the load generator's send ticks ran late, so the run measured
/// the generator rather than the relay; 5 both.
///
/// The generator is judged late when its 99th-percentile send tick is later than the limit: then at least 1 % of its
/// ticks were, which is a generator that cannot keep up (its receive side is behind too, and that delay and any
/// socket overflow would be charged to the relay). A lone late tick — the shared machine preempting it once — does
/// not void a run; the worst tick is reported beside the percentile.
struct Verdict: Equatable {
    enum Problem: Equatable {
        /// `missing` of `asked` members were not in their rooms when media started; `reasons` by count, most first.
        case membersMissing(missing: Int, asked: Int, reasons: [Reason])
        /// `removed` of `asked` members were removed by the relay while media flowed (its goodbye); `reasons` by count.
        case membersRemoved(removed: Int, asked: Int, reasons: [Reason])
        /// The 99th-percentile send tick was `p99Milliseconds` late (the worst `worstMilliseconds`) against a limit of
        /// `limitMilliseconds`; `lateTicks` of `ticks` were over it.
        case generatorLate(p99Milliseconds: Double, worstMilliseconds: Double, limitMilliseconds: Double, lateTicks: Int, ticks: Int)
    }

    /// Why members were missing, and how many for each reason.
    struct Reason: Equatable {
        var text: String
        var count: Int
    }

    static let membersMissingStatus: Int32 = 3
    static let generatorLateStatus: Int32 = 4
    static let bothStatus: Int32 = 5

    let problems: [Problem]

    /// - Parameters:
    ///   - asked: members per run the command line asked for.
    ///   - missingReasons: one entry per member missing at the start of media (the worst run), its reason.
    ///   - tickLateness: how late the send ticks ran, of the run judged (the worst block's).
    ///   - lateTicks: ticks later than the limit, over all runs.
    ///   - removedReasons: one entry per member the relay removed while media flowed (the run with most), its reason.
    init(asked: Int, missingReasons: [String], removedReasons: [String] = [], tickLateness: LatencyHistogram, lateTicks: Int,
         limitMilliseconds: Double) {
        var problems: [Problem] = []
        func tally(_ texts: [String]) -> [Reason] {
            var counts: [String: Int] = [:]
            for r in texts { counts[r, default: 0] += 1 }
            return counts.map { Reason(text: $0.key, count: $0.value) }
                .sorted { $0.count != $1.count ? $0.count > $1.count : $0.text < $1.text }
        }
        if !missingReasons.isEmpty {
            problems.append(.membersMissing(missing: missingReasons.count, asked: asked, reasons: tally(missingReasons)))
        }
        if !removedReasons.isEmpty {
            problems.append(.membersRemoved(removed: removedReasons.count, asked: asked, reasons: tally(removedReasons)))
        }
        let p99 = tickLateness.quantileMilliseconds(0.99)
        if p99 > limitMilliseconds {
            problems.append(.generatorLate(p99Milliseconds: p99, worstMilliseconds: tickLateness.maxMilliseconds,
                                           limitMilliseconds: limitMilliseconds, lateTicks: lateTicks, ticks: tickLateness.total))
        }
        self.problems = problems
    }

    /// Members asked for were not all there for the whole run (missing at the start, or removed during it).
    var membersMissing: Bool {
        problems.contains { switch $0 { case .membersMissing, .membersRemoved: true; case .generatorLate: false } }
    }
    var generatorLate: Bool { problems.contains { if case .generatorLate = $0 { return true }; return false } }

    var exitStatus: Int32 {
        switch (membersMissing, generatorLate) {
        case (false, false): return 0
        case (true, false): return Self.membersMissingStatus
        case (false, true): return Self.generatorLateStatus
        case (true, true): return Self.bothStatus
        }
    }

    /// One line per problem, for the report; empty when the figures stand.
    var lines: [String] {
        problems.map { problem in
            switch problem {
            case .membersMissing(let missing, let asked, let reasons):
                let shown = reasons.prefix(3).map { "\($0.count) × \($0.text)" }.joined(separator: "; ")
                let more = reasons.count > 3 ? "; \(reasons.count - 3) other reasons" : ""
                return "NOT AS ASKED: \(missing) of \(asked) members were missing when media started (\(shown)\(more)); " +
                    "they count as not delivered for every packet they missed"
            case .membersRemoved(let removed, let asked, let reasons):
                let shown = reasons.prefix(3).map { "\($0.count) × \($0.text)" }.joined(separator: "; ")
                return "MEMBERS REMOVED: the relay ended \(removed) of \(asked) members' sessions while media flowed (\(shown)); " +
                    "they count as not delivered for every packet they missed"
            case .generatorLate(let p99, let worst, let limit, let lateTicks, let ticks):
                return "GENERATOR OVERLOADED: its send ticks ran \(Self.milliseconds(p99)) ms late at the 99th percentile, " +
                    "\(Self.milliseconds(worst)) ms at worst (\(lateTicks) of \(ticks) over the \(Self.milliseconds(limit)) ms limit, " +
                    "--max-tick-lateness-ms): it could not keep its own 20 ms schedule " +
                    "(too much load, or starved by other work on the machine), so this run measured the load generator, not the relay"
            }
        }
    }

    private static func milliseconds(_ v: Double) -> String { String(format: "%.2f", v) }
}
