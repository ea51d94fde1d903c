extension Welcome {
    /// Sets `alternates` to as many of `pointers` (in order, each at most `NodePointer.maxLength` bytes, at most
    /// `maxAlternates`) as leave the welcome one sealed datagram (`SignallingEnvelope.maxSealedPlaintext`): a room's
    /// stream indices and long names come first, the failover list takes what is left. The welcome is serialized once
    /// without them; each alternate then costs its TLV (3 bytes and its text).
    public mutating func fitAlternates(_ pointers: [String]) {
        alternates = []
        guard !pointers.isEmpty,
              var size = try? SignalDatagram(connectionID: 1, sequence: 1, ack: 0, message: .welcome(self)).serialized().count else { return }
        for p in pointers where p.utf8.count <= NodePointer.maxLength {
            guard alternates.count < Self.maxAlternates, size + 3 + p.utf8.count <= SignallingEnvelope.maxSealedPlaintext else { return }
            size += 3 + p.utf8.count
            alternates.append(p)
        }
    }
}
