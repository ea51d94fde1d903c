import ParleyWire

extension RelayCore {
    /// Periodic work: signalling retransmissions and owed acks, member timeouts, deferred speaker pushes,
    /// receiver reports, closing rooms left empty. The loop calls it every `tickInterval` while members exist,
    /// and at least once a second otherwise.
    public func tick(now: Moment) {
        tickPresence(now: now)
        var expired: [Member] = []
        for member in byConnection.values {
            if member.channel.pendingCount > 0 || member.channel.ackOwed { pump(member, now: now) }
            let silent = now.monotonic - member.lastHeard > config.memberTimeout
            if member.isRTPEndpoint {
                // Publishing endpoints time out without RTP; subscribe-only ones stay until deleted.
                if member.canPublish && silent { expired.append(member) }
            } else if member.channel.failed || silent {
                expired.append(member)
            } else if member.canPublish, member.receiveStats.packetsReceived > 0,
                      now.monotonic - member.lastReceiverReport >= config.receiverReportInterval {
                sendReceiverReport(to: member, now: now)
            }
        }
        for member in expired {
            counters.timeouts &+= 1
            removeMember(member, reason: "timed out", goodbye: .timedOut, now: now)
        }
        let housekeeping = now.monotonic - lastHousekeeping >= 100_000_000
        if housekeeping { lastHousekeeping = now.monotonic }
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
    }

    /// How often the loop should call `tick` while members exist.
    public var tickInterval: Int64 { 20_000_000 }

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
        waitingRTPEndpoints.removeAll()
        for _ in rooms.values { shared.releaseRoom() }
        rooms.removeAll()
        mixRooms.removeAll()
    }
}
