import BenchmarkSupport
import ParleyRelayCore
import ParleyWire

/// The bare work the relay core must do for each received packet, and nothing more: parse the RTP header, look
/// the sender up by address, and queue the same bytes once per listener of its room. No stats, history,
/// selection or counters. The core's cost is read as a ratio of this, measured in the same run.
final class BaselineRouter {
    private struct Sender {
        let ssrc: UInt32
        let roomIndex: Int
        /// Whether the core forwards this speaker (the baseline fans out the same speakers, so both queue the same count).
        let forwarded: Bool
    }

    private var senders: [PeerAddress: Sender] = [:]
    private var listeners: [[PeerAddress]]
    private let output = OutputQueue()
    /// Speakers' streams: packets per 20 ms round.
    private let streams: Int

    /// A router over the scenario's rooms, forwarding the speakers its core forwards now.
    init(_ scenario: Scenario) {
        listeners = Array(repeating: [], count: scenario.shape.rooms)
        streams = max(1, scenario.streams.count)
        for client in scenario.clients { listeners[client.roomIndex].append(client.address) }
        let forwarded = scenario.forwardedSpeakers
        for stream in scenario.streams {
            senders[stream.address] = Sender(ssrc: stream.ssrc, roomIndex: stream.roomIndex, forwarded: forwarded.contains(stream.address))
        }
    }

    /// Routes every packet of `train` in batches of 64, as `Scenario.run` does, the caches evicted (untimed) after
    /// each round of `streams` packets when `ColdCaches` asks it.
    func run(_ train: PacketTrain) -> PacketFigures {
        var figures = PacketFigures()
        let allocationsBefore = Allocations.count
        var start = monotonicNanoseconds()
        for i in 0..<train.count {
            let from = train.sender(i)
            route(train.packet(i), from: from)
            if (i + 1) % Scenario.batchSize == 0 {
                figures.forwarded += output.count
                output.reset()
            }
            if ColdCaches.bytes > 0, (i + 1) % streams == 0 {
                figures.nanoseconds += monotonicNanoseconds() - start
                ColdCaches.evict()
                start = monotonicNanoseconds()
            }
        }
        figures.forwarded += output.count
        output.reset()
        figures.nanoseconds += monotonicNanoseconds() - start
        figures.allocations = Allocations.count - allocationsBefore
        figures.packetsIn = train.count
        return figures
    }

    @inline(__always)
    private func route(_ bytes: UnsafeRawBufferPointer, from: PeerAddress) {
        guard let sender = senders[from], let packet = try? RTPPacketView(parsing: bytes), packet.ssrc == sender.ssrc,
              sender.forwarded else { return }
        for listener in listeners[sender.roomIndex] where listener != from {
            output.append(bytes, to: listener)
        }
    }
}
