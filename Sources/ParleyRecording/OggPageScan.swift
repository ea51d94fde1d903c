import COgg

/// What the end of an Ogg file says: the granule position of its last complete page, found by libogg's sync layer
/// (capture pattern and CRC checked), so a file cut off mid-page — the relay killed while writing — reports the audio
/// it holds. Pure: the caller reads the bytes.
public enum OggPageScan {
    /// The last complete page's granule position in `bytes` (a file's tail), or nil when no complete page is in it or
    /// the last one carries no granule (-1).
    public static func lastGranule(_ bytes: [UInt8]) -> Int64? {
        var last: Int64?
        forEachPage(bytes) { page in
            let g = ogg_page_granulepos(&page)
            if g >= 0 { last = g }
        }
        return last
    }

    /// Calls `body` with each complete page in `bytes`, in order (libogg's sync layer: bytes before a capture pattern,
    /// pages whose CRC fails and a page cut short at the end are skipped).
    static func forEachPage(_ bytes: [UInt8], _ body: (inout ogg_page) -> Void) {
        var sync = ogg_sync_state()
        ogg_sync_init(&sync)
        defer { ogg_sync_clear(&sync) }
        guard let buffer = ogg_sync_buffer(&sync, bytes.count) else { return }
        bytes.withUnsafeBufferPointer { b in
            if let base = b.baseAddress { UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: b.count) }
        }
        ogg_sync_wrote(&sync, bytes.count)
        var page = ogg_page()
        while true {
            let r = ogg_sync_pageout(&sync, &page)
            if r == 0 { break }      // needs more data: what is left is a partial page
            if r < 0 { continue }    // skipped bytes to the next capture pattern
            body(&page)
        }
    }
}
