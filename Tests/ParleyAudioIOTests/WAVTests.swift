import Foundation
import Testing
@testable import ParleyAudioIO

/// Builds WAV files byte by byte, independently of `WAVWriter`.
enum WAVBytes {
    /// A RIFF/WAVE file with a `fmt ` chunk (tag, channels, rate, bits) and a `data` chunk holding `data`.
    /// `declaredDataSize` overrides the data chunk's size field (for truncated files).
    static func file(tag: UInt16, channels: Int, rate: Int, bits: Int, data: [UInt8], declaredDataSize: Int? = nil,
                     extraChunk: Bool = false) -> [UInt8] {
        var fmt: [UInt8] = []
        le16(&fmt, tag)
        le16(&fmt, UInt16(channels))
        le32(&fmt, UInt32(rate))
        le32(&fmt, UInt32(rate * channels * bits / 8))
        le16(&fmt, UInt16(channels * bits / 8))
        le16(&fmt, UInt16(bits))
        var body: [UInt8] = Array("WAVE".utf8)
        body += Array("fmt ".utf8); le32(&body, UInt32(fmt.count)); body += fmt
        if extraChunk {  // an odd-sized LIST chunk, padded to even, that readers must skip
            body += Array("LIST".utf8); le32(&body, 3); body += [1, 2, 3, 0]
        }
        body += Array("data".utf8); le32(&body, UInt32(declaredDataSize ?? data.count)); body += data
        var file: [UInt8] = Array("RIFF".utf8)
        le32(&file, UInt32(body.count))
        return file + body
    }

    /// Encodes samples in [-1, 1) as `bits`-bit little-endian integers or 32-bit floats.
    static func encode(_ samples: [Double], bits: Int, isFloat: Bool) -> [UInt8] {
        var out: [UInt8] = []
        for sample in samples {
            if isFloat {
                le32(&out, Float(sample).bitPattern)
                continue
            }
            switch bits {
            case 8: out.append(UInt8(Int((sample * 128).rounded()) + 128))
            case 16: le16(&out, UInt16(bitPattern: Int16((sample * 32768).rounded())))
            case 24:
                let value = UInt32(bitPattern: Int32((sample * 8_388_608).rounded()))
                out += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value >> 16)]
            default: le32(&out, UInt32(bitPattern: Int32((sample * 2_147_483_648).rounded())))
            }
        }
        return out
    }

    static func le16(_ bytes: inout [UInt8], _ value: UInt16) {
        bytes += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)]
    }

    static func le32(_ bytes: inout [UInt8], _ value: UInt32) {
        bytes += [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8),
                  UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 24)]
    }
}

@Suite struct WAVTests {
    let directory = TestSignals.temporaryDirectory("wav")

    @Test func writerReaderRoundTrip() throws {
        let path = directory + "/round.wav"
        let samples = TestSignals.whiteNoise(amplitude: 32_767, count: 4_800) + [Int16.min, Int16.max, 0, -1]
        let writer = try WAVWriter(path: path)
        try samples.withUnsafeBufferPointer { all in
            try writer.write(UnsafeBufferPointer(rebasing: all[..<1000]))
            try writer.write(UnsafeBufferPointer(rebasing: all[1000...]))
        }
        #expect(writer.framesWritten == samples.count)
        try writer.finish()
        try writer.finish()

        let bytes = TestSignals.readFile(path)
        #expect(bytes.count == 44 + samples.count * 2)
        #expect(Array(bytes[0..<44]) == WAVHeader.canonical(sampleRate: 48_000, channels: 1, dataBytes: samples.count * 2))
        let reader = try WAVReader(path: path)
        #expect(reader.format == WAVFormat(sampleRate: 48_000, channels: 1, bitsPerSample: 16, isFloat: false))
        #expect(reader.frameCount == samples.count)
        #expect(try reader.readAllMono48k() == samples)
    }

    @Test func canonicalHeaderBytes() {
        // 48 kHz mono S16 with 960 samples (1920 bytes).
        let expected: [UInt8] = [
            0x52, 0x49, 0x46, 0x46, 0xA4, 0x07, 0x00, 0x00,  // "RIFF", 36 + 1920 = 1956
            0x57, 0x41, 0x56, 0x45,                          // "WAVE"
            0x66, 0x6D, 0x74, 0x20, 0x10, 0x00, 0x00, 0x00,  // "fmt ", 16
            0x01, 0x00, 0x01, 0x00,                          // PCM, 1 channel
            0x80, 0xBB, 0x00, 0x00,                          // 48000 Hz
            0x00, 0x77, 0x01, 0x00,                          // 96000 bytes/s
            0x02, 0x00, 0x10, 0x00,                          // block align 2, 16 bits
            0x64, 0x61, 0x74, 0x61, 0x80, 0x07, 0x00, 0x00,  // "data", 1920
        ]
        #expect(WAVHeader.canonical(sampleRate: 48_000, channels: 1, dataBytes: 1920) == expected)
    }

