extension String {
    /// The longest prefix of this string that is at most `limit` UTF-8 bytes, never cutting inside a UTF-8 sequence
    /// (refusal and goodbye reasons are cut to fit the datagram they ride in).
    func prefix(utf8Bytes limit: Int) -> String {
        let bytes = utf8
        guard bytes.count > limit else { return self }
        guard limit > 0 else { return "" }
        var end = bytes.index(bytes.startIndex, offsetBy: limit)
        // Back off continuation bytes (10xxxxxx) to the start of the sequence that straddles the limit.
        while end > bytes.startIndex, bytes[end] & 0xC0 == 0x80 { end = bytes.index(before: end) }
        return String(Substring(bytes[..<end]))
    }
}
