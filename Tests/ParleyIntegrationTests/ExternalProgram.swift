import Foundation
import Testing

/// A program from a Debian package that an integration test starts.
///
/// `make test` installs every package named here: the list lives in the Makefile (`DEBS_TEST`), and
/// `ExternalProgramTests` fails when a program below names a package that list lacks. A test that needs a missing
/// program fails with `MissingProgram`, which names the package; it never skips.
struct ExternalProgram: Sendable, CustomStringConvertible {
    /// Absolute path of the executable.
    let path: String
    /// The Debian package that provides it.
    let package: String

    static let curl = ExternalProgram(path: "/usr/bin/curl", package: "curl")
    /// Debian's Python: the webhook receiver of the webhook tests (`Tests/Interop/webhook_receiver.py`, stdlib only).
    static let python3 = ExternalProgram(path: "/usr/bin/python3", package: "python3")
    static let ffmpeg = ExternalProgram(path: "/usr/bin/ffmpeg", package: "ffmpeg")
    static let ffprobe = ExternalProgram(path: "/usr/bin/ffprobe", package: "ffmpeg")
    static let espeakNG = ExternalProgram(path: "/usr/bin/espeak-ng", package: "espeak-ng")
    static let openssl = ExternalProgram(path: "/usr/bin/openssl", package: "openssl")
    static let tcpdump = ExternalProgram(path: "/usr/bin/tcpdump", package: "tcpdump")
    /// GStreamer's launcher; its pipelines need the plugin packages beside it (DEBS_TEST: plugins base, good, bad).
    static let gstLaunch = ExternalProgram(path: "/usr/bin/gst-launch-1.0", package: "gstreamer1.0-tools")
    static let tshark = ExternalProgram(path: "/usr/bin/tshark", package: "tshark")
    /// The cluster's directory.
    static let redisServer = ExternalProgram(path: "/usr/bin/redis-server", package: "redis-server")
    /// Redis's command-line client: the hostile writer of the cluster tests (anyone who reaches the cluster's Redis).
    static let redisCLI = ExternalProgram(path: "/usr/bin/redis-cli", package: "redis-tools")
    /// Headless Chromium, the WebRTC browser of the browser tests.
    static let chromium = ExternalProgram(path: "/usr/bin/chromium", package: "chromium")
    /// coturn, the TURN server WebRTC members reach the relay through (`use-auth-secret`: credentials the relay signs).
    static let turnserver = ExternalProgram(path: "/usr/bin/turnserver", package: "coturn")
    /// coturn's test client: a TURN allocation with given credentials, and data through it.
    static let turnutilsUclient = ExternalProgram(path: "/usr/bin/turnutils_uclient", package: "coturn")
    /// A mount namespace of its own (the full-disk tests mount a small tmpfs there; `mount` comes with it).
    static let unshare = ExternalProgram(path: "/usr/bin/unshare", package: "util-linux")
    /// Network namespaces and veth pairs (the NAT and IPv6 lab of the reachability tests).
    static let ip = ExternalProgram(path: "/sbin/ip", package: "iproute2")
    /// The lab's NAT (run inside a namespace through `ip netns exec`).
    static let nft = ExternalProgram(path: "/usr/sbin/nft", package: "nftables")
    /// Prometheus, scraping a relay with the sample scrape configuration (Samples/monitoring).
    static let prometheus = ExternalProgram(path: "/usr/bin/prometheus", package: "prometheus")
    /// A SIP softphone (its aufile, g711, sndfile and alsa modules): the phone that dials the relay's SIP gateway.
    static let baresip = ExternalProgram(path: "/usr/bin/baresip", package: "baresip-core")
    /// SIPp: many SIP calls at once with RTP from a pcap (its built-in scenarios and pcaps).
    static let sipp = ExternalProgram(path: "/usr/bin/sipp", package: "sip-tester")
    /// The unit file's check (`systemd-analyze verify`) of the package's service.
    static let systemdAnalyze = ExternalProgram(path: "/usr/bin/systemd-analyze", package: "systemd")

    /// The interop tests' Python: a venv of Debian's python3 with PyPI's aiortc, pesq, numpy and scipy, which
    /// `make test` makes at `.build/interop-venv` (its Makefile rule; the Debian side is python3-venv and a compiler).
    static let interopPython = ExternalProgram(path: packageRoot + "/.build/interop-venv/bin/python3", package: "python3-venv")
    /// The package directory (this file is `Tests/ParleyIntegrationTests/ExternalProgram.swift`).
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Every program the tests start.
    static let all: [ExternalProgram] = [.curl, .python3, .ffmpeg, .ffprobe, .espeakNG, .openssl, .tcpdump,
        .gstLaunch, .tshark, .chromium, .interopPython,
                                         .redisServer, .redisCLI, .unshare, .ip, .nft, .turnserver, .turnutilsUclient,
                                         .prometheus, .systemdAnalyze, .baresip, .sipp]

    var description: String { path }

    /// The executable's URL, or `MissingProgram` when it is not installed.
    func url() throws -> URL {
        guard FileManager.default.isExecutableFile(atPath: path) else { throw MissingProgram(program: self) }
        return URL(fileURLWithPath: path)
    }
}

/// A program a test needs is not installed.
struct MissingProgram: Error, CustomStringConvertible {
    let program: ExternalProgram
    var description: String {
        "\(program.path) is missing: install the Debian package \(program.package) (`make test` installs it: DEBS_TEST in the Makefile)"
    }
}

@Suite("Programs the tests start come from make test")
struct ExternalProgramTests {
    /// The packages named on the Makefile's `DEBS_RUN`, `DEBS_FUZZ` and `DEBS_TEST` lines (`DEBS_TEST` takes in the others).
    static func makefilePackages() throws -> Set<String> {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let makefile = try String(contentsOf: root.appendingPathComponent("Makefile"), encoding: .utf8)
        var packages = Set<String>()
        for line in makefile.split(separator: "\n") where ["DEBS_RUN ", "DEBS_FUZZ ", "DEBS_TEST "].contains(where: { line.hasPrefix($0) }) {
            guard let value = line.split(separator: "=", maxSplits: 1).last else { continue }
            // `DEBS_TEST := $(sort $(DEBS_RUN) … curl ffmpeg)`: the words that are not references, without parentheses.
            for word in value.split(separator: " ") where !word.hasPrefix("$(") {
                packages.insert(String(word).trimmingCharacters(in: CharacterSet(charactersIn: "()")))
            }
        }
        return packages
    }

    @Test("every program a test starts is in a package that make test installs")
    func everyPackageIsInstalledByMakeTest() throws {
        let packages = try Self.makefilePackages()
        #expect(packages.contains("libopus-dev"), "the Makefile's DEBS_RUN was not read: \(packages.sorted())")
        for program in ExternalProgram.all {
            #expect(packages.contains(program.package), "\(program.path) comes from \(program.package), which DEBS_TEST lacks")
        }
    }

    @Test("every program a test starts is installed here (make test installed it)")
    func everyProgramIsInstalled() throws {
        for program in ExternalProgram.all { _ = try program.url() }
    }

    @Test("a missing program is an error naming its package")
    func missingProgramNamesThePackage() {
        let absent = ExternalProgram(path: "/nonexistent/parley-no-such-program", package: "parley-no-such-package")
        #expect(throws: MissingProgram.self) { try absent.url() }
        #expect(MissingProgram(program: absent).description.contains("install the Debian package parley-no-such-package"))
    }
}
