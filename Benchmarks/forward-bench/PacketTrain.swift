import BenchmarkSupport
import ParleyClientCore
import ParleyWire

/// One speaker's RTP stream: Opus-like packets (PT 111) every 20 ms with an RFC 6464 audio level.
struct SpeakerStream {
    static let payloadType: UInt8 = 111
    static let audioLevelExtensionID: UInt8 = 1
    /// −dBov: well inside speech (the core's threshold is 60), the same for every speaker so none displaces another.
    static let level: UInt8 = 30
    static let payloadBytes = 80
    /// 20 ms at 48 kHz.
    static let samplesPerPacket: UInt32 = 960

    /// Where the speaker sends from (its latched address).
    let address: PeerAddress
    /// The SSRC the relay assigned in its welcome.
    let ssrc: UInt32
    /// Index of the speaker's room in the scenario.
    let roomIndex: Int
    var sequenceNumber = UInt16.random(in: .min ... .max)
    var timestamp = UInt32.random(in: .min ... .max)
    /// The speaker's SRTP in an encrypted scenario: each packet is protected as the client protects it.
    var crypto: MediaCrypto?

    /// Writes the next packet at the start of `buffer` and returns its size.
    mutating func writeNextPacket(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let header = RTPHeader(payloadType: Self.payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp, ssrc: ssrc,
                               extensions: [.audioLevel(id: Self.audioLevelExtensionID, AudioLevel(voice: true, level: Self.level))])
        let headerSize = try! header.serialize(into: buffer)
        for i in 0..<Self.payloadBytes { buffer[headerSize + i] = UInt8(truncatingIfNeeded: i &* 37 &+ Int(sequenceNumber)) }
        sequenceNumber &+= 1
        timestamp &+= Self.samplesPerPacket
        guard let crypto else { return headerSize + Self.payloadBytes }
        return crypto.protect(UnsafeRawBufferPointer(rebasing: buffer[..<(headerSize + Self.payloadBytes)]), into: buffer)!
    }
}

/// Received datagrams, serialized before a timed loop so the loop only hands the core a pointer and an address:
/// the speakers' packets in round-robin order (packet `i` is from `streams[i % streams.count]`), in one arena of
/// fixed-size slots that outlives every `OutputQueue` entry pointing into it.
final class PacketTrain {
    private static let slotSize = 128
    /// Slots allocated.
    let capacity: Int
    /// Packets loaded by the last `load`.
    private(set) var count = 0
    private let arena: UnsafeMutableRawBufferPointer
    private var lengths: [Int]
    private var senders: [PeerAddress]

    /// A train of up to `capacity` packets.
    init(capacity: Int) {
        self.capacity = capacity
        arena = .allocate(byteCount: capacity * Self.slotSize, alignment: 16)
        lengths = [Int](repeating: 0, count: capacity)
        senders = [PeerAddress](repeating: PeerAddress(high: 0, low: 0, port: 0), count: capacity)
    }

    deinit { arena.deallocate() }

    /// Serializes the next `count` packets of `streams`, round-robin, advancing their sequence numbers and timestamps.
    func load(_ count: Int, from streams: inout [SpeakerStream]) {
        precondition(count <= capacity && !streams.isEmpty)
        var speaker = 0
        for i in 0..<count {
            let slot = UnsafeMutableRawBufferPointer(rebasing: arena[(i * Self.slotSize)..<((i + 1) * Self.slotSize)])
            lengths[i] = streams[speaker].writeNextPacket(into: slot)
            senders[i] = streams[speaker].address
            speaker = speaker + 1 == streams.count ? 0 : speaker + 1
        }
        self.count = count
    }

    /// Packet `i`'s bytes.
    @inline(__always)
    func packet(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: arena.baseAddress! + i * Self.slotSize, count: lengths[i])
    }

    /// Packet `i`'s source address.
    @inline(__always)
    func sender(_ i: Int) -> PeerAddress { senders[i] }
}
