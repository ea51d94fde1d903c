import ParleyWire

/// Calls and direct texts between identities online on different nodes of a cluster. Each node lists its online
/// identities in the directory (`ClusterDirectory.onlineKey`); a call or a direct text to an identity online on
/// another node goes to that node's worker 0 over the relay-to-relay link. The callee's node runs the call as any
/// other (`CallRouter`), with a stand-in for the caller (`Presence.Link.remote`) whose statuses go back to the caller's
/// node; the caller's hang-up goes there too. Answered, both parties get tokens for the call room that any node takes,
/// and they meet there as in any room of the cluster (placement or cascading).
extension RelayCore {
    /// Wires the presence worker's call router and directory to the links (a cluster's worker 0 only).
    func startClusterPresence() {
        guard cascadeLink != nil, workerIndex == Self.presenceWorker else { return }
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
            calls.invite(from: standIn, callID: callID, to: callee, keyShare: keyShare, now: now)
            noteTimerWork(at: now.monotonic)  // its ring deadline
        case .hangup(let callID, let identity):
            calls.remoteHangUp(node: node, identity: identity, callID: callID, now: now)
        case .callStatus(let to, let status):
            calls.remoteStatus(status, for: to, from: node, now: now)
        case .directText(let from, let to, let fragment):
            presence.deliverRemoteDirectText(fragment, from: from, to: to, now: now)
        default:
            outbox.drop(.cascadeUnknown, from: address, now: now)
        }
    }
}
