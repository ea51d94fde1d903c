import Foundation

/// Whether a run measured what it was asked to, and the exit status that says so. Pure: built from counts.
///
/// Exit statuses: 0 the figures stand; 1 the run could not be made; 2 usage; 3 members asked for were missing (refused,
/// never welcomed, or admitted after media started); 4 the load generator's send ticks ran late, so the run measured
/// the generator rather than the relay; 5 both.
struct Verdict: Equatable {
    enum Problem: Equatable {
        /// `missing` of `asked` members were not in their rooms when media started; `reasons` by count, most first.
        case membersMissing(missing: Int, asked: Int, reasons: [Reason])
        /// The worst send tick was `worstMilliseconds` late against a limit of `limitMilliseconds`; `lateTicks` were over it.
        case generatorLate(worstMilliseconds: Double, limitMilliseconds: Double, lateTicks: Int)
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
    ///   - tickLatenessMaxMilliseconds: the latest any send tick ran, over all runs.
    ///   - lateTicks: ticks later than the limit.
    init(asked: Int, missingReasons: [String], tickLatenessMaxMilliseconds: Double, lateTicks: Int,
         limitMilliseconds: Double) {
        var problems: [Problem] = []
        if !missingReasons.isEmpty {
            var counts: [String: Int] = [:]
            for r in missingReasons { counts[r, default: 0] += 1 }
            let reasons = counts.map { Reason(text: $0.key, count: $0.value) }
                .sorted { $0.count != $1.count ? $0.count > $1.count : $0.text < $1.text }
            problems.append(.membersMissing(missing: missingReasons.count, asked: asked, reasons: reasons))
        }
        if tickLatenessMaxMilliseconds > limitMilliseconds {
            problems.append(.generatorLate(worstMilliseconds: tickLatenessMaxMilliseconds, limitMilliseconds: limitMilliseconds,
                                           lateTicks: lateTicks))
        }
        self.problems = problems
    }

    var membersMissing: Bool { problems.contains { if case .membersMissing = $0 { return true }; return false } }
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
            case .generatorLate(let worst, let limit, let lateTicks):
                return "GENERATOR OVERLOADED: its send ticks ran up to \(Self.milliseconds(worst)) ms late (\(lateTicks) over the " +
                    "\(Self.milliseconds(limit)) ms limit, --max-tick-lateness-ms): this run measured the load generator, not the relay"
            }
        }
    }

    private static func milliseconds(_ v: Double) -> String { String(format: "%.2f", v) }
}
