/// How many entries each table of a `RelayCore` holds, and how many members the rooms' derived tables keep.
/// A relay for drop-in rooms runs for months under endless churn: once every member, endpoint, presence session,
/// call and room has ended (and empty rooms have timed out), every figure here is back to zero. The lifecycle test
/// and `soak-bench` check that.
package struct LiveCounts: Equatable, CustomStringConvertible {
    /// Open rooms (`rooms`), and the mix-mode ones among them (`mixRooms`).
    package var rooms = 0, mixRooms = 0
    /// Members of every room (`Room.members`), and the members each room's fan-out table and mixer hold besides.
    package var roomMembers = 0, fanOutMembers = 0, mixMembers = 0
    /// Per-member state kept by rooms: speaker-selection states and mix inputs (jitter buffer, decoder, encoder).
    package var speakerStates = 0, mixInputs = 0
    /// The core's member entries in its session table and SSRC table, and the NACK histories its members hold (allocated at a member's first RTP packet).
    package var byConnection = 0, byAddress = 0, bySSRC = 0, nackHistories = 0
    /// Presence sessions in the session table (by connection and address) and in the identity table (every device
    /// of every identity), and calls ringing or answered.
    package var presenceByConnection = 0, presenceByAddress = 0, presenceByIdentity = 0, calls = 0

    /// Every table empty.
    package static let empty = LiveCounts()

    package var description: String {
        "rooms \(rooms) (mix \(mixRooms)), room members \(roomMembers), fan-out \(fanOutMembers), mix \(mixMembers), "
            + "speaker states \(speakerStates), mix inputs \(mixInputs), byConnection \(byConnection), byAddress \(byAddress), "
            + "bySSRC \(bySSRC), NACK histories \(nackHistories), presence \(presenceByConnection)/\(presenceByAddress)/"
            + "\(presenceByIdentity), calls \(calls)"
    }
}

extension RelayCore {
    /// The size of every table of this core (for tests and the soak benchmark; walks the rooms).
    package var liveCounts: LiveCounts {
        var c = LiveCounts()
        c.rooms = rooms.count
        c.mixRooms = rooms.mixRooms.count
        for room in rooms.values {
            c.roomMembers += room.members.count
            c.fanOutMembers += room.fanOut.heldMembers
            c.mixMembers += room.mix?.heldMembers ?? 0
            c.speakerStates += room.selector.trackedMembers
            c.mixInputs += room.mix?.inputCount ?? 0
        }
        for entry in sessions.byConnection.values {
            switch entry {
            case .member(let m):
                c.byConnection += 1
                if m.uplink.history != nil { c.nackHistories += 1 }
            case .presence: c.presenceByConnection += 1
            }
        }
        for entry in sessions.byAddress.values {
            if case .member = entry { c.byAddress += 1 } else { c.presenceByAddress += 1 }
        }
        c.bySSRC = sessions.bySSRC.count
        c.presenceByIdentity = presence.sessionCount
        c.calls = calls.active.count
        return c
    }
}
