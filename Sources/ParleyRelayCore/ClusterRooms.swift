import ParleyCrypto
import ParleyWire

/// This worker's part in a cluster (a `CorePart`): rooms shared with other nodes over the sealed relay-to-relay link
/// (`RoomCascade` per room: rosters, speakers, mixes, texts), the rendezvous of nodes that share a room, the drain,
/// and the calls and direct texts between identities online on different nodes. The core hands it the link's
/// datagrams and the forwarded speakers and mixes its peers take, and ticks it on the housekeeping grid. Alone (no
/// cluster) it has no link and does nothing.
///
/// Calls and direct texts between identities online on different nodes of a cluster. Each node lists its online
/// identities in the directory (`ClusterDirectory.onlineKey`); a call or a direct text to an identity online on
/// another node goes to that node's worker 0 over the relay-to-relay link. The callee's node runs the call as any
/// other (`CallRouter`), with a stand-in for the caller (`Presence.Link.remote`) whose statuses go back to the caller's
/// node; the caller's hang-up goes there too. Answered, both parties get tokens for the call room that any node takes,
/// and they meet there as in any room of the cluster (placement or cascading).
final class ClusterRooms: CorePart, TimedWork {
    unowned(unsafe) let core: RelayCore  // the core owns its parts and outlives them
    /// This worker's end of the relay-to-relay links (nil alone).
    let link: CascadeLink?
    /// Nodes that asked this one about rooms it has no members of, lately (see `rendezvous`).
    var rendezvousTable: [String: [UInt64: (address: PeerAddress, worker: UInt8, at: Instant)]] = [:]

    init(core: RelayCore) {
        self.core = core
        link = core.shared.cluster.map { CascadeLink(identity: $0, worker: core.workerIndex) }
    }

    // MARK: Receiving

    /// A datagram from another node's relay-to-relay link: opened (or dropped as `cascadeRejected`), then taken by
    /// kind. Only rooms this worker has are served: a node without members in a room ignores what is said about it.
    func handle(_ bytes: UnsafeRawBufferPointer, from: PeerAddress, now: Moment) {
        guard let link = link else { return outbox.drop(.unknownProtocol, from: from, now: now) }
        let space = output.reserve(max(0, bytes.count - CascadeCipher.overhead) + 16)
        let opened: (header: CascadeCipher.Header, length: Int)
        do {
            opened = try link.opener.open(bytes, into: space, now: now.monotonic.nanoseconds) { node, boot in
                node != link.identity.key && shared.placement.isLive(node: node, boot: boot, from: from)
            }
        } catch {
            return outbox.drop(.cascadeRejected, from: from, now: now)
        }
        let body = output.keep(space, length: opened.length)
        var r = ByteReader(body)
        guard let kind = r.u8(), let roomName = r.string8() else { return outbox.drop(.cascadeUnknown, from: from, now: now) }
        if CascadeMessage.isPresence(kind) {
            guard workerIndex == RelayCore.presenceWorker, let message = CascadeMessage(parsing: body) else {
                return outbox.drop(.cascadeUnknown, from: from, now: now)
            }
            outbox.counters.cascadeIn &+= 1
            return presenceArrived(message, from: opened.header.node, address: from, now: now)
        }
        guard let room = rooms[roomName], let cascade = room.cascade, room.hasLocalMembers else {
            if kind == CascadeMessage.rosterKind {
                outbox.counters.cascadeIn &+= 1
                return rendezvous(room: roomName, node: opened.header.node, worker: opened.header.senderWorker, from: from, now: now)
            }
            return outbox.drop(.cascadeUnknown, from: from, now: now)
        }
        let node = opened.header.node
        outbox.counters.cascadeIn &+= 1
        switch kind {
        case CascadeMessage.mediaKind:
            guard let peer = cascade.peers[node], let origin = r.u32(), let level = r.u8(), let rtp = r.take(body.count - r.offset),
                  let member = peer.members[origin] else { return outbox.drop(.cascadeUnknown, from: from, now: now) }
            cascadedMedia(rtp, from: member, level: level, room: room, address: from, now: now)
        case CascadeMessage.mixKind:
            guard cascade.mixer == node, let target = r.u32(), let frame = r.u32(), let rtp = r.take(body.count - r.offset), let mix = room.mix else {
                return outbox.drop(.cascadeUnknown, from: from, now: now)
            }
            cascadedMix(rtp, target: target, frame: frame, mix: mix, room: room, now: now)
        case CascadeMessage.rosterKind, CascadeMessage.textKind:
            guard let message = CascadeMessage(parsing: body) else { return outbox.drop(.cascadeUnknown, from: from, now: now) }
            switch message {
            case .roster(_, let roster):
                rosterArrived(roster, node: node, worker: opened.header.senderWorker, room: room, from: from, now: now)
            case .text(_, let sender, let to, let fragment):
                // Sender 0: the backend wrote to the room through that node's API.
                let member = cascade.peers[node]?.members[sender]
                guard member != nil || sender == 0 else { return outbox.drop(.cascadeUnknown, from: from, now: now) }
                rooms.deliverCascadedText(fragment, from: member, in: room, to: to, now: now)
            default:
                break
            }
        default:
            outbox.drop(.cascadeUnknown, from: from, now: now)
        }
    }

