import ParleyMedia

/// One file out of a forward room's tracks, to listen to: each track decoded (libopus, its gap packets concealed as
/// any decoder would), the tracks summed sample by sample from the recording's start — they line up, see
/// `TrackTimeline` — and the sum encoded with libopusenc. Streams 20 ms at a time: memory does not grow with the
/// recording's length.
public enum Mixdown {
    /// Mixes the Ogg Opus `tracks` (their bytes) into an encoder; returns the samples written. Tracks that are not Ogg
    /// Opus are skipped.
    public static func mix(_ tracks: [[UInt8]], into encoder: OpusFileEncoder) throws -> Int {
        struct Track { var packets: [[UInt8]]; var next = 0; var skip: Int; let decoder: OpusDecoder; var fifo: [Int16] = [] }
        var list: [Track] = []
        for bytes in tracks {
            guard let (preSkip, packets) = OggOpusReader.packets(bytes) else { continue }
            list.append(Track(packets: packets, skip: preSkip, decoder: try OpusDecoder()))
        }
        var decoded = [Int16](repeating: 0, count: 5_760)
        var frame = [Int16](repeating: 0, count: 960)
        var sum = [Int32](repeating: 0, count: 960)
        var written = 0
        while true {
            var any = false
            for k in list.indices {
                while list[k].fifo.count < 960, list[k].next < list[k].packets.count {
                    let n = try list[k].packets[list[k].next].withUnsafeBytes { p in
                        try decoded.withUnsafeMutableBufferPointer { try list[k].decoder.decode(p, into: $0) }
                    }
                    list[k].next += 1
                    var chunk = decoded[0..<n]
                    if list[k].skip > 0 {
                        let dropped = min(list[k].skip, chunk.count)
                        chunk = chunk.dropFirst(dropped)
                        list[k].skip -= dropped
                    }
                    list[k].fifo.append(contentsOf: chunk)
                }
                if !list[k].fifo.isEmpty { any = true }
            }
            guard any else { break }
            for i in 0..<960 { sum[i] = 0 }
            for k in list.indices {
                let take = min(960, list[k].fifo.count)
                for i in 0..<take { sum[i] += Int32(list[k].fifo[i]) }
                list[k].fifo.removeFirst(take)
            }
            for i in 0..<960 { frame[i] = Int16(clamping: sum[i]) }
            try frame.withUnsafeBufferPointer { try encoder.write($0) }
            written += 960
        }
        try encoder.finish()
        return written
    }
}
