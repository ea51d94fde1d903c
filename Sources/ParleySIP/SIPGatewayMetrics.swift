/// The SIP gateway's counters as Prometheus text (appended to `/metrics`).
extension SIPGateway.Counters {
    /// One family per counter, `parley_sip_…`.
    public func prometheus() -> String {
        let families: [(String, String, String, Int)] = [
            ("parley_sip_calls_answered_total", "counter",
             "SIP calls answered and joined to a room or a call's room.", answered),
            ("parley_sip_calls_ended_total", "counter", "Answered SIP calls that have ended.", ended),
            ("parley_sip_refused_outside_trunks_total", "counter",
             "INVITEs from outside every trunk and calls out no trunk allows (toll-fraud attempts), refused 403.",
             refusedOutsideTrunks),
            ("parley_sip_refused_other_total", "counter",
             "INVITEs refused for another reason (no such room, no codec in common, a room full).", refusedOther),
            ("parley_sip_rate_limited_total", "counter",
             "INVITEs and REGISTERs over their source's budget, not answered.", rateLimited),
            ("parley_sip_authentication_failures_total", "counter",
             "REGISTERs and INVITEs with wrong, unknown or lapsed credentials (403).", authenticationFailures),
            ("parley_sip_calls_unanswered_total", "counter",
             "Calls the gateway placed into rooms that ended before an answer.", unanswered),
            ("parley_sip_malformed_total", "counter",
             "Requests without what RFC 3261 requires, answered 400 (483 at Max-Forwards 0) and not acted on.",
             malformed),
            ("parley_sip_registered_devices", "gauge", "SIP devices registered now.", registeredDevices),
        ]
        return families.map { name, type, help, value in
            "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }.joined()
    }
}
