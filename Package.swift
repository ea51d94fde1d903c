// swift-tools-version:6.0
// Parley: a real-time audio-room media relay for Linux.
//
// Targets point inward: wire formats ← auth ← relay core ← relay runtime ← executables.
// C libraries come from Debian through `.systemLibrary` targets; `CParleySys` is our own tiny C shim
// for the glibc calls Swift cannot see without `_GNU_SOURCE` (recvmmsg/sendmmsg, eventfd, malloc_trim, thread names).
import PackageDescription

// The targets on the relay's per-packet path are built without dynamic exclusivity checks in release. The checks
// (swift_beginAccess on every access to a class's stored property that the optimizer cannot prove exclusive) were
// ~30 % of the relay's user-space instructions under load. These targets are single-threaded per worker and keep
// the checks in debug builds, where every test runs with them.
let perPacketPath: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "Parley",
    products: [
        .executable(name: "parley-relay", targets: ["parley-relay"]),
        .executable(name: "parley", targets: ["parley"]),
        .executable(name: "forward-bench", targets: ["forward-bench"]),
        .executable(name: "jitter-bench", targets: ["jitter-bench"]),
        .executable(name: "opus-bench", targets: ["opus-bench"]),
        .executable(name: "impair-proxy", targets: ["impair-proxy"]),
        .executable(name: "mix-bench", targets: ["mix-bench"]),
        .executable(name: "parley-load", targets: ["parley-load"]),
        .executable(name: "soak-bench", targets: ["soak-bench"]),
        .executable(name: "crypto-bench", targets: ["crypto-bench"]),
    ],
    targets: [
        // C libraries from Debian.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CSpeexDSP", pkgConfig: "speexdsp", providers: [.apt(["libspeexdsp-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // SRTP with SDES keys (AES_CM_128_HMAC_SHA1_80) for the plain-RTP endpoints (ffmpeg, GStreamer).
        .systemLibrary(name: "CSRTP", pkgConfig: "libsrtp2", providers: [.apt(["libsrtp2-dev"])]),
        // DTLS-SRTP for WebRTC members (certificates, the handshake through memory BIOs, RFC 5764 key export) and
        // HMAC-SHA1 for STUN.
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CHiredis", pkgConfig: "hiredis", providers: [.apt(["libhiredis-dev"])]),
        // Message history, stored direct texts and chats: one SQLite file in the state directory.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Ogg pages for room recordings (Ogg Opus files written without decoding).
        .systemLibrary(name: "COgg", pkgConfig: "ogg", providers: [.apt(["libogg-dev"])]),
        // Ogg Opus from PCM for a forward room's mixed rendition (libopusenc).
        .systemLibrary(name: "COpusEnc", pkgConfig: "libopusenc", providers: [.apt(["libopusenc-dev"])]),
        // CRC-32 of PNG chunks when attachments are checked (ParleyRelay's `PNGStructure`).
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // The webhook sender's HTTP client (curl_multi on one thread: timeouts, no redirects, bounded reads).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The SIP gateway's stack: libre's SIP transactions, dialogs and sessions on one event loop (ParleySIP; why
        // libre and not sofia-sip: docs/sip.md).
        .systemLibrary(name: "CLibre", pkgConfig: "libre", providers: [.apt(["libre-dev"])]),
        // G.711 µ-law and A-law for calls from phones.
        .systemLibrary(name: "CSpanDSP", pkgConfig: "spandsp", providers: [.apt(["libspandsp-dev"])]),
        .target(name: "CParleySys"),

        // Wire formats: RTP, RTCP, header extensions, sequence math, the signalling protocol. Pure, no Foundation.
        .target(name: "ParleyWire", swiftSettings: perPacketPath),
        // Signed tokens (JWT HS256), HMAC, cookies, random bytes through libsodium.
        .target(name: "ParleyAuth", dependencies: ["CSodium"]),
        // Session cryptography on libsodium: X25519 keys, the AEADs, the handshake and SRTP (issue 15, being built);
        // libsrtp2 for the plain-RTP endpoints' SDES profile (`SDESSession`).
        .target(name: "ParleyCrypto", dependencies: ["CSodium", "CSRTP", "ParleyWire"], swiftSettings: perPacketPath),
        // Every syscall, through one shim tests can replace (`SystemCalls`): sockets, addresses, batched datagram I/O,
        // poll, eventfd, clocks, threads, termination signals.
        .target(name: "ParleyNet", dependencies: ["CParleySys", "ParleyWire"], swiftSettings: perPacketPath),
        // Audio: the Opus wrapper, the adaptive jitter buffer, receive streams (decode, PLC, FEC, time-stretch), the mixer.
        .target(name: "ParleyMedia", dependencies: ["COpus", "ParleyWire"]),
        // Audio devices and files for the client: ALSA capture/playback, WAV read/write, resampling, speexdsp DSP.
        .target(name: "ParleyAudioIO", dependencies: ["CALSA", "CSpeexDSP"]),
        // The relay's pure core: rooms, members, signalling sessions, forwarding, NACK, stats. No sockets, no clocks.
        .target(name: "ParleyRelayCore", dependencies: ["ParleyWire", "ParleyAuth", "ParleyMedia", "ParleyCrypto", "ParleyWebRTC"], swiftSettings: perPacketPath),
        // WebRTC's wire and handshake pieces, each pure or wrapping one OpenSSL handle: STUN (ICE-lite checks, RFC 8489/8445),
        // SDP offers and answers (RFC 8829/8866 as browsers write them), the DTLS server session and its certificate.
        .target(name: "ParleyWebRTC", dependencies: ["COpenSSL", "ParleyWire"]),
        // The relay runtime: config, the identity key file, worker loops that drive the core over real sockets.
        // A relay's part in a cluster: the directory in Redis (hiredis), on a thread of its own.
        // Its records, room claims and kept texts carry MACs from the cluster's shared secret (ParleyCrypto, ParleyAuth);
        // rediss:// is TLS through OpenSSL over the socket hiredis connected.
        .target(name: "ParleyCluster", dependencies: ["CHiredis", "COpenSSL", "ParleyAuth", "ParleyCrypto"]),
        // Room recordings' pure parts and the Ogg pager: Opus packet durations, gap packets, a stream's timeline, Ogg Opus on libogg.
        .target(name: "ParleyRecording", dependencies: ["COgg", "COpusEnc", "ParleyWire", "ParleyMedia"]),
        // What the relay keeps of texts: SQLite (one connection per thread), the schema and its queries; in a cluster,
        // the same in the cluster's Redis (through ParleyCluster's connection), checked against ParleyWire's limits.
        .target(name: "ParleyHistory", dependencies: ["CSQLite", "ParleyCluster", "ParleyWire"]),
        .target(name: "ParleyRelay", dependencies: ["ParleyRelayCore", "ParleyNet", "ParleyAuth", "ParleyWire", "ParleyCrypto", "ParleyWebRTC",
                                                    "ParleyCluster", "ParleyRecording", "ParleyHistory", "CZlib",
                                                    "CCurl", "ParleySIP"],
                swiftSettings: perPacketPath),
        // The SIP gateway: phones and trunks into rooms (libre on a thread of its own, G.711 ⇄ Opus per call, each call
        // a plain-RTP member of its room).
        .target(name: "ParleySIP",
                dependencies: ["CLibre", "CSpanDSP", "ParleyMedia", "ParleyWire", "ParleyNet", "ParleyAuth",
                               "ParleyCrypto"]),
        // The HTTP API: a pure router (JSON in/out, auth, validation), Prometheus metrics, libmicrohttpd at the edge.
        .target(name: "ParleyHTTP", dependencies: ["CMicroHTTPD", "ParleyRelay", "ParleyHistory", "ParleyRelayCore", "ParleyAuth", "ParleyNet", "ParleyWire", "ParleyCrypto", "ParleyWebRTC",
                                                  "ParleyCluster", "ParleySIP"]),
        // The client's pure core: one signalling session (handshake, reliable messages, keepalives, resume) under room
        // members and presence, and the clock-driven engine (send/receive paths, NACKs, receiver reports, FEC, rejoin).
        .target(name: "ParleyClientCore", dependencies: ["ParleyWire", "ParleyAuth", "ParleyMedia", "ParleyCrypto"]),

        .executableTarget(name: "parley-relay",
                          dependencies: ["ParleyRelay", "ParleyHTTP", "ParleyAuth", "ParleyCluster", "ParleySIP"]),
        .executableTarget(name: "parley", dependencies: ["ParleyClientCore", "ParleyNet", "ParleyAuth", "ParleyWire", "ParleyMedia", "ParleyAudioIO", "ParleyCrypto"]),

        // Benchmarks/: the in-process benchmarks and what they share; Benchmarks/tools: programs that benchmarks and
        // tests run against real relays (the load generator, the impairment proxy); Benchmarks/scripts: benchmarks
        // through real processes (shell and Python, by subject).
        .target(name: "CAllocCounter", path: "Benchmarks/CAllocCounter"),
        // What the in-process benchmarks share: clocks (a manual one for the core), allocation counts, output helpers.
        .target(name: "BenchmarkSupport", dependencies: ["ParleyRelayCore", "CAllocCounter"], path: "Benchmarks/BenchmarkSupport"),
        .executableTarget(name: "forward-bench",
                          dependencies: ["BenchmarkSupport", "ParleyRelayCore", "ParleyClientCore", "ParleyCrypto",
                                         "ParleyNet", "ParleyWire", "ParleyAuth", "ParleyWebRTC", "CAllocCounter"],
                          path: "Benchmarks/forward-bench"),

        // A real sender's timing (capture stalls, clock drift): one model for jitter-bench's traces and impair-proxy.
        .target(name: "SenderModel", dependencies: ["ParleyWire"], path: "Benchmarks/SenderModel"),
        .executableTarget(name: "jitter-bench",
                          dependencies: ["ParleyMedia", "ParleyClientCore", "ParleyAudioIO", "ParleyWire", "CSpeexDSP",
                                         "SenderModel"],
                          path: "Benchmarks/jitter-bench"),
        .executableTarget(name: "opus-bench", dependencies: ["BenchmarkSupport", "ParleyMedia", "COpus"], path: "Benchmarks/opus-bench"),
        .executableTarget(name: "mix-bench", dependencies: ["BenchmarkSupport", "ParleyRelayCore", "ParleyMedia", "ParleyWire", "ParleyAuth", "CAllocCounter"], path: "Benchmarks/mix-bench"),

        // Memory after many join/leave cycles (or a join flood) against an in-process core: nothing a session held survives it.
        .executableTarget(name: "soak-bench", dependencies: ["BenchmarkSupport", "ParleyRelayCore", "ParleyClientCore", "ParleyWire", "ParleyAuth", "ParleyCrypto"],
                          path: "Benchmarks/soak-bench"),

        // SRTP (RFC 7714, AEAD_AES_256_GCM) protect/unprotect per 120-byte packet against libsodium's bare AEADs, allocations per packet.
        .executableTarget(name: "crypto-bench", dependencies: ["BenchmarkSupport", "ParleyCrypto", "ParleyAuth", "ParleyWire", "ParleyWebRTC", "CSodium", "CAllocCounter"],
                          path: "Benchmarks/crypto-bench"),

        // Members over UDP through real signalling against a real relay or cluster, with a raw fan-out baseline.
        .executableTarget(name: "parley-load",
                          dependencies: ["ParleyClientCore", "ParleyWire", "ParleyNet", "ParleyAuth", "ParleyMedia",
                                         "CParleySys"],
                          path: "Benchmarks/tools/parley-load"),
        // A seeded UDP proxy between clients and a relay: it delays, jitters, loses, reorders and duplicates datagrams.
        .executableTarget(name: "impair-proxy", dependencies: ["ParleyNet", "ParleyWire", "SenderModel"],
                          path: "Benchmarks/tools/impair-proxy"),

        .testTarget(name: "ParleyWireTests", dependencies: ["ParleyWire"]),
        .testTarget(name: "ParleyNetTests", dependencies: ["ParleyNet", "ParleyWire", "CParleySys"]),
        .testTarget(name: "ParleyMediaTests", dependencies: ["ParleyMedia", "ParleyWire"]),
        .testTarget(name: "ParleyClientCoreTests", dependencies: ["ParleyClientCore", "ParleyWire", "ParleyMedia", "ParleyCrypto"]),
        .testTarget(name: "ParleyAudioIOTests", dependencies: ["ParleyAudioIO"]),
        .testTarget(name: "ParleyAuthTests", dependencies: ["ParleyAuth", "ParleyWire"]),
        .testTarget(name: "ParleyWebRTCTests", dependencies: ["ParleyWebRTC", "ParleyWire"]),
        .testTarget(name: "ParleyCryptoTests", dependencies: ["ParleyCrypto", "ParleyWire"]),
        .testTarget(name: "ParleyRelayCoreTests", dependencies: ["ParleyRelayCore", "ParleyClientCore", "ParleyWire", "ParleyAuth", "ParleyMedia", "ParleyCrypto", "ParleyWebRTC"]),
        .testTarget(name: "ParleyClusterTests", dependencies: ["ParleyCluster", "ParleyCrypto"]),
        .testTarget(name: "ParleyHistoryTests", dependencies: ["ParleyHistory", "ParleyCluster", "ParleyWire"]),
        .testTarget(name: "ParleyRecordingTests", dependencies: ["ParleyRecording", "ParleyWire", "ParleyMedia"]),
        .testTarget(name: "ParleySIPTests", dependencies: ["ParleySIP", "ParleyWire", "ParleyMedia"]),
        // What more than one test target uses: scratch directories, the smallest image of each kind. Imports nothing
        // of Parley.
        .target(name: "ParleyTestSupport", path: "Tests/ParleyTestSupport"),
        // The relay runtime's own parts: config, the key and TLS files, attachments (files, quotas, image checks), the
        // message store, the event hub, the fan-out ring, recordings' catalog.
        .testTarget(name: "ParleyRelayTests",
                    dependencies: ["ParleyRelay", "ParleyRelayCore", "ParleyAuth", "ParleyWire", "ParleyNet",
                                   "ParleyCluster", "ParleyHistory", "ParleyWebRTC", "ParleyTestSupport"]),
        // The HTTP API: the router and its routes without sockets, the server over loopback.
        .testTarget(name: "ParleyHTTPTests",
                    dependencies: ["ParleyHTTP", "ParleyRelay", "ParleyRelayCore", "ParleyAuth", "ParleyWire",
                                   "ParleyNet", "ParleyCrypto", "ParleyWebRTC", "ParleyCluster", "ParleyTestSupport"]),
        .testTarget(name: "ParleyIntegrationTests", dependencies: ["ParleyWire", "ParleyNet", "ParleyAuth", "ParleyAudioIO", "ParleyMedia"]),
        // docs/architecture.md's "Where things live" table against the code: every source directory listed, imports per target.
        .testTarget(name: "WhereThingsLiveTests"),
    ]
)
