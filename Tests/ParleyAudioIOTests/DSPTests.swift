import Testing
@testable import ParleyAudioIO

@Suite struct ResamplerTests {
    /// Feeds `seconds` of a tone in 10 ms chunks and returns everything produced.
    private func resample(from inputRate: Int, to outputRate: Int, seconds: Int) throws -> [Int16] {
        let resampler = try Resampler(from: inputRate, to: outputRate)
        let input = TestSignals.sine(frequency: 1000, amplitude: 0.5, count: inputRate * seconds, sampleRate: Double(inputRate))
        var output: [Int16] = []
        var scratch = [Int16](repeating: 0, count: 1024)
        input.withUnsafeBufferPointer { all in
            var offset = 0
            while offset < all.count {
                let chunk = UnsafeBufferPointer(rebasing: all[offset..<min(all.count, offset + inputRate / 100)])
                var consumed = 0
                while consumed < chunk.count {
                    let step = scratch.withUnsafeMutableBufferPointer {
                        resampler.process(UnsafeBufferPointer(rebasing: chunk[consumed...]), into: $0)
                    }
                    consumed += step.consumed
                    output += scratch[..<step.produced]
                }
                offset += chunk.count
            }
        }
        return output
    }

    @Test func from44100To48000KeepsTheRatio() throws {
        let output = try resample(from: 44_100, to: 48_000, seconds: 2)
        // 96 000 samples, less the filter's delay (a few dozen samples at quality 5).
        #expect((95_800...96_000).contains(output.count))
        let atTone = TestSignals.goertzel(output[48_000..<72_000], frequency: 1000)
        #expect(abs(atTone - 0.0625) < 0.01)
    }

    @Test func from48000To16000KeepsTheRatio() throws {
        let output = try resample(from: 48_000, to: 16_000, seconds: 1)
        #expect((15_900...16_000).contains(output.count))
    }

    @Test func invalidRateIsAClearError() {
        #expect(throws: AudioIOError.self) { _ = try Resampler(from: 0, to: 48_000) }
        #expect(throws: AudioIOError.self) { _ = try Resampler(from: 44_100, to: 48_000, quality: 11) }
    }
}

@Suite struct VoiceProcessorTests {
    @Test func silenceIsNotSpeechAndALoudToneIs() throws {
        let processor = try VoiceProcessor()
        var frame = [Int16](repeating: 0, count: 960)
        for _ in 0..<50 {
            frame = [Int16](repeating: 0, count: 960)
            #expect(frame.withUnsafeMutableBufferPointer { processor.process($0, playedReference: nil) } == false)
        }
        var decisions: [Bool] = []
        for index in 0..<25 {
            frame = TestSignals.sine(frequency: 440, amplitude: 0.7, count: 960, phase: index * 960)
            decisions.append(frame.withUnsafeMutableBufferPointer { processor.process($0, playedReference: nil) })
        }
        #expect(decisions.suffix(20).allSatisfy { $0 }, "VAD decisions during the burst: \(decisions)")
    }

    @Test func denoiseReducesWhiteNoise() throws {
        let processor = try VoiceProcessor()
        let noise = TestSignals.whiteNoise(amplitude: 2000, count: 960 * 150)
        var output: [Int16] = []
        var frame = [Int16](repeating: 0, count: 960)
        for start in stride(from: 0, to: noise.count, by: 960) {
            frame.replaceSubrange(0..<960, with: noise[start..<start + 960])
            _ = frame.withUnsafeMutableBufferPointer { processor.process($0, playedReference: nil) }
            output += frame
        }
        let tailInput = TestSignals.energy(noise.suffix(960 * 50))
        let tailOutput = TestSignals.energy(output.suffix(960 * 50))
        #expect(tailOutput < tailInput / 4, "noise energy \(tailInput) → \(tailOutput)")
    }

    @Test func echoCancellationAndAGCRun() throws {
        var options = VoiceProcessor.Options()
        options.echoCancel = true
        options.agc = true
        options.echoTailMilliseconds = 100
        let processor = try VoiceProcessor(options: options)
        let played = TestSignals.whiteNoise(amplitude: 8000, count: 960 * 100, seed: 7)
        var frame = [Int16](repeating: 0, count: 960)
        var echoIn = 0.0
        var echoOut = 0.0
        for (index, start) in stride(from: 0, to: played.count, by: 960).enumerated() {
            // The microphone hears the played frame at half amplitude, 10 ms late.
            let delayed = (0..<960).map { start + $0 - 480 >= 0 ? played[start + $0 - 480] / 2 : 0 }
            frame = delayed
            let reference = Array(played[start..<start + 960])
            _ = frame.withUnsafeMutableBufferPointer { mic in
                reference.withUnsafeBufferPointer { processor.process(mic, playedReference: $0) }
            }
            if index >= 70 {
                echoIn += TestSignals.energy(delayed)
                echoOut += TestSignals.energy(frame)
            }
        }
        #expect(echoOut < echoIn / 4, "echo energy \(echoIn) → \(echoOut)")
        // A nil reference (nothing played) is accepted.
        frame = [Int16](repeating: 0, count: 960)
        _ = frame.withUnsafeMutableBufferPointer { processor.process($0, playedReference: nil) }
    }

    @Test func vadOffAlwaysSaysSpeech() throws {
        var options = VoiceProcessor.Options()
        options.vad = false
        options.denoise = false
        let processor = try VoiceProcessor(options: options)
        var frame = [Int16](repeating: 0, count: 960)
        #expect(frame.withUnsafeMutableBufferPointer { processor.process($0, playedReference: nil) })
    }
}