    /// A speaker of another node: observed for speaker selection like one of ours, then mixed (this node mixes) or
    /// fanned out to the listeners here when it is among the room's loudest. Never sent on to other nodes (its own node
    /// sends it to each).
    private func cascadedMedia(_ rtp: UnsafeRawBufferPointer, from member: Member, level: UInt8, room: Room, address: PeerAddress, now: Moment) {
        guard let packet = try? RTPPacketView(parsing: rtp), packet.ssrc == member.ssrc else { return outbox.drop(.malformedRTP, from: address, now: now) }
        member.stats.packetsIn &+= 1
        member.stats.bytesIn &+= UInt64(rtp.count)
        guard !member.muted else { return }
        if room.selector.observe(member.id, level: level, now: now.monotonic) {
            rooms.scheduleSpeakerPush(room, now: now)
            noteTimerWork(at: now.monotonic)
        }
        if let mix = room.mix {
            if room.mixesHere { mix.insert(packet, from: member, arrival: now.monotonic) }
            if !room.isHybrid { return }
        }
        guard room.selector.isForwarded(member.id) else { return }
        let primary: (bytes: UnsafeRawBufferPointer, view: RTPPacketView)?
        do { primary = try core.primaryOnly(packet, from: member) } catch { return outbox.drop(.malformedRTP,
            from: address, now: now) }
        core.fanOut(rtp, packet: packet, primary: primary, from: member, address: address, now: now)
    }

    /// The mixing node's frame: the shared mix to every member here that is not heard in it (its CSRCs), or a minus-one
    /// mix to its one member.
    private func cascadedMix(_ rtp: UnsafeRawBufferPointer, target: UInt32, frame: UInt32, mix: MixEngine, room: Room, now: Moment) {
        guard let packet = try? RTPPacketView(parsing: rtp) else { return }
        var targets: [Member] = []
        if target != 0 {
            guard let m = room.members.first(where: { $0.id == target && $0.isLocal }), m.canSubscribe, m.hasDestination else { return }
            targets.append(m)
        } else {
            var heard: [UInt32] = []
            for i in 0..<packet.csrcCount { heard.append(packet.csrc(at: i)) }
            // Who is heard, with the level the mixing node gave each (RFC 6465): the other nodes' speakers are
            // observed here from it, so this node's speaker lists name them too.
            var changed = false
            _ = packet.csrcAudioLevels(id: config.csrcAudioLevelExtensionID) { index, level in
                guard index < heard.count, let speaker = room.members.first(where: { $0.ssrc == heard[index] && !$0.isLocal }) else { return }
                if room.selector.observe(speaker.id, level: level, now: now.monotonic) { changed = true }
            }
            if changed {
                rooms.scheduleSpeakerPush(room, now: now)
                noteTimerWork(at: now.monotonic)
            }
            for m in room.members where m.isLocal && m.canSubscribe && m.hasDestination && !heard.contains(m.ssrc) { targets.append(m) }
        }
        mix.deliver(rtp, frame: frame, shared: target == 0, to: targets) { bytes, listener in core.sendMix(bytes, to: listener, now: now) }
    }

