import Foundation
import Testing

extension ProcessTests {
    @Suite("Monitoring: Debian's Prometheus scrapes a relay with Samples/monitoring; the dashboard's series exist")
    struct MonitoringProcessTests {
        static let samples = ExternalProgram.packageRoot + "/Samples/monitoring"

        /// The sample's target and interval are set for the test; the rest is as shipped.
        @Test("the sample scrape config brings parley_members and process_cpu_seconds_total into Prometheus")
        func prometheusScrapes() throws {
            let (relay, server) = try startRelay(workers: 1)
            defer { relay.signal(SIGTERM); relay.wait(seconds: 5) }
            let base = try #require(httpBase(of: relay))
            let target = String(base.dropFirst("http://".count))
            let member = try Spawned(
                "parley",
                [
                    "join", "watched", "--identity", "w", "--server", server, "--listen-only",
                    "--no-playback", "--no-tui", "--duration", "20",
                ])
            defer { member.signal(SIGINT); member.wait(seconds: 5) }
            #expect(member.waitFor(seconds: 5) { $0.contains("joined watched") })

            let directory = NSTemporaryDirectory() + "parley-prometheus-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let sample = try String(contentsOfFile: Self.samples + "/prometheus.yml", encoding: .utf8)
            #expect(sample.contains("127.0.0.1:7480") && sample.contains("scrape_interval: 15s"))
            let config = sample.replacingOccurrences(of: "127.0.0.1:7480", with: target)
                .replacingOccurrences(of: "scrape_interval: 15s", with: "scrape_interval: 1s")
            try config.write(toFile: directory + "/prometheus.yml", atomically: true, encoding: .utf8)
            let port = Int(freeTCPPort())
            let prometheus = try Spawned(
                .prometheus,
                [
                    "--config.file=\(directory)/prometheus.yml", "--storage.tsdb.path=\(directory)/data",
                    "--web.listen-address=127.0.0.1:\(port)",
                ])
            defer { prometheus.signal(SIGTERM); prometheus.wait(seconds: 10) }

            func value(_ query: String) throws -> Double? {
                let answer = try curl("GET", "http://127.0.0.1:\(port)/api/v1/query?query=\(query)")
                guard answer.status == 200,
                    let object = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
                    let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
                    let first = result.first, let pair = first["value"] as? [Any], let text = pair.last as? String
                else { return nil }
                return Double(text)
            }
            var members: Double?
            var cpu: Double?
            let scraped = try eventually(seconds: 20) {
                members = try value("parley_members")
                cpu = try value("process_cpu_seconds_total")
                return members == 1 && (cpu ?? 0) > 0
            }
            #expect(
                scraped, "members \(String(describing: members)), cpu \(String(describing: cpu)): \(prometheus.stderr)")
            #expect(try value("up") == 1)
        }

        @Test("every series the Grafana dashboard queries is one the relay's /metrics exports")
        func dashboardSeriesExist() throws {
            let (relay, _) = try startRelay(
                workers: 1,
                environment: [
                    "PARLEY_WEBHOOK": "http://127.0.0.1:9/hook",
                    "PARLEY_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                ])
            defer { relay.signal(SIGINT); relay.wait(seconds: 5) }
            let metrics = try curl("GET", try #require(httpBase(of: relay)) + "/metrics").body
            let exported = Set(
                metrics.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }
                    .map { String($0.split(separator: " ")[2]) })
            let data = try Data(contentsOf: URL(fileURLWithPath: Self.samples + "/grafana-dashboard.json"))
            let dashboard = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            let panels = try #require(dashboard["panels"] as? [[String: Any]])
            let expressions = panels.flatMap {
                ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String }
            }
            #expect(expressions.count >= 14)
            let names = Set(
                expressions.flatMap { expression in
                    expression.matches(of: /(?:parley|process)_[a-z_]+/).map { String($0.output) }
                })
            for name in names {
                let family = name.replacingOccurrences(
                    of: #"_(bucket|sum|count)$"#, with: "", options: .regularExpression)
                #expect(exported.contains(family), "the dashboard queries \(name), which /metrics does not export")
            }
        }
    }
}
