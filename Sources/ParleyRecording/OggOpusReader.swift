import COgg

/// The audio packets of an Ogg Opus file (RFC 7845) read back with libogg's sync layer: the two header packets are
/// skipped, every page's CRC is checked, and a file cut off mid-page yields the packets of its complete pages. Pure:
/// the caller reads the bytes.
public enum OggOpusReader {
    /// The file's pre-skip (from `OpusHead`) and its audio packets, in order; nil when it is not Ogg Opus.
    public static func packets(_ bytes: [UInt8]) -> (preSkip: Int, packets: [[UInt8]])? {
        var stream = ogg_stream_state()
        var started = false
        defer { if started { ogg_stream_clear(&stream) } }
        var packet = ogg_packet()
        var out: [[UInt8]] = []
        var preSkip: Int?
        var headers = 0
        var notOpus = false
        OggPageScan.forEachPage(bytes) { page in
            guard !notOpus else { return }
            if !started {
                ogg_stream_init(&stream, ogg_page_serialno(&page))
                started = true
            }
            guard ogg_page_serialno(&page) == stream.serialno else { return }  // one logical stream: the first
            ogg_stream_pagein(&stream, &page)
            while true {
                let p = ogg_stream_packetout(&stream, &packet)
                if p == 0 { break }
                if p < 0 { continue }  // a gap (a lost page): go on with what follows
                let data = Array(UnsafeBufferPointer(start: packet.packet, count: packet.bytes))
                if headers == 0 {
                    guard data.count >= 19, Array(data.prefix(8)) == Array("OpusHead".utf8) else { notOpus = true; return }
                    preSkip = Int(data[10]) | Int(data[11]) << 8
                    headers = 1
                } else if headers == 1 {
                    headers = 2  // OpusTags
                } else {
                    out.append(data)
                }
            }
        }
        guard let preSkip else { return nil }
        return (preSkip, out)
    }
}
