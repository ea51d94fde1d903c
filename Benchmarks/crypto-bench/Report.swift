import BenchmarkSupport

/// Every figure the program reports: the medians of each measurement's runs.
struct Results {
    var options: Options
    var protect: [Timing]
    var unprotect: [Timing]
    /// Bare AEAD encryptions and decryptions per construction.
    var seal: [BareAEADLoop.Kind: [Timing]]
    var open: [BareAEADLoop.Kind: [Timing]]
    var rolloverCounter: UInt32
    /// Problems the run's self-checks found (empty when all is as expected).
    var problems: [String]

    private func us(_ runs: [Timing]?) -> Double { median(runs ?? []).microsecondsPerPacket }
    /// SRTP protect ÷ the bare AES-256-GCM encryption with the key expanded once: what RFC 7714 framing, the IV and
    /// the replay window cost on top of the cipher.
    var protectOverBare: Double { us(protect) / us(seal[.aes256gcmExpandedKey]) }
    var unprotectOverBare: Double { us(unprotect) / us(open[.aes256gcmExpandedKey]) }
    var srtpAllocationsPerPacket: Double { max(allocationsPerPacket(protect), allocationsPerPacket(unprotect)) }

    /// One line of JSON.
    var json: String {
        let fields: [(String, String)] = [
            ("packet_bytes", "\(SRTPLoop.packetBytes)"), ("packets", "\(options.packets)"), ("runs", "\(options.runs)"),
            ("srtp_aes256gcm_protect_us", fixed(us(protect), 3)),
            ("srtp_aes256gcm_unprotect_us", fixed(us(unprotect), 3)),
            ("srtp_allocations_per_packet", fixed(srtpAllocationsPerPacket, 4)),
            ("aes256gcm_expanded_key_encrypt_us", fixed(us(seal[.aes256gcmExpandedKey]), 3)),
            ("aes256gcm_expanded_key_decrypt_us", fixed(us(open[.aes256gcmExpandedKey]), 3)),
            ("aes256gcm_one_shot_encrypt_us", fixed(us(seal[.aes256gcmOneShot]), 3)),
            ("aes256gcm_one_shot_decrypt_us", fixed(us(open[.aes256gcmOneShot]), 3)),
            ("xchacha20poly1305_encrypt_us", fixed(us(seal[.xchacha20poly1305]), 3)),
            ("xchacha20poly1305_decrypt_us", fixed(us(open[.xchacha20poly1305]), 3)),
            ("protect_over_bare_encrypt", fixed(protectOverBare, 2)),
            ("unprotect_over_bare_decrypt", fixed(unprotectOverBare, 2)),
            ("checks_passed", problems.isEmpty ? "true" : "false"),
        ]
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The human-readable table.
    var table: String {
        var lines: [String] = []
        lines.append("crypto-bench: 120-byte RTP packets (20-byte header with an RFC 6464 audio level, 100-byte payload)")
        lines.append("\(options.packets) packets per run, \(options.runs) runs (median shown), thread CPU time; " +
                     "SRTP in batches of \(SRTPLoop.batch) (protect all, then unprotect all)")
        lines.append("")
        let widths = [58, 12, 16]
        func row(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in i == 0 ? cell.padding(widths[0]) : column(cell, widths[i]) }.joined()
        }
        lines.append(row(["", "µs/packet", "allocs/packet"]))
        lines.append(row(["SRTP AEAD_AES_256_GCM protect (RFC 7714, ParleyCrypto)", fixed(us(protect), 3), fixed(allocationsPerPacket(protect), 4)]))
        lines.append(row(["SRTP AEAD_AES_256_GCM unprotect (+ replay window)", fixed(us(unprotect), 3), fixed(allocationsPerPacket(unprotect), 4)]))
        let names: [(BareAEADLoop.Kind, String)] = [
            (.aes256gcmExpandedKey, "libsodium AES-256-GCM, key expanded once"),
            (.aes256gcmOneShot, "libsodium AES-256-GCM, one-shot"),
            (.xchacha20poly1305, "libsodium XChaCha20-Poly1305-IETF"),
        ]
        for (kind, name) in names {
            lines.append(row(["\(name): encrypt", fixed(us(seal[kind]), 3), fixed(allocationsPerPacket(seal[kind] ?? []), 4)]))
            lines.append(row(["\(name): decrypt", fixed(us(open[kind]), 3), fixed(allocationsPerPacket(open[kind] ?? []), 4)]))
        }
        lines.append("")
        lines.append("SRTP ÷ bare AES-256-GCM (key expanded once): protect \(fixed(protectOverBare, 2))×, unprotect \(fixed(unprotectOverBare, 2))×")
        lines.append("SRTP protect per run (µs): " + protect.map { fixed($0.microsecondsPerPacket, 3) }.joined(separator: ", ") +
                     "; the stream reached ROC \(rolloverCounter)")
        lines.append(problems.isEmpty ? "checks: passed (every packet protected, unprotected and equal; 0 allocations per SRTP packet)"
                                      : "checks FAILED:\n  " + problems.joined(separator: "\n  "))
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// Left-aligned in `width` columns.
    func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
