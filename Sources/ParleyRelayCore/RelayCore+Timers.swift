import ParleyWire

extension RelayCore {
    /// Periodic work: signalling retransmissions and owed acks, member timeouts, deferred speaker pushes,
    /// receiver reports, closing rooms left empty. Afterwards `timersDue` says when the next of these falls due.
    /// The loop calls it once awake at or after `timersDue` (and no later than `tickInterval` after it) while
    /// members exist, and at least once a second otherwise.
    public func tick(now: Moment) {
        tickPresence(now: now)
        // Periodic per-member and per-room checks run on one 100 ms grid, so a loaded worker ticks ~10 times a
        // second rather than at every member's own due time (receiver reports fall due at scattered times).
        let housekeeping = now.monotonic - lastHousekeeping >= Self.housekeepingInterval
        if housekeeping { lastHousekeeping = now.monotonic }
        var expired: [Member] = [], slow: [Member] = []
        for member in byConnection.values {
            if member.channel.serviceDue <= now.monotonic { pump(member, now: now) }
            let silent = now.monotonic - member.lastHeard > config.memberTimeout
            if member.isRTPEndpoint {
                // Publishing endpoints time out without RTP; subscribe-only ones stay until deleted.
                if member.canPublish && silent { expired.append(member) }
            } else if member.channel.overflowed {
                slow.append(member)
            } else if member.channel.failed || silent {
                expired.append(member)
            } else if housekeeping, member.canPublish, member.receiveStats.packetsReceived > 0,
                      now.monotonic - member.lastReceiverReport >= config.receiverReportInterval {
                sendReceiverReport(to: member, now: now)
            }
        }
        for member in expired {
            counters.timeouts &+= 1
            removeMember(member, reason: "timed out", goodbye: .timedOut, now: now)
        }
        for member in slow {
            countSlowSession(member.channel)
            removeMember(member, reason: Self.notKeepingUp, goodbye: .timedOut, now: now)
        }
        var closing: [Room] = []
        for room in rooms.values {
            if let due = room.speakerPushDue, due <= now.monotonic {
                pushSpeakers(room, speakerEntries(room, now: now), now: now)
            } else if housekeeping, !room.announcedSpeakers.isEmpty || !room.selector.forwarded.isEmpty {
                scheduleSpeakerPush(room, now: now)
            }
            if let since = room.emptySince, room.members.isEmpty, now.monotonic - since >= room.emptyTimeout ?? config.emptyRoomTimeout {
                closing.append(room)
            }
        }
        for room in closing {
            let timeout = room.emptyTimeout ?? config.emptyRoomTimeout
            forgetRoom(room, reason: "empty for \(timeout / 1_000_000_000) s", now: now)
            if log.threshold <= .info { log.write(.info, "room \(room.name) closed after \(timeout / 1_000_000_000) s empty") }
        }
        // Never in the past: a condition this tick could not clear is looked at again on the next wakeup, not in a spin.
        timersDue = max(nextTimerWork(), now.monotonic &+ 1)
    }

    /// How often rooms with speakers are re-checked for a speaker list that went stale (a speaker fell silent),
    /// and the grid receiver reports are sent on (each at the first housekeeping pass once its interval passed).
    static let housekeepingInterval: Int64 = 100_000_000

    /// The longest the loop lets work wait past `timersDue`: it ticks on any wakeup at or after `timersDue`
    /// (a packet batch usually comes first) and sets its poll timeout to `timersDue + tickInterval` at the latest.
    public var tickInterval: Int64 { 20_000_000 }

    /// Records that `tick` may have work from `monotonic` on (something changed between ticks that the last
    /// `tick`'s `timersDue` did not account for: a signalling message, a join, a speaker change, an API command).
    public func noteTimerWork(at monotonic: Int64) {
        if monotonic < timersDue { timersDue = monotonic }
    }

    /// The earliest time any of `tick`'s conditions becomes true, from the state as it stands (after a tick).
    /// Early is harmless (a tick finds nothing to do); late would delay work, so every condition `tick` checks
    /// is mirrored here.
    func nextTimerWork() -> Int64 {
        var due = Int64.max
        for p in presence.byConnection.values {
            due = min(due, p.channel.serviceDue, p.lastHeard &+ config.memberTimeout &+ 1)
        }
        for call in presence.calls.values {
            if let deadline = call.ringDeadline { due = min(due, deadline) }
        }
        for member in byConnection.values {
            due = min(due, member.channel.serviceDue)
            if member.isRTPEndpoint {
                if member.canPublish { due = min(due, member.lastHeard &+ config.memberTimeout &+ 1) }
                continue
            }
            due = min(due, member.lastHeard &+ config.memberTimeout &+ 1)
            if member.canPublish, member.receiveStats.packetsReceived > 0 {
                // Sent on the housekeeping grid: at the first pass once the interval has passed.
                due = min(due, max(member.lastReceiverReport &+ config.receiverReportInterval,
                                   lastHousekeeping &+ Self.housekeepingInterval))
            }
        }
        for room in rooms.values {
            if let pushDue = room.speakerPushDue { due = min(due, pushDue) }
            if !room.announcedSpeakers.isEmpty || !room.selector.forwarded.isEmpty {
                due = min(due, lastHousekeeping &+ Self.housekeepingInterval)
            }
            if let since = room.emptySince, room.members.isEmpty {
                due = min(due, since &+ (room.emptyTimeout ?? config.emptyRoomTimeout))
            }
        }
        return due
    }

    /// Tells every member the relay is going away (twice, as nothing will retransmit it) and forgets them all.
    public func shutdown(now: Moment) {
        shuttingDown = true
        shutdownPresence(now: now)
        for member in byConnection.values where !member.isRTPEndpoint {
            for _ in 0..<2 {
                sendSignal(.goodbye(code: .relayShutdown, reason: "the relay is shutting down"), to: member.address,
                           connectionID: member.connectionID, ack: member.channel.ackNumber, viaPublicPort: member.viaPublicPort)
            }
        }
        byAddress.removeAll()
        byConnection.removeAll()
        bySSRC.removeAll()
        for room in rooms.values {
            // Members hold their room: emptying `members` breaks the cycle, as `removeMember` does.
            room.members.removeAll()
            room.mix?.stop()
            shared.releaseRoom(creator: room.creator)
        }
        rooms.removeAll()
        mixRooms.removeAll()
    }
}
