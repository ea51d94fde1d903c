import Foundation
import ParleyAuth
import ParleyRelayCore
import Testing

@testable import ParleyRelay

@Suite("A reload (SIGHUP): what it puts in force, what waits for a restart, what it refuses")
struct ConfigReloadTests {
    static let secret = "a-secret-of-enough-bytes-1"

    @Test(
        "keys, limits and the log level come from the new file; sockets, workers, directories keep the running values")
    func reloadedKeepsRestartOnly() throws {
        let running = try RelayConfig.build(
            file: RelayConfigTests.file(
                #"""
                {"udp": "127.0.0.1:7400", "workers": 2, "state_dir": "/tmp/a", "api_key": "one",
                 "api_secret": "\#(Self.secret)",
                 "max_members_per_room": 50, "log_level": "info"}
                """#), environment: [:], flags: [])
        let file = try RelayConfigTests.file(
            #"""
            {"udp": "127.0.0.1:7500", "workers": 4, "state_dir": "/tmp/b", "api_keys": {"two": "\#(Self.secret)"},
             "max_members_per_room": 2, "log_level": "debug", "log_format": "json", "http_max_connections": 77}
            """#)
        let read = try RelayConfig.build(file: file, environment: [:], flags: [("workers", "3")])
        #expect(Set(running.restartOnlyChanges(to: read)) == ["udp", "workers", "state_dir", "log_format"])
        let next = running.reloaded(to: read)
        #expect(next.apiKeys == ["two": Self.secret])
        #expect(next.core.maxMembersPerRoom == 2)
        #expect(next.logLevel == .debug)
        #expect(next.httpLimits.maxConnections == 77)
        #expect(next.udp.description == "127.0.0.1:7400" && next.workers == 2 && next.stateDir == "/tmp/a")
        #expect(next.logFormat == .text)
        #expect(running.restartOnlyChanges(to: next).isEmpty)
    }

    @Test("a file that does not parse, a key without its secret, a bad value: refused with the reason")
    func refusals() throws {
        let broken = try RelayConfigTests.file(#"{"api_key": "one", "api_secret": "\#(Self.secret)",,}"#)
        let syntax = #expect(throws: ConfigError.self) {
            try RelayConfig.build(file: broken, environment: [:], flags: [])
        }
        #expect(
            syntax?.description.hasPrefix("config file \(broken) is not valid JSON") == true,
            "\(String(describing: syntax))")
        let half = try RelayConfigTests.file(#"{"api_key": "three"}"#)
        let pair = #expect(throws: ConfigError.self) { try RelayConfig.build(file: half, environment: [:], flags: []) }
        #expect(pair?.description.contains("api_key \"three\" is set without api_secret") == true)
        let format = try RelayConfigTests.file(#"{"log_format": "xml"}"#)
        let bad = #expect(throws: ConfigError.self) { try RelayConfig.build(file: format, environment: [:], flags: []) }
        #expect(bad?.description == "log_format must be text or json, got \"xml\"")
        let missing = #expect(throws: ConfigError.self) {
            try RelayConfig.build(file: "/nonexistent/relay.json", environment: [:], flags: [])
        }
        #expect(missing?.description == "cannot read config file /nonexistent/relay.json")
    }

    @Test("JSON log lines: time, level, msg, the common fields and the line's own, every string escaped")
    func jsonLines() throws {
        let log = StderrLog(threshold: .info, format: .json)
        log.addCommonField("node", "n1")
        let line = log.line(
            .warning, "say \"hi\"\n\u{1}\\", fields: [("room", "r\u{2028}"), ("identity", "é")],
            unixMilliseconds: 1_800_000_000_123)
        #expect(
            line == #"{"time":"2027-01-15T08:00:00.123Z","level":"warning","msg":"say \"hi\"\n\u0001\\","#
                + #""node":"n1","room":"r\u2028","identity":"é"}"#)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["msg"] == "say \"hi\"\n\u{1}\\" && object["room"] == "r\u{2028}")
        let text = StderrLog(threshold: .info)
        #expect(
            text.line(.info, "m", fields: [("room", "r")], unixMilliseconds: 1_800_000_000_123)
                == "2027-01-15T08:00:00.123Z info m")
        log.threshold = .error
        #expect(log.threshold == .error)
    }
}
