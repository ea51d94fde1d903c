import ParleyRecording
import Testing

/// Ogg pages (RFC 3533) as libogg writes them for an Ogg Opus stream (RFC 7845): headers on pages of their own,
/// granule positions counting samples, the last page flagged end-of-stream.
struct OggOpusStreamTests {
    struct Page { var flags: UInt8; var granule: Int64; var serial: UInt32; var sequence: UInt32; var packets: [[UInt8]] }

    /// Splits bytes into pages and their packets (lacing values), checking the capture pattern.
    func pages(_ b: [UInt8]) -> [Page] {
        var out: [Page] = []
        var i = 0
        while i + 27 <= b.count {
            #expect(Array(b[i..<i + 4]) == Array("OggS".utf8))
            var granule: Int64 = 0
            for k in (0..<8).reversed() { granule = granule << 8 | Int64(b[i + 6 + k]) }
            func le32(_ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) } }
            let segments = Int(b[i + 26])
            var packets: [[UInt8]] = [], current: [UInt8] = []
            var at = i + 27 + segments
            for s in 0..<segments {
                let n = Int(b[i + 27 + s])
                current += b[at..<at + n]
                at += n
                if n < 255 { packets.append(current); current = [] }
            }
            out.append(Page(flags: b[i + 5], granule: granule, serial: le32(i + 14), sequence: le32(i + 18), packets: packets))
            i = at
        }
        #expect(i == b.count)
        return out
    }

    @Test func headersThenAudioThenTheEnd() {
        let head = OpusHeaderPackets.head()
        let tags = OpusHeaderPackets.tags(vendor: "parley test", comments: ["PARLEY_ROOM=r"])
        let stream = OggOpusStream(serial: 7, head: head, tags: tags)
        var bytes = stream.take()
        stream.append([0x48, 1], samples: 960)
        stream.append([0x4B, 5], samples: 4_800)
        bytes += stream.take(flush: true)
        stream.append([0x48, 2], samples: 960, end: true)
        bytes += stream.take()
        let p = pages(bytes)
        #expect(p.count == 4)
        #expect(p[0].flags == 0x02 && p[0].packets == [head] && p[0].granule == 0)  // beginning of stream
        #expect(p[1].packets == [tags] && p[1].granule == 0)
        #expect(p[2].packets == [[0x48, 1], [0x4B, 5]] && p[2].granule == 5_760)
        #expect(p[3].flags == 0x04 && p[3].packets == [[0x48, 2]] && p[3].granule == 6_720)  // end of stream
        #expect(p.map(\.sequence) == [0, 1, 2, 3] && p.allSatisfy { $0.serial == 7 })
        #expect(stream.granule == 6_720 && stream.ended)
    }

    @Test func opusHeadIsNineteenBytesAsRFC7845Lays() {
        #expect(OpusHeaderPackets.head() == [0x4F, 0x70, 0x75, 0x73, 0x48, 0x65, 0x61, 0x64,  // "OpusHead"
                                             0x01, 0x01,                                      // version 1, mono
                                             0x38, 0x01,                                      // pre-skip 312
                                             0x80, 0xBB, 0x00, 0x00,                          // 48,000 Hz
                                             0x00, 0x00, 0x00])                               // gain 0, family 0
        let tags = OpusHeaderPackets.tags(vendor: "v", comments: ["A=b"])
        #expect(tags == Array("OpusTags".utf8) + [1, 0, 0, 0] + Array("v".utf8) + [1, 0, 0, 0] + [3, 0, 0, 0] + Array("A=b".utf8))
    }

    @Test func nothingIsReturnedTwice() {
        let stream = OggOpusStream(serial: 1, head: OpusHeaderPackets.head(), tags: OpusHeaderPackets.tags(vendor: "v", comments: []))
        #expect(!stream.take().isEmpty)
        #expect(stream.take(flush: true).isEmpty)
        stream.append([0x48, 1], samples: 960)
        #expect(stream.take().isEmpty)  // under a page: libogg holds it
        #expect(pages(stream.take(flush: true)).count == 1)
    }
}

/// The granule of a file's last complete page, as a relay restarted after a kill reads it.
struct OggPageScanTests {
    func file() -> [UInt8] {
        let stream = OggOpusStream(serial: 3, head: OpusHeaderPackets.head(), tags: OpusHeaderPackets.tags(vendor: "v", comments: []))
        var bytes = stream.take()
        stream.append([0x48, 1], samples: 960)
        bytes += stream.take(flush: true)
        stream.append([0x48, 2], samples: 960)
        stream.append([0x48, 3], samples: 960)
        bytes += stream.take(flush: true)
        return bytes
    }

    @Test func theLastCompletePageCounts() {
        let bytes = file()
        #expect(OggPageScan.lastGranule(bytes) == 2_880)
        // Cut inside the last page: the page before it.
        #expect(OggPageScan.lastGranule(Array(bytes.dropLast(3))) == 960)
        // A tail that starts mid-page: the scanner finds the next capture pattern.
        #expect(OggPageScan.lastGranule(Array(bytes.dropFirst(5))) == 2_880)
        #expect(OggPageScan.lastGranule([]) == nil)
        #expect(OggPageScan.lastGranule(Array(repeating: 0x4F, count: 100)) == nil)
        // One flipped byte in the last page: its CRC fails, the page before it counts.
        var damaged = bytes
        damaged[damaged.count - 1] ^= 0xFF
        #expect(OggPageScan.lastGranule(damaged) == 960)
    }
}
