import ParleyWire

/// Room recordings, as the core sees them: started and stopped by the backend (HTTP API), every member told (a
/// `recording` message, and to joiners after their welcome; a `recording_started` / `recording_stopped` event), and
/// the room's audio handed to the `RecordingTap` for the recorder thread to write: each publishing member's packets as
/// they came (no decoding), and in mix and hybrid rooms the shared mix, which is then encoded every frame somebody
/// speaks whether or not a listener needs it. Members whose token asked for end-to-end encryption are left out
/// (the relay cannot hear them). A room that closes ends its recording.
extension RelayCore {
    /// Starts recording `room` under `id` (the API's). `mixdown`: also mix a forward room's tracks into one file at the end.
    public func startRecording(room name: String, id: UInt64, mixdown: Bool = false, now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        if let r = room.recording { return .conflict("room \(name) is already being recorded (recording \(r.name))") }
        guard !CallRoom.isCallRoom(name) else { return .forbidden("call rooms are private: they cannot be recorded") }
        let recording = RoomRecording(id: id)
        room.recording = recording
        recordings.recordStarted(id: id, room: name, mode: room.mode, now: now, mixdown: mixdown && room.mix == nil)
        if room.mixesHere { room.mix?.recording = (recordings, id) }
        rooms.broadcast(.recording(active: true, id: recording.name), in: room, now: now)
        rooms.events.append(RelayEvent(kind: .recordingStarted, room: name, detail: recording.name, unixMilliseconds: now.unixMilliseconds))
        if log.threshold <= .info { log.write(.info, "room \(name): recording \(recording.name) started") }
        return .ok
    }

    /// Stops `room`'s recording; the members are told.
    public func stopRecording(room name: String, reason: String = "stopped by the backend", now: Moment) -> AdminResult {
        guard let room = rooms[name] else { return .notFound("room \(name) does not exist") }
        guard room.recording != nil else { return .notFound("room \(name) is not being recorded") }
        endRecording(room, reason: reason, now: now)
        return .ok
    }

    /// Ends `room`'s recording, if one runs (also when the room closes or the relay stops).
    func endRecording(_ room: Room, reason: String, now: Moment) {
        guard let recording = room.recording else { return }
        rooms.endRecording(room, reason: reason, now: now)
        rooms.broadcast(.recording(active: false, id: recording.name), in: room, now: now)
    }

    /// A member's packet into its room's recording (the per-packet path: a record appended, no allocation).
    @inline(__always)
    func record(_ packet: RTPPacketView, from member: Member, in room: Room, now: Moment) {
        guard var recording = room.recording, !member.traits.endToEnd, packet.payloadCount > 0 else { return }
        if !recording.tracks.contains(member.ssrc) {
            recording.tracks.insert(member.ssrc)
            room.recording = recording
            recordings.recordTrack(id: recording.id, ssrc: member.ssrc, identity: member.identity, name: member.name)
        }
        recordings.recordPacket(id: recording.id, ssrc: member.ssrc, timestamp: packet.timestamp, arrival: now.monotonic, payload: packet.payload)
    }
}