    @Test func stereo16kBecomesMono48kWithTheTone() throws {
        let path = directory + "/stereo16k.wav"
        let tone = TestSignals.sine(frequency: 1000, amplitude: 0.5, count: 16_000, sampleRate: 16_000)
        let interleaved = tone.flatMap { [$0, $0] }
        let writer = try WAVWriter(path: path, sampleRate: 16_000, channels: 2)
        try interleaved.withUnsafeBufferPointer { try writer.write($0) }
        #expect(writer.framesWritten == 16_000)
        try writer.finish()

        let reader = try WAVReader(path: path)
        #expect(reader.format == WAVFormat(sampleRate: 16_000, channels: 2, bitsPerSample: 16, isFloat: false))
        #expect(reader.frameCount == 16_000)
        let mono = try reader.readAllMono48k()
        #expect(mono.count == 48_000)
        let steady = mono[4_800..<43_200]
        let atTone = TestSignals.goertzel(steady, frequency: 1000)
        #expect(abs(atTone - 0.0625) < 0.01)  // a 0.5-amplitude sine: (0.5 / 2)²
        #expect(TestSignals.goertzel(steady, frequency: 3000) < atTone / 1000)
        // Aligned with the input: the resampler's delay is removed (peaks land where the 48 kHz tone's would).
        let reference = TestSignals.sine(frequency: 1000, amplitude: 0.5, count: 48_000)
        let error = zip(steady, reference[4_800..<43_200]).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(error < 600)
    }

    @Test func averagesChannels() throws {
        let path = directory + "/average.wav"
        let left: [Int16] = [1000, -2000, 32767, -32768]
        let right: [Int16] = [3000, 2000, 32767, -32768]
        let writer = try WAVWriter(path: path, channels: 2)
        try zip(left, right).flatMap { [$0, $1] }.withUnsafeBufferPointer { try writer.write($0) }
        try writer.finish()
        #expect(try WAVReader(path: path).readAllMono48k() == [2000, 0, 32767, -32768])
    }

    @Test(arguments: [(8, false), (16, false), (24, false), (32, false), (32, true)])
    func readsIntegerAndFloatDepths(bits: Int, isFloat: Bool) throws {
        let path = directory + "/depth\(bits)\(isFloat).wav"
        let values: [Double] = (0..<480).map { 0.5 * sin(2 * Double.pi * Double($0) / 48) }
        TestSignals.writeFile(path, WAVBytes.file(tag: isFloat ? 3 : 1, channels: 1, rate: 48_000, bits: bits,
                                                  data: WAVBytes.encode(values, bits: bits, isFloat: isFloat), extraChunk: true))
        let reader = try WAVReader(path: path)
        #expect(reader.format == WAVFormat(sampleRate: 48_000, channels: 1, bitsPerSample: bits, isFloat: isFloat))
        #expect(reader.frameCount == 480)
        let mono = try reader.readAllMono48k()
        let tolerance = bits == 8 ? 256 : 1
        for (got, want) in zip(mono, values) {
            #expect(abs(Int(got) - Int((want * 32768).rounded())) <= tolerance)
        }
    }

    @Test func readsExtensibleFormat() throws {
        let path = directory + "/extensible.wav"
        var fmt: [UInt8] = []
        WAVBytes.le16(&fmt, 0xFFFE); WAVBytes.le16(&fmt, 1); WAVBytes.le32(&fmt, 48_000); WAVBytes.le32(&fmt, 144_000)
        WAVBytes.le16(&fmt, 3); WAVBytes.le16(&fmt, 24)
        WAVBytes.le16(&fmt, 22); WAVBytes.le16(&fmt, 24); WAVBytes.le32(&fmt, 4)  // cbSize, valid bits, channel mask
        fmt += [0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71]  // KSDATAFORMAT_SUBTYPE_PCM
        let data = WAVBytes.encode([0.25, -0.25], bits: 24, isFloat: false)
        var body: [UInt8] = Array("WAVE".utf8) + Array("fmt ".utf8)
        WAVBytes.le32(&body, UInt32(fmt.count)); body += fmt
        body += Array("data".utf8); WAVBytes.le32(&body, UInt32(data.count)); body += data
        var file: [UInt8] = Array("RIFF".utf8); WAVBytes.le32(&file, UInt32(body.count))
        TestSignals.writeFile(path, file + body)
        let reader = try WAVReader(path: path)
        #expect(reader.format == WAVFormat(sampleRate: 48_000, channels: 1, bitsPerSample: 24, isFloat: false))
        #expect(try reader.readAllMono48k() == [8192, -8192])
    }

    @Test func missingFileIsAClearError() {
        let path = directory + "/missing.wav"
        #expect(throws: AudioIOError("cannot open \(path): No such file or directory")) { _ = try WAVReader(path: path) }
    }

    @Test func nonWAVFileIsAClearError() {
        let path = directory + "/notes.txt"
        TestSignals.writeFile(path, Array("just some text, long enough to have a header".utf8))
        #expect(throws: AudioIOError("\(path) is not a WAV file (no RIFF/WAVE header)")) { _ = try WAVReader(path: path) }
        let empty = directory + "/empty.wav"
        TestSignals.writeFile(empty, [])
        #expect(throws: AudioIOError("\(empty) is not a WAV file (no RIFF/WAVE header)")) { _ = try WAVReader(path: empty) }
    }