    /// A roster part from a peer: the peer is known from now on (a new one is answered at once), the nodes it names
    /// are asked too, and a complete epoch replaces its members here.
    private func rosterArrived(_ roster: CascadeRoster, node: UInt64, worker: UInt8, room: Room, from: PeerAddress, now: Moment) {
        guard let cascade = room.cascade else { return }
        let peer: RoomCascade.Peer
        if let known = cascade.peers[node] {
            peer = known
            peer.address = from
            peer.worker = worker
        } else {
            peer = RoomCascade.Peer(key: node, address: from, worker: worker, now: now.monotonic)
            cascade.peers[node] = peer
            cascade.dirty = true
        }
        let firstHeard = peer.heardAt == nil
        peer.heardAt = now.monotonic
        for key in roster.peers where key != cascade.selfKey && cascade.peers[key] == nil {
            guard let a = shared.placement.address(ofNode: key, room: room.name) else { continue }
            cascade.peers[key] = RoomCascade.Peer(key: key, address: a.address, worker: a.worker, now: now.monotonic)
            cascade.dirty = true
        }
        if peer.epoch != roster.epoch {
            peer.epoch = roster.epoch
            peer.parts = [:]
        }
        peer.parts[roster.part] = roster
        if peer.parts.count == Int(roster.parts) {
            let entries = (0..<roster.parts).flatMap { peer.parts[$0]?.members ?? [] }
            applyRoster(entries, audience: Int(roster.audience), of: peer, room: room, now: now)
            peer.parts = [:]
        }
        if firstHeard { cascade.retarget(room: room) }
        if cascade.dirty { sendRoster(room, now: now) }
    }

    /// Makes the peer's members here what its roster lists: new ones join (announced as any member), missing ones
    /// leave, a changed mute is announced.
    private func applyRoster(_ entries: [MemberEntry], audience: Int, of peer: RoomCascade.Peer, room: Room, now: Moment) {
        let listed = Dictionary(entries.map { ($0.memberID, $0) }, uniquingKeysWith: { a, _ in a })
        for (id, member) in peer.members where listed[id] == nil || listed[id]!.ssrc != member.ssrc {
            peer.members[id] = nil
            rooms.memberLeft(member, reason: "left", now: now)
        }
        for entry in entries {
            if let member = peer.members[entry.memberID] {
                let muted = entry.flags.contains(.muted)
                if member.muted != muted {
                    member.muted = muted
                    member.mutedByRoom = entry.flags.contains(.mutedByRoom)
                    rooms.announceRemoteMute(member, now: now)
                }
                continue
            }
            // An SSRC another member here already has (one in 2^31 per pair) cannot be told apart, and one the room's
            // key retired cannot be protected again: left out.
            guard peer.members.count < rooms.capacity(of: room), !room.members.contains(where: { $0.ssrc == entry.ssrc }),
                  sessions.bySSRC[entry.ssrc] == nil, room.downstream?.isRetired(entry.ssrc) != true else { continue }
            let session = RelaySession(connectionID: 0, identity: entry.identity, name: entry.name, sessionSecret: [], nonce: [],
                                            token: "", address: PeerAddress(ipv4: 0, port: 0), viaPublicPort: false, now: now.monotonic)
            let member = Member(id: shared.nextMemberID(), session: session, kind: .cascade(CascadeOrigin(node: peer.key, id: entry.memberID)),
                                ssrc: entry.ssrc, canPublish: entry.flags.contains(.publisher),
                                canSubscribe: entry.flags.contains(.subscriber), joinedAt: now.unixMilliseconds, room: room,
                                muted: entry.flags.contains(.muted), mixSequence: 0)
            member.mutedByRoom = entry.flags.contains(.mutedByRoom)
            member.hasDestination = false
            peer.members[entry.memberID] = member
            room.members.append(member)
            rooms.announceJoin(member, now: now)
        }
        if audience != peer.audience {
            room.roster.audienceChanged(by: audience - peer.audience, config: config, now: now.monotonic)
            peer.audience = audience
        }
        room.cascade?.retarget(room: room)
    }

    /// Removes a peer and its members (it went silent, or the room closed here).
    private func dropPeer(_ peer: RoomCascade.Peer, room: Room, reason: String, now: Moment) {
        room.cascade?.peers[peer.key] = nil
        for member in peer.members.values { rooms.memberLeft(member, reason: reason, retire: false, now: now) }
        if peer.audience != 0 { room.roster.audienceChanged(by: -peer.audience, config: config, now: now.monotonic) }
        peer.members = [:]
        room.cascade?.retarget(room: room)
    }

    // MARK: Sending

