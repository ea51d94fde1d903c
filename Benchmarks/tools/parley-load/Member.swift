import ParleyClientCore
import ParleyNet
import ParleyWire

/// One simulated member: its own socket (its own address), its signalling session, and — for speakers — the state of
/// the stream it sends; for everyone, the tallies of the streams it receives.
final class Member {
    let index: Int
    let room: Int
    /// Position among its room's speakers, nil for a listener.
    let speakerSlot: Int?
    let socket: UDPSocket
    let identity: String
    var session: ClientSession?
    /// The member's SRTP once welcomed (nil: cleartext run, or the raw forwarder).
    var crypto: MediaCrypto?
    var joinStarted: Int64 = 0
    var joinedAt: Int64?
    var refused: String?
    /// Cluster redirects followed (`roomElsewhere`).
    var redirects = 0
    /// Why the relay ended this member's session while media flowed (its goodbye), if it did.
    var removed: String?
    /// The SSRC the relay assigned (a synthetic one against the raw forwarder).
    var ssrc: UInt32
    /// Where media goes: the welcome's worker port, or the raw forwarder.
    var destination: PeerAddress
    // Sending.
    var sequenceStart: UInt16 = 0
    var sequence: UInt16 = 0
    var timestamp: UInt32 = 0
    var clipPosition = 0
    var packetsSent = 0
    /// Packets its clip had due, sent or not (a speaker the relay did not admit sends none).
    var packetsDue = 0
    /// --storm: what its room's speakers were due to send before its welcome (it could not receive those).
    var packetsBeforeJoin = 0
    // Receiving: forward mode one tally per other speaker of the room (by speaker slot), mix mode one.
    var tallies: [StreamTally] = []

    init(index: Int, room: Int, speakerSlot: Int?, identity: String, destination: PeerAddress) throws {
        self.index = index
        self.room = room
        self.speakerSlot = speakerSlot
        self.identity = identity
        self.destination = destination
        self.ssrc = UInt32(0x10_0000 + index)
        socket = try UDPSocket(bindingTo: PeerAddress(ipv4: 127, 0, 0, 1, port: 0), bufferBytes: 1 << 20)
    }
}
