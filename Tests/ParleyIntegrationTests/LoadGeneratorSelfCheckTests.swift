import Testing

@Suite("parley-load's own rules (its --self-check), run by every make test")
struct LoadGeneratorSelfCheckTests {
    @Test("the load generator's accounting, verdicts, block pooling and /proc probes pass their worked cases")
    func selfCheck() throws {
        let run = try Spawned("parley-load", ["--self-check"])
        let status = run.wait(seconds: 30)
        #expect(status == 0, "\(run.stdout)\(run.stderr)")
        let summary = try #require(run.lines.last { $0.hasPrefix("self-check:") })
        let counts = summary.split(separator: " ").compactMap { Int($0) }
        #expect(counts.count == 2 && counts[0] == counts[1] && counts[0] >= 37, "\(summary)")
    }
}