    /// Sends one of this node's speakers' packets to the room's other nodes (see `RoomCascade.mediaTargets`): one
    /// body, sealed once per peer. No allocation.
    func cascadeMedia(_ plain: UnsafeRawBufferPointer, from member: Member, level: UInt8, room: Room) {
        guard let link = link, let cascade = room.cascade, !cascade.mediaTargets.isEmpty else { return }
        let prefix = CascadeMessage.writeMediaPrefix(room: room.name, origin: member.id, level: level, into: link.scratch)
        // The other node takes datagrams up to `maxDatagramSize` as this one does: a packet that would not fit with the
        // link's header stays here (Opus packets are a few hundred bytes; a member's 1,500 would not fit).
        guard prefix + plain.count + CascadeCipher.overhead <= config.maxDatagramSize, let base = plain.baseAddress else { return }
        (link.scratch.baseAddress! + prefix).copyMemory(from: base, byteCount: plain.count)
        seal(UnsafeRawBufferPointer(rebasing: link.scratch[0..<(prefix + plain.count)]), to: cascade.mediaTargets, link: link)
    }

    /// The mixing node's frame for another node (`target` 0: its members not heard in the mix; else that member).
    func cascadeMix(_ bytes: UnsafeRawBufferPointer, frame: UInt32, target: UInt32, room: Room, peers: [(address: PeerAddress, worker: UInt8)]) {
        guard let link = link, !peers.isEmpty, let base = bytes.baseAddress else { return }
        let prefix = CascadeMessage.writeMixPrefix(room: room.name, target: target, frame: frame, into: link.scratch)
        guard prefix + bytes.count + CascadeCipher.overhead <= config.maxDatagramSize else { return }
        (link.scratch.baseAddress! + prefix).copyMemory(from: base, byteCount: bytes.count)
        seal(UnsafeRawBufferPointer(rebasing: link.scratch[0..<(prefix + bytes.count)]), to: peers, link: link)
    }

    private func seal(_ body: UnsafeRawBufferPointer, to targets: [(address: PeerAddress, worker: UInt8)], link: CascadeLink) {
        for t in targets {
            let space = output.reserve(body.count + CascadeCipher.overhead)
            let n = link.sealer.seal(body, receiverWorker: t.worker, into: space)
            output.commit(space, length: n, to: t.address)
            outbox.counters.cascadeOut &+= 1
            outbox.counters.packetsQueued &+= 1
            outbox.counters.bytesQueued &+= UInt64(n)
        }
    }

    func sealBody(_ bytes: [UInt8], to targets: [(address: PeerAddress, worker: UInt8)]) {
        guard let link = link else { return }
        bytes.withUnsafeBytes { seal($0, to: targets, link: link) }
    }

    /// A room text (or a direct text in the room) from a member here, in its fragments (attachment ids on the first),
    /// to the peers whose members should get it; returns how many of the recipients were there.
    func cascadeText(_ fragments: [TextFragment], from member: Member?, to identity: String, room: Room) -> Int {
        guard let cascade = room.cascade else { return 0 }
        var reached = 0
        var targets: [(address: PeerAddress, worker: UInt8)] = []
        for peer in cascade.peers.values where peer.heardAt != nil {
            let n = identity.isEmpty ? peer.members.count + peer.audience : peer.members.values.filter { $0.identity == identity }.count
            guard n > 0 else { continue }
            reached += n
            targets.append((peer.address, peer.worker))
        }
        if !targets.isEmpty {
            for f in fragments {
                sealBody(CascadeMessage.text(room: room.name, from: member?.id ?? 0, to: identity, fragment: f).bytes, to: targets)
            }
        }
        return reached
    }

    /// This node's members of the room, in roster parts, to every peer (heard or only named).
    func sendRoster(_ room: Room, now: Moment) {
        guard let cascade = room.cascade else { return }
        cascade.dirty = false
        cascade.lastRoster = now.monotonic
        cascade.epoch &+= 1
        let local = room.members.filter { $0.isLocal && !$0.traits.isAudience }.map(\.entry)
        let audience = room.members.filter { $0.isLocal && $0.traits.isAudience }.count
        let heard = cascade.peers.values.filter { $0.heardAt != nil }.map(\.key).sorted()
        let targets = cascade.peers.values.map { (address: $0.address, worker: $0.worker) }
        guard !targets.isEmpty else { return }
        for part in CascadeRoster.parts(epoch: cascade.epoch, audience: audience, peers: heard, members: local) {
            sealBody(CascadeMessage.roster(room: room.name, part).bytes, to: targets)
        }
    }

    // MARK: Housekeeping

