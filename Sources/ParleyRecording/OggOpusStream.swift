import COgg

/// One Ogg Opus logical stream on libogg (RFC 7845): the two header packets on pages of their own, then audio
/// packets with their granule positions; finished pages come out as bytes for the caller to write. A page is
/// written whole or not at all, so a file cut off anywhere (the relay killed) plays to its last complete page.
/// Owned by one thread.
public final class OggOpusStream {
    private var state = ogg_stream_state()
    private var packetNumber: Int64 = 0
    /// The granule position after the last packet put in: samples at 48 kHz, pre-skip included (RFC 7845 §4).
    public private(set) var granule: Int64 = 0
    /// Whether the end-of-stream packet went in.
    public private(set) var ended = false

    /// A stream with serial number `serial`, its headers already on their pages (`take(flush:)` returns them).
    public init(serial: Int32, head: [UInt8], tags: [UInt8]) {
        ogg_stream_init(&state, serial)
        put(head, granule: 0, beginning: true)
        flushPages()
        put(tags, granule: 0)
        flushPages()
    }

    deinit { ogg_stream_clear(&state) }

    private var ready: [UInt8] = []

    private func put(_ bytes: [UInt8], granule: Int64, beginning: Bool = false, end: Bool = false) {
        var bytes = bytes
        bytes.withUnsafeMutableBufferPointer { b in
            var p = ogg_packet()
            p.packet = b.baseAddress
            p.bytes = b.count
            p.b_o_s = beginning ? 1 : 0
            p.e_o_s = end ? 1 : 0
            p.granulepos = granule
            p.packetno = packetNumber
            ogg_stream_packetin(&state, &p)  // copies the bytes
        }
        packetNumber += 1
    }

    /// An audio packet `samples` long; `end`: the stream's last.
    public func append(_ packet: [UInt8], samples: Int, end: Bool = false) {
        precondition(!ended, "a packet after the end of the stream")
        granule += Int64(samples)
        put(packet, granule: granule, end: end)
        ended = end
    }

    private func collect(_ page: inout ogg_page) {
        ready.append(contentsOf: UnsafeBufferPointer(start: page.header, count: page.header_len))
        ready.append(contentsOf: UnsafeBufferPointer(start: page.body, count: page.body_len))
    }

    private func flushPages() {
        var page = ogg_page()
        while ogg_stream_flush(&state, &page) != 0 { collect(&page) }
    }

    /// The bytes of every finished page, in order: those libogg filled (about 4 KB or 255 packets each), or with
    /// `flush` every packet put in so far on pages. Empty when there are none.
    public func take(flush: Bool = false) -> [UInt8] {
        var page = ogg_page()
        while ogg_stream_pageout(&state, &page) != 0 { collect(&page) }
        if flush || ended { flushPages() }
        defer { ready.removeAll(keepingCapacity: true) }
        return ready
    }
}