    @Test func truncatedFilesAreClearErrors() {
        let full = WAVBytes.file(tag: 1, channels: 1, rate: 48_000, bits: 16, data: [UInt8](repeating: 7, count: 2000))
        let cutData = directory + "/cut-data.wav"
        TestSignals.writeFile(cutData, Array(full.prefix(144)))
        #expect(throws: AudioIOError("\(cutData) is truncated: the data chunk declares 2000 bytes but only 100 are present")) {
            _ = try WAVReader(path: cutData)
        }
        let cutFormat = directory + "/cut-fmt.wav"
        TestSignals.writeFile(cutFormat, Array(full.prefix(30)))
        #expect(throws: AudioIOError("\(cutFormat) is truncated: the fmt chunk is incomplete")) { _ = try WAVReader(path: cutFormat) }
        let cutHeader = directory + "/cut-header.wav"
        TestSignals.writeFile(cutHeader, Array(full.prefix(36)))
        #expect(throws: AudioIOError("\(cutHeader) is truncated: no data chunk")) { _ = try WAVReader(path: cutHeader) }
        let cutRIFF = directory + "/cut-riff.wav"
        TestSignals.writeFile(cutRIFF, Array(full.prefix(6)))
        #expect(throws: AudioIOError("\(cutRIFF) is truncated: 6 bytes, too short for a RIFF/WAVE header")) { _ = try WAVReader(path: cutRIFF) }
    }

    @Test func unsupportedFormatsSayWhich() {
        let adpcm = directory + "/adpcm.wav"
        TestSignals.writeFile(adpcm, WAVBytes.file(tag: 2, channels: 1, rate: 8000, bits: 4, data: [0, 0]))
        #expect(throws: AudioIOError("\(adpcm) has an unsupported format: format tag 0x0002 (Microsoft ADPCM) (only PCM and IEEE float are supported)")) {
            _ = try WAVReader(path: adpcm)
        }
        let twelve = directory + "/12bit.wav"
        TestSignals.writeFile(twelve, WAVBytes.file(tag: 1, channels: 1, rate: 8000, bits: 12, data: [0, 0]))
        #expect(throws: AudioIOError("\(twelve) has an unsupported format: 12-bit integer PCM (8, 16, 24 and 32 are supported)")) {
            _ = try WAVReader(path: twelve)
        }
        let double = directory + "/double.wav"
        TestSignals.writeFile(double, WAVBytes.file(tag: 3, channels: 1, rate: 8000, bits: 64, data: [UInt8](repeating: 0, count: 8)))
        #expect(throws: AudioIOError("\(double) has an unsupported format: 64-bit float (only 32-bit float is supported)")) {
            _ = try WAVReader(path: double)
        }
    }

    @Test func updateHeaderKeepsAnInterruptedFileValid() throws {
        let path = directory + "/partial.wav"
        let writer = try WAVWriter(path: path)
        let frame = TestSignals.sine(frequency: 440, amplitude: 0.3, count: 960)

        // Before any update, a reader still gets the samples (data size 0 is read to the end of the file).
        try frame.withUnsafeBufferPointer { try writer.write($0) }
        #expect(try WAVReader(path: path).frameCount == 960)

        for round in 1...3 {
            try frame.withUnsafeBufferPointer { try writer.write($0) }
            try writer.updateHeader()
            try writer.updateHeader()
            let bytes = TestSignals.readFile(path)
            #expect(TestSignals.uint32(bytes, 4) == bytes.count - 8)    // RIFF size
            #expect(TestSignals.uint32(bytes, 40) == bytes.count - 44)  // data size
            #expect(bytes.count == 44 + (round + 1) * 1920)
            let reader = try WAVReader(path: path)
            #expect(reader.frameCount == (round + 1) * 960)
        }
        // The writer is abandoned without finish(), as an interrupted client would: the file stays valid.
        #expect(try WAVReader(path: path).readAllMono48k().count == 4 * 960)
    }

    @Test func writingToAFullDeviceIsAClearError() {
        #expect(throws: AudioIOError("cannot write /dev/full: No space left on device")) {
            let writer = try WAVWriter(path: "/dev/full")
            try [Int16](repeating: 0, count: 960).withUnsafeBufferPointer { try writer.write($0) }
        }
    }

    @Test func writeAfterFinishThrows() throws {
        let path = directory + "/finished.wav"
        let writer = try WAVWriter(path: path)
        try writer.finish()
        #expect(throws: AudioIOError("cannot write \(path): the file is finished")) {
            try [Int16](repeating: 0, count: 2).withUnsafeBufferPointer { try writer.write($0) }
        }
        #expect(try WAVReader(path: path).frameCount == 0)
    }

    @Test func uncreatableFileIsAClearError() {
        let path = directory + "/no/such/dir/out.wav"
        #expect(throws: AudioIOError("cannot create \(path): No such file or directory")) { _ = try WAVWriter(path: path) }
    }
}
