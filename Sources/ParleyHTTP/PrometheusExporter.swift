import ParleyNet
import ParleyRelay
import ParleyRelayCore
import ParleyWire

/// Renders the workers' snapshots as Prometheus text exposition (version 0.0.4).
public enum PrometheusExporter {
    /// Metric families, one `# HELP`/`# TYPE` pair each; the HTTP server's own when `http` is given.
    public static func render(_ workers: [WorkerSnapshot], config: RelayCoreConfig, http: HTTPStats.Snapshot? = nil) -> String {
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ samples: [(labels: String, value: String)]) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
            for s in samples { out += "\(name)\(s.labels.isEmpty ? "" : "{\(s.labels)}") \(s.value)\n" }
        }
        func total(_ key: (RelayCounters) -> UInt64) -> [(labels: String, value: String)] {
            [("", String(workers.reduce(0) { $0 &+ key($1.counters) }))]
        }
        func socketTotal(_ key: (DatagramCounters) -> UInt64) -> String {
            String(workers.reduce(0) { $0 &+ key($1.datagrams) })
        }
        family("parley_rooms", "gauge", "Rooms open.", [("", String(workers.reduce(0) { $0 + $1.rooms.count }))])
        family("parley_members", "gauge", "Members connected.", [("", String(workers.reduce(0) { $0 + $1.memberCount }))])
        family("parley_presence_sessions", "gauge", "Presence sessions (parley listen).",
               [("", String(workers.reduce(0) { $0 + $1.presence.count }))])
        family("parley_calls_active", "gauge", "Calls ringing or in progress.", [("", String(workers.reduce(0) { $0 + $1.calls.count }))])
        // What the relay hears from its members now: losses on their streams, the worst jitter among them.
        let members = workers.flatMap { $0.rooms.flatMap(\.members) }.filter { $0.transport != "cascade" }
        family("parley_member_packets_lost", "gauge",
               "Packets lost from the streams of the members connected now (RFC 3550 cumulative, summed).",
               [("", String(members.reduce(Int64(0)) { $0 &+ max(0, $1.packetsLost) }))])
        family("parley_member_jitter_max_seconds", "gauge",
               "The highest interarrival jitter among the streams of the members connected now (RFC 3550).",
               [("", String(Double(members.map(\.jitter).max() ?? 0) / 48_000))])
        family("process_cpu_seconds_total", "counter", "CPU seconds the relay used (user and system).",
               [("", String(Clock.processCPUSeconds()))])
        family("parley_build_info", "gauge", "The relay's version, as a label.",
               [("version=\"\(ParleyVersion.string)\"", "1")])
        family("parley_packets_in_total", "counter", "Datagrams received.", total(\.packetsIn))
        family("parley_bytes_in_total", "counter", "Bytes received.", total(\.bytesIn))
        family("parley_packets_out_total", "counter", "Datagrams the kernel accepted to send.", [("", socketTotal(\.packetsSent))])
        family("parley_bytes_out_total", "counter", "Bytes the kernel accepted to send.", [("", socketTotal(\.bytesSent))])
        family("parley_packets_queued_total", "counter",
               "Datagrams the relay core queued to send (then accepted, refused, pending or dropped at the socket).",
               total(\.packetsQueued))
        family("parley_bytes_queued_total", "counter", "Bytes the relay core queued to send.", total(\.bytesQueued))
        family("parley_send_failures_total", "counter", "Datagrams the kernel refused to send, by reason.",
               SocketError.Kind.allCases.map { k in ("reason=\"\(k.label)\"", socketTotal { $0.sendFailures(k) }) })
        family("parley_send_deferred_total", "counter", "Datagrams that met a full socket and waited for it in the send queue.",
               [("", socketTotal(\.sendsDeferred))])
        family("parley_send_queue_drops_total", "counter", "Datagrams dropped on a full socket before the kernel saw them, by reason.",
               SendDropReason.allCases.map { r in ("reason=\"\(r.label)\"", socketTotal { $0.sendDrops(r) }) })
        family("parley_receive_failures_total", "counter", "Receive calls that failed, by reason.",
               SocketError.Kind.allCases.filter { $0 != .wouldBlock }.map { k in
                   ("reason=\"\(k.label)\"", socketTotal { $0.receiveFailures(k) })
               })
        family("parley_packets_forwarded_total", "counter", "RTP packets forwarded (one per listener).", total(\.forwarded))
        family("parley_cascade_datagrams_sent_total", "counter",
               "Datagrams sent to other nodes of the cluster (a room's speakers, mixes, rosters, texts).", total(\.cascadeOut))
        family("parley_cascade_datagrams_received_total", "counter",
               "Datagrams from other nodes of the cluster that opened and were taken.", total(\.cascadeIn))
        family("parley_packets_forwarded_by_other_workers_total", "counter",
               "Of those, the ones another worker sent (a big room's listeners shared among the workers).", total(\.forwardedByOtherWorkers))
        family("parley_mixed_packets_sent_total", "counter", "Mixed packets sent (mix mode).", total(\.mixedPacketsSent))
        family("parley_drops_total", "counter", "Datagrams dropped, by reason.", DropReason.allCases.map { r in
            ("reason=\"\(r.label)\"", String(workers.reduce(0) { $0 &+ $1.counters.drops(r) }))
        })
        family("parley_nacks_answered_total", "counter", "NACKed packets resent from history.", total(\.nacksAnswered))
        family("parley_nacks_missed_total", "counter", "NACKed packets no longer held.", total(\.nacksMissed))
        family("parley_nacks_refused_total", "counter",
               "NACKed packets not resent: the requester's retransmission budget was spent, or past 64 in one NACK.",
               total(\.nacksRefused))
        family("parley_uplink_packets_lost_total", "counter",
               "Sequence numbers missing from speakers' streams on their way to the relay (gaps seen; forward rooms).",
               total(\.uplinkLost))
        family("parley_uplink_nacks_sent_total", "counter",
               "Sequence numbers the relay asked speakers to resend (uplink repair; a retry counts again).", total(\.uplinkNacked))
        family("parley_uplink_packets_recovered_total", "counter",
               "Speakers' packets that arrived after the relay asked for them (uplink repair).", total(\.uplinkRecovered))
        family("parley_uplink_repairs_given_up_total", "counter",
               "Speakers' packets still missing when their repair window ended (uplink repair).", total(\.uplinkGivenUp))
        family("parley_receiver_reports_implausible_total", "counter",
               "Listeners' report blocks ignored (jitter over 1 s) or whose fraction lost was lowered to what their own counts allow.",
               total(\.implausibleReports))
        family("parley_handshakes_total", "counter", "Encrypted handshakes answered (Noise NK, one Diffie-Hellman pair each).",
               total(\.handshakes))
        family("parley_joins_accepted_total", "counter", "Joins accepted.", total(\.joinsAccepted))
        var refused: [UInt16: UInt64] = [:]
        for w in workers { for (code, n) in w.counters.joinsRefused { refused[code, default: 0] &+= n } }
        family("parley_joins_refused_total", "counter", "Joins refused, by reason.", refused.keys.sorted().map { code in
            ("reason=\"\(refusalLabel(code))\"", String(refused[code] ?? 0))
        })
        family("parley_signalling_retransmissions_total", "counter", "Reliable signalling messages retransmitted.",
               total(\.signallingRetransmissions))
        family("parley_member_timeouts_total", "counter", "Members removed for silence.", total(\.timeouts))
        family("parley_signalling_drops_total", "counter",
               "Reliable signalling messages to a session not queued or dropped unsent, by reason.",
               SignallingDropReason.allCases.map { r in
                   ("reason=\"\(r.label)\"", String(workers.reduce(0) { $0 &+ $1.counters.signallingDrops(r) }))
               })
        family("parley_slow_sessions_removed_total", "counter",
               "Members and presence sessions removed because their signalling queue overflowed (not keeping up).",
               total(\.slowSessionsRemoved))
        family("parley_resumes_total", "counter", "Sessions moved to a new address that answered its path challenge.", total(\.resumes))
        family("parley_path_challenges_total", "counter", "Path challenges sent to unproven addresses naming a session.", total(\.pathChallengesSent))
        family("parley_worker_busy_seconds_total", "counter", "CPU time each worker loop spent busy.", workers.map { w in
            ("worker=\"\(w.worker)\"", seconds(w.busyNanoseconds))
        })
        if let http {
            family("parley_http_connections", "gauge", "HTTP API connections open.", [("", String(http.connections))])
            family("parley_http_event_streams", "gauge", "Event streams open.", [("", String(http.eventStreams))])
            family("parley_http_event_streams_dropped_total", "counter", "Event streams closed because their reader stopped reading.",
                   [("", String(http.eventStreamsDropped))])
            family("parley_http_requests_shed_total", "counter", "Requests answered 503 at once: every API thread busy, the queue full.",
                   [("", String(http.requestsShed))])
            family("parley_http_header_timeouts_total", "counter", "Connections closed because a request's headers came too slowly.",
                   [("", String(http.headerTimeouts))])
            family("parley_http_event_streams_refused_total", "counter", "Event streams refused: too many for their identity or the relay.",
                   [("", String(http.eventStreamsRefused))])
            family("parley_http_event_streams_hung_up_total", "counter", "Waiting event streams closed as their client went away.",
                   [("", String(http.eventStreamsHungUp))])
            family("parley_http_event_streams_expired_total", "counter", "Event streams closed because their token expired.",
                   [("", String(http.eventStreamsExpired))])
        }
        // One histogram summed over the workers.
        var mix = DurationHistogram()
        for w in workers {
            for i in mix.buckets.indices { mix.buckets[i] &+= w.mixTime.buckets[i] }
            mix.sum += w.mixTime.sum
            mix.count &+= w.mixTime.count
        }
        var cumulative: UInt64 = 0
        var buckets: [(labels: String, value: String)] = []
        for (i, bound) in DurationHistogram.bounds.enumerated() {
            cumulative &+= mix.buckets[i]
            buckets.append(("le=\"\(bound)\"", String(cumulative)))
        }
        buckets.append(("le=\"+Inf\"", String(mix.count)))
        out += "# HELP parley_mix_seconds Time of one mix pass (decode, mix, encode every mix room due) per worker loop.\n"
        out += "# TYPE parley_mix_seconds histogram\n"
        for b in buckets { out += "parley_mix_seconds_bucket{\(b.labels)} \(b.value)\n" }
        out += "parley_mix_seconds_sum \(mix.sum)\nparley_mix_seconds_count \(mix.count)\n"
        return out
    }

    static func seconds(_ nanoseconds: Int64) -> String { String(Double(nanoseconds) / 1e9) }

    /// `tokenExpired` → `token_expired`; unknown codes by number.
    static func refusalLabel(_ code: UInt16) -> String {
        guard let c = RefusalCode(rawValue: code) else { return "code_\(code)" }
        return "\(c)".snakeCased
    }
}
