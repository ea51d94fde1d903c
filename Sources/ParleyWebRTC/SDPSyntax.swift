// The pieces of SDP (RFC 8866) that offers and answers share: directions, DTLS roles, the line splitter, and the
// character classes of every value the relay echoes back into an answer. No Foundation: offers arrive on the
// control plane as text and are taken apart with the standard library alone.

/// A media section's direction attribute (RFC 8866 §6.7, RFC 3264 §6.1), from the point of view of whoever wrote it.
public enum SDPDirection: String, Equatable, Sendable, CaseIterable {
    /// `a=sendrecv`, the default.
    case sendrecv
    /// `a=sendonly`.
    case sendonly
    /// `a=recvonly`.
    case recvonly
    /// `a=inactive`.
    case inactive

    /// The direction that sends when `sends` and receives when `receives`.
    public init(sends: Bool, receives: Bool) {
        switch (sends, receives) {
        case (true, true): self = .sendrecv
        case (true, false): self = .sendonly
        case (false, true): self = .recvonly
        case (false, false): self = .inactive
        }
    }

    /// True for `sendrecv` and `sendonly`.
    public var sends: Bool { self == .sendrecv || self == .sendonly }
    /// True for `sendrecv` and `recvonly`.
    public var receives: Bool { self == .sendrecv || self == .recvonly }
}

/// The DTLS role attribute `a=setup` (RFC 4145 §4, RFC 8842 §5).
public enum SDPSetup: String, Equatable, Sendable {
    /// The offerer lets the answerer choose: what JSEP offers always say.
    case actpass
    /// This side starts the DTLS handshake (client).
    case active
    /// This side waits for the handshake (server): what the relay answers.
    case passive
    /// No connection for now.
    case holdconn
}

/// Splitting, character classes and errors of SDP text.
enum SDPSyntax {
    /// One `x=value` line.
    struct Line {
        /// The type letter.
        var type: UInt8
        /// Everything after `=`.
        var value: Substring
    }

    /// A `bad_sdp` error.
    static func bad(_ reason: String) -> WebRTCError { WebRTCError("bad_sdp", reason) }

    /// The `x=value` lines of `text`, ended by LF or CRLF; empty lines are skipped. Throws `too_large` for a line of
    /// more than `maxLineLength` bytes, `bad_sdp` for a line that is not a lowercase letter and `=`, or that holds a
    /// lone CR or a NUL.
    static func lines(of text: String, maxLineLength: Int) throws(WebRTCError) -> [Line] {
        var lines: [Line] = []
        var number = 0
        // Split on bytes: as Characters, "\r\n" is one grapheme and would not split on "\n".
        for raw in text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            var bytes = raw[...]
            if bytes.last == UInt8(ascii: "\r") { bytes = bytes.dropLast() }
            if bytes.isEmpty { continue }
            guard bytes.count <= maxLineLength else {
                throw WebRTCError("too_large", "SDP line \(number) is longer than \(maxLineLength) bytes")
            }
            guard !bytes.contains(where: { $0 == UInt8(ascii: "\r") || $0 == 0 }) else {
                throw bad("SDP line \(number) holds a CR or NUL byte")
            }
            let type = bytes[bytes.startIndex]
            let second = bytes.index(after: bytes.startIndex)
            guard (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(type), second < bytes.endIndex,
                  bytes[second] == UInt8(ascii: "=")
            else { throw bad("SDP line \(number) is not `x=value`") }
            let value = Substring(String(decoding: bytes[bytes.index(after: second)...], as: UTF8.self))
            lines.append(Line(type: type, value: value))
        }
        return lines
    }

    /// Splits `a=name:value` into its name and value (nil for a flag such as `a=rtcp-mux`).
    static func attribute(_ text: Substring) -> (name: Substring, value: Substring?) {
        guard let colon = text.firstIndex(of: ":") else { return (text, nil) }
        return (text[..<colon], text[text.index(after: colon)...])
    }

    /// The space-separated fields of `text`.
    static func fields(_ text: Substring) -> [Substring] {
        text.split(separator: " ", omittingEmptySubsequences: true)
    }

    /// True when every byte of `text` satisfies `allowed` and its length is in `lengths`.
    static func matches(_ text: Substring, _ lengths: ClosedRange<Int>, _ allowed: (UInt8) -> Bool) -> Bool {
        lengths.contains(text.utf8.count) && text.utf8.allSatisfy(allowed)
    }

    /// ASCII letters and digits.
    static func isAlphanumeric(_ c: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c)
    }

    /// Identifiers the relay echoes into an answer — mids, media kinds, formats: 1 to 32 of `[A-Za-z0-9-_.]`.
    static func isIdentifier(_ text: Substring) -> Bool {
        matches(text, 1...32) { isAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    /// A transport protocol such as `UDP/TLS/RTP/SAVPF`: 1 to 64 of `[A-Za-z0-9/_.-]`.
    static func isProto(_ text: Substring) -> Bool {
        matches(text, 1...64) {
            isAlphanumeric($0) || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
        }
    }

    /// ICE's `ice-char` (RFC 8839 §5.4): letters, digits, `+` and `/`.
    static func isICEString(_ text: Substring, _ lengths: ClosedRange<Int>) -> Bool {
        matches(text, lengths) { isAlphanumeric($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") }
    }

    /// A CNAME the relay writes: 1 to 64 of `[A-Za-z0-9+/=_.-]`.
    static func isCNAME(_ text: Substring) -> Bool {
        matches(text, 1...64) {
            isAlphanumeric($0) || "+/=_.-".utf8.contains($0)
        }
    }

    /// A decimal number of at most 10 ASCII digits that fits `T` (no sign, no spaces).
    static func decimal<T: FixedWidthInteger>(_ text: Substring, as type: T.Type = T.self) -> T? {
        guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return T(text)
    }

    /// The bytes of a fingerprint written `AB:CD:…` (RFC 8122 §5), either case, when there are `count` of them.
    static func fingerprintBytes(_ text: Substring, count: Int) -> [UInt8]? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == count else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        for part in parts {
            guard part.utf8.count == 2, part.utf8.allSatisfy({ $0 < 0x80 && Character(Unicode.Scalar($0)).isHexDigit }),
                  let byte = UInt8(part, radix: 16)
            else { return nil }
            bytes.append(byte)
        }
        return bytes
    }

    /// `bytes` as uppercase hex pairs joined by colons.
    static func fingerprintText(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 3)
        for (i, byte) in bytes.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ":")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