    /// On the housekeeping grid, for each room in a cluster: peers from the directory (each second), silent peers
    /// dropped, rosters sent when owed or due.
    func tick(now: Moment, housekeeping: Bool) {
        guard housekeeping, link != nil else { return }
        for room in rooms.values {
            guard let cascade = room.cascade else { continue }
            guard room.hasLocalMembers else {
                if !cascade.peers.isEmpty { leaveCascade(room, now: now) }
                continue
            }
            if now.monotonic - cascade.lastDiscovery >= RoomCascade.rosterInterval { discoverPeers(room, now: now) }
            for peer in Array(cascade.peers.values) {
                let last = max(peer.heardAt ?? .distantPast, peer.heardAt == nil ? peer.namedAt : .distantPast)
                if now.monotonic - last >= RoomCascade.peerTimeout { dropPeer(peer, room: room, reason: "its node went silent", now: now) }
            }
            if cascade.dirty || now.monotonic - cascade.lastRoster >= RoomCascade.rosterInterval { sendRoster(room, now: now) }
            let mixedHere = cascade.mixesHere
            cascade.retarget(room: room)
            if let mix = room.mix, !room.isHybrid, mixedHere != cascade.mixesHere {
                if cascade.mixesHere { mix.start(now: now.monotonic) } else { mix.stop() }
            }
        }
    }

    /// The next housekeeping pass while a room has a cascade to keep: local members to announce, or peers to leave.
    func nextDeadline(housekeepingDue: Instant) -> Instant {
        guard link != nil else { return .distantFuture }
        for room in rooms.values {
            if let cascade = room.cascade, room.hasLocalMembers || !cascade.peers.isEmpty { return housekeepingDue }
        }
        return .distantFuture
    }

    /// The nodes the directory says have the room, and the room's rendezvous node (the hash's pick, which answers with
    /// the nodes that asked it even when it has no members itself): peers to send rosters to.
    func discoverPeers(_ room: Room, now: Moment) {
        guard let cascade = room.cascade else { return }
        cascade.lastDiscovery = now.monotonic
        for t in shared.placement.cascadeTargets(for: room.name) {
            if let peer = cascade.peers[t.key] {
                peer.namedAt = now.monotonic
            } else {
                cascade.peers[t.key] = RoomCascade.Peer(key: t.key, address: t.address, worker: t.worker, now: now.monotonic)
                cascade.dirty = true
            }
        }
    }

    /// A roster for a room this worker has no members of: as the room's rendezvous node, it notes the sender for a few
    /// seconds and answers with the other nodes that asked lately, so nodes that opened the room at the same time
    /// find each other before the directory lists them. Bounded: at most `maxRendezvousRooms` rooms, entries of
    /// authenticated nodes only.
    func rendezvous(room name: String, node: UInt64, worker: UInt8, from: PeerAddress, now: Moment) {
        var askers = rendezvousTable[name] ?? [:]
        askers = askers.filter { now.monotonic - $0.value.at < RoomCascade.peerTimeout }
        guard askers[node] != nil || rendezvousTable.count < Self.maxRendezvousRooms || rendezvousTable[name] != nil else { return }
        askers[node] = (from, worker, now.monotonic)
        rendezvousTable[name] = askers
        let others = askers.keys.filter { $0 != node }.sorted()
        if rendezvousTable.count > Self.maxRendezvousRooms / 2 {
            rendezvousTable = rendezvousTable.filter { $0.value.values.contains { now.monotonic - $0.at < RoomCascade.peerTimeout } }
        }
        guard !others.isEmpty else { return }
        let reply = CascadeRoster(epoch: 0, part: 0, parts: 1, audience: 0, peers: Array(others.prefix(16)), members: [])
        sealBody(CascadeMessage.roster(room: name, reply).bytes, to: [(from, worker)])
    }

    static let maxRendezvousRooms = 4096

    /// The last member here left: the peers are told (an empty roster) and forgotten with their members, so the room
    /// can close here.
    func leaveCascade(_ room: Room, now: Moment) {
        guard let cascade = room.cascade else { return }
        sendRoster(room, now: now)
        for peer in Array(cascade.peers.values) {
            cascade.peers[peer.key] = nil
            for member in peer.members.values {
                room.members.removeAll { $0 === member }
                _ = room.selector.remove(member.id)
                room.mix?.remove(member)
            }
            if peer.audience != 0 { room.roster.audienceChanged(by: -peer.audience, config: config, now: now.monotonic) }
        }
        cascade.retarget(room: room)
        if room.members.isEmpty, room.emptySince == nil {
            room.emptySince = now.monotonic
            room.mix?.stop()
        }
    }
}
