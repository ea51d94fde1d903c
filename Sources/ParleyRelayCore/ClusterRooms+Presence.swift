import ParleyWire

/// Calls and direct texts between identities online on different nodes (`ClusterRooms`): see its doc comment.
extension ClusterRooms {
    /// Wires the rooms' texts to the links, and the presence worker's call router and directory (a cluster's worker 0).
    func start() {
        guard link != nil else { return }
        rooms.cascadeText = { [unowned self] fragments, member, identity, room in cascadeText(fragments, from: member, to: identity, room: room) }
        guard workerIndex == RelayCore.presenceWorker else { return }
        let calls = core.calls, presence = core.presence
        calls.onlineElsewhere = { [unowned self] identity in shared.placement.node(online: identity) }
        calls.sendToNode = { [unowned self] message, node in sendPresence(message, to: node) }
        presence.sendRemote = { [unowned self] message, p in
            guard case .remote(let node) = p.link, case .callStatus(let status) = message else { return }
            sendPresence(.callStatus(to: p.identity, status), to: node)
        }
        presence.directTextElsewhere = { [unowned self] fragments, sender, identity in
            guard let node = shared.placement.node(online: identity) else { return false }
            for f in fragments {
                sendPresence(.directText(from: sender.identity, to: identity, fragment: f), to: node)
            }
            return true
        }
    }

    /// One presence message to node `node`'s worker 0.
    func sendPresence(_ message: CascadeMessage, to node: UInt64) {
        guard let address = shared.placement.presenceAddress(ofNode: node) else { return }
        sealBody(message.bytes, to: [(address, 0)])
    }

    /// A presence message from another node (already opened, on worker 0).
    func presenceArrived(_ message: CascadeMessage, from node: UInt64, address: PeerAddress, now: Moment) {
        switch message {
        case .invite(let callID, let caller, let name, let callee, let keyShare):
            let standIn = Presence(id: shared.nextMemberID(), remoteNode: node, identity: caller, name: name, registeredAt: now.unixMilliseconds)
            core.calls.invite(from: standIn, callID: callID, to: callee, keyShare: keyShare, now: now)
            noteTimerWork(at: now.monotonic)  // its ring deadline
        case .hangup(let callID, let identity):
            core.calls.remoteHangUp(node: node, identity: identity, callID: callID, now: now)
        case .callStatus(let to, let status):
            core.calls.remoteStatus(status, for: to, from: node, now: now)
        case .directText(let from, let to, let fragment):
            core.presence.deliverRemoteDirectText(fragment, from: from, to: to, now: now)
        default:
            outbox.drop(.cascadeUnknown, from: address, now: now)
        }
    }
}
