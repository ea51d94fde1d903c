import Testing
@testable import ParleyWire

/// RFC 4571 framing over TCP, the client's tunnel frames, and what a connection's first frame says it is.
@Suite("Stream frames: RFC 4571 reassembly with a size limit, tunnel frames, the first frame's kind")
struct StreamFramesTests {
    @Test("frames split anywhere come out whole and in order; empty frames are skipped")
    func reassembly() throws {
        let payloads: [[UInt8]] = [[1, 2, 3], [], Array(repeating: 7, count: 300), [9]]
        let stream = payloads.flatMap { StreamFrameReader.frame($0) }
        for cut in [1, 2, 3, 5, 64, stream.count] {
            var reader = StreamFrameReader(maxFrame: 1_500)
            var out: [[UInt8]] = []
            var i = 0
            while i < stream.count {
                reader.append(Array(stream[i..<min(i + cut, stream.count)]))
                i += cut
                while let frame = try reader.next() { out.append(frame) }
            }
            #expect(out == payloads.filter { !$0.isEmpty }, "cut \(cut)")
            #expect(reader.pendingBytes == 0)
        }
    }

    @Test("a length over the limit is refused before its bytes arrive")
    func tooLarge() {
        var reader = StreamFrameReader(maxFrame: 1_502)
        reader.append([0x05, 0xDF])  // 1,503
        var failure: StreamFrameReader.TooLarge?
        do { _ = try reader.next() } catch { failure = error }
        #expect(failure == StreamFrameReader.TooLarge(length: 1_503))
        var fits = StreamFrameReader(maxFrame: 1_502)
        fits.append([0x05, 0xDE])
        let next = try? fits.next()
        #expect(next == .some(nil), "a frame of the limit waits for its bytes")
    }

    @Test("tunnel frames: a port and a datagram; port 0 or too short is none")
    func tunnel() throws {
        let wrapped = [UInt8]([0xAB]).withUnsafeBytes { RelayTunnel.wrap(port: 7401, $0) }
        #expect(wrapped == [0x1C, 0xE9, 0xAB])
        let (port, datagram) = try #require(RelayTunnel.unwrap(wrapped))
        #expect(port == 7401 && Array(datagram) == [0xAB])
        #expect(RelayTunnel.unwrap([0x1C, 0xE9]) == nil && RelayTunnel.unwrap([0, 0, 1]) == nil)
    }

    @Test("the first frame: a STUN Binding request is ICE-TCP, a tunnel frame is the client, anything else neither")
    func classify() {
        var stun = [UInt8](repeating: 0, count: 20)
        stun[1] = 0x01
        stun[4] = 0x21; stun[5] = 0x12; stun[6] = 0xA4; stun[7] = 0x42
        #expect(StreamKind.classify(stun) == .iceTCP)
        #expect(StreamKind.classify([0x1C, 0xE8, 0x01]) == .tunnel)
        #expect(StreamKind.classify([0x00, 0x00, 0x01]) == nil)
        #expect(StreamKind.classify([0x01]) == nil)
        var noCookie = stun
        noCookie[4] = 0
        #expect(StreamKind.classify(noCookie) == .tunnel)  // to port 1, which no relay has: the bridge closes it
    }
}
