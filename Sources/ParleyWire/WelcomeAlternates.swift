extension Welcome {
    /// Sets `alternates` to as many of `pointers` (in order, each at most `NodePointer.maxLength` bytes, at most
    /// `maxAlternates`) as leave the welcome one sealed datagram (`SignallingEnvelope.maxSealedPlaintext`): a room's
    /// stream indices and long names come first, the failover list takes what is left.
    public mutating func fitAlternates(_ pointers: [String]) {
        alternates = []
        for p in pointers where p.utf8.count <= NodePointer.maxLength {
            guard alternates.count < Self.maxAlternates else { return }
            alternates.append(p)
            let size = (try? SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .welcome(self)).serialized().count) ?? .max
            if size > SignallingEnvelope.maxSealedPlaintext {
                alternates.removeLast()
                return
            }
        }
    }
}
