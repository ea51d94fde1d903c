import ParleyWire

extension SignalMessage {
    /// A bare acknowledgement or a keepalive ping: handling one touches nothing but the sender's channel.
    var isAckOrPing: Bool {
        switch self {
        case .ack, .ping: return true
        default: return false
        }
    }
}

extension SignalMessage {
    /// Whether a newer message of this kind makes an older one still waiting to go out pointless (it carries state,
    /// not an event): speaker lists, and a member's mute state.
    var replacesOlderCopies: Bool {
        switch self {
        case .speakers: true
        case .memberEvent(let kind, _, _): kind == .muted || kind == .unmuted
        default: false
        }
    }

    /// Whether this message replaces `older` (see `replacesOlderCopies`): any older speaker list, or an older mute
    /// or unmute of the same member.
    func supersedes(_ older: SignalMessage) -> Bool {
        switch (self, older) {
        case (.speakers, .speakers):
            return true
        case (.memberEvent(let kind, let member, _), .memberEvent(let olderKind, let olderMember, _)):
            return (kind == .muted || kind == .unmuted) && (olderKind == .muted || olderKind == .unmuted)
                && member.memberID == olderMember.memberID
        default:
            return false
        }
    }
}
