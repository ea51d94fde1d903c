import ParleyCrypto
import ParleyWire

/// SRTP protect and unprotect of one stream's 120-byte packets, in batches: a batch is protected into an arena of
/// slots (timed as protect), then every slot unprotected into one buffer (timed as unprotect), as a relay receives
/// and sends. Sequence numbers run on across batches and runs, so the ROC advances as in a long call.
final class SRTPLoop {
    static let packetBytes = 120
    static let payloadBytes = 100
    static let batch = 4096
    private static let slotBytes = 160

    private let sender: SRTPSender
    private let receiver: SRTPReceiver
    private let packet: UnsafeMutableRawBufferPointer
    private let original: [UInt8]
    private let arena: UnsafeMutableRawBufferPointer
    private let plain: UnsafeMutableRawBufferPointer
    private var lengths: [Int]
    private var sequence: UInt16 = 0
    /// Calls that threw, and unprotected packets whose payload differed from what was protected.
    private(set) var failures = 0

    /// A sender and receiver on one random key; the packet carries SSRC 0x5041524c and audio level 30.
    init() throws(SRTPError) {
        let key = (0..<32).map { _ in UInt8.random(in: 0...255) }, salt = (0..<12).map { _ in UInt8.random(in: 0...255) }
        sender = try SRTPSender(key: key, salt: salt)
        receiver = try SRTPReceiver(key: key, salt: salt)
        let header = RTPHeader(payloadType: 111, sequenceNumber: 0, timestamp: 0, ssrc: 0x5041_524c,
                               extensions: [.audioLevel(id: 1, AudioLevel(voice: true, level: 30))])
        packet = .allocate(byteCount: Self.packetBytes, alignment: 16)
        let headerBytes = try! header.serialize(into: packet)
        precondition(headerBytes + Self.payloadBytes == Self.packetBytes, "the header is \(headerBytes) bytes, not 20")
        for i in headerBytes..<Self.packetBytes { packet[i] = UInt8(truncatingIfNeeded: i &* 37) }
        original = Array(packet)
        arena = .allocate(byteCount: Self.batch * Self.slotBytes, alignment: 16)
        plain = .allocate(byteCount: Self.slotBytes, alignment: 16)
        lengths = [Int](repeating: 0, count: Self.batch)
    }

    deinit {
        packet.deallocate()
        arena.deallocate()
        plain.deallocate()
    }

    /// Protects and unprotects `packets` packets; returns the two timings.
    func run(_ packets: Int) -> (protect: Timing, unprotect: Timing) {
        var protect = Timing(), unprotect = Timing()
        var done = 0
        while done < packets {
            let n = min(Self.batch, packets - done)
            protect += timed(n) { i in
                packet.storeBytes(of: sequence.bigEndian, toByteOffset: 2, as: UInt16.self)
                sequence &+= 1
                do { lengths[i] = try sender.protect(UnsafeRawBufferPointer(packet), into: slot(i)) } catch { failures += 1 }
            }
            unprotect += timed(n) { i in
                do {
                    let length = try receiver.unprotect(UnsafeRawBufferPointer(rebasing: slot(i)[..<lengths[i]]), into: plain)
                    if length != Self.packetBytes || plain[Self.packetBytes - 1] != original[Self.packetBytes - 1] { failures += 1 }
                } catch { failures += 1 }
            }
            done += n
        }
        return (protect, unprotect)
    }

    @inline(__always)
    private func slot(_ i: Int) -> UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: arena.baseAddress! + i * Self.slotBytes, count: Self.slotBytes)
    }

    /// The ROC the receiver reached (how many times the sequence numbers wrapped while measuring).
    var rolloverCounter: UInt32 { receiver.rolloverCounter(ssrc: 0x5041_524c) ?? 0 }
}
