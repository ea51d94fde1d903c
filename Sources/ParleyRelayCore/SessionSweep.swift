import ParleyWire

/// The one pass over every session `tick` makes (`tick`), and when it next has work (`nextDeadline`), side by side:
/// sends what each session's channel has due, removes sessions whose queue overflowed (not keeping up) and those silent
/// for `memberTimeout` or whose channel gave up, and sends the receiver reports due on the housekeeping grid. A
/// publishing plain-RTP endpoint times out without RTP; a subscribe-only one stays until deleted; a WebRTC member stays
/// while it keeps consent.
final class SessionSweep: CorePart, TimedWork {
    unowned(unsafe) let core: RelayCore

    init(core: RelayCore) { self.core = core }

    func tick(now: Moment, housekeeping: Bool) {
        var expired: [SessionTable.Entry] = [], slow: [SessionTable.Entry] = []
        let timeout = config.memberTimeout
        for entry in sessions.byConnection.values {
            switch entry {
            case .presence(let p):
                guard let session = p.session else { continue }  // (a page's presence is not in the table)
                if session.channel.serviceDue <= now.monotonic { outbox.pump(session, now: now) }
                switch session.health(now: now.monotonic, timeout: timeout) {
                case .alive: break
                case .slow: slow.append(entry)
                case .expired: expired.append(entry)
                }
            case .member(let member):
                if let webrtc = member.webrtc {
                    // Consent (RFC 7675) keeps a WebRTC member, not its media: a muted browser may send nothing.
                    if core.webRTCMembers.service(member, webrtc, now: now), housekeeping, core.rtcp.wantsReports(member), now.monotonic >= member.rtcp.nextReport {
                        core.rtcp.sendReport(to: member, now: now)
                    }
                    continue
                }
                if member.isRTPEndpoint {
                    if member.canPublish && member.session.isSilent(now: now.monotonic, timeout: timeout) {
                        expired.append(entry)
                    } else if housekeeping, core.rtcp.wantsReports(member), now.monotonic >= member.rtcp.nextReport {
                        core.rtcp.sendReport(to: member, now: now)
                    }
                    continue
                }
                if member.session.channel.serviceDue <= now.monotonic { outbox.pump(member.session, now: now) }
                switch member.session.health(now: now.monotonic, timeout: timeout) {
                case .slow: slow.append(entry)
                case .expired: expired.append(entry)
                case .alive:
                    if housekeeping, core.rtcp.wantsReports(member), now.monotonic >= member.rtcp.nextReport {
                        core.rtcp.sendReport(to: member, now: now)
                    }
                }
            }
        }
        for entry in expired where sessions.holds(entry) {
            if case .member = entry { outbox.counters.timeouts &+= 1 }
            core.removeSession(entry, reason: "timed out", goodbye: .timedOut, now: now)
        }
        for entry in slow where sessions.holds(entry) {
            outbox.countSlowSession(entry.session.channel)
            core.removeSession(entry, reason: Outbox.notKeepingUp, goodbye: .timedOut, now: now)
        }
    }

    /// The earliest time `tick` has work for a session, from the state as it stands: each session's channel and
    /// timeout, and its receiver report on the housekeeping grid (the first pass once the interval has passed).
    func nextDeadline(housekeepingDue: Instant) -> Instant {
        var due = Instant.distantFuture
        let timeout = config.memberTimeout
        for entry in sessions.byConnection.values {
            switch entry {
            case .presence(let p):
                if let session = p.session { due = min(due, session.nextDue(timeout: timeout)) }
            case .member(let member):
                // A plain-RTP endpoint times out only while it publishes; a subscribe-only one stays until deleted; a
                // WebRTC member stays while it keeps consent.
                let endpoint = member.isRTPEndpoint
                if let webrtc = member.webrtc {
                    due = min(due, core.webRTCMembers.nextDeadline(member, webrtc))
                } else {
                    due = min(due, member.session.nextDue(timeout: timeout, timesOut: !endpoint || member.canPublish))
                }
                if core.rtcp.wantsReports(member) {
                    // Sent on the housekeeping grid: at the first pass once the interval has passed.
                    due = min(due, max(member.rtcp.nextReport, housekeepingDue))
                }
            }
        }
        return due
    }
}
