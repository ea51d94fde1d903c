import COpenSSL

/// OpenSSL's per-thread error queue read as one line for a `WebRTCError` reason.
enum OpenSSLErrors {
    /// What `drain()` says of an empty queue.
    static let empty = "no OpenSSL error"

    /// Empties the calling thread's error queue and describes its first entry (`library: reason`), with how many
    /// more there were; `empty` when it was empty.
    static func drain() -> String {
        var first: String?
        var more = 0
        while case let code = ERR_get_error(), code != 0 {
            if first == nil {
                let library = ERR_lib_error_string(code).map { String(cString: $0) } ?? "lib \(ERR_GET_LIB(code))"
                let reason = ERR_reason_error_string(code).map { String(cString: $0) } ?? "reason \(ERR_GET_REASON(code))"
                first = "\(library): \(reason)"
            } else {
                more += 1
            }
        }
        guard let first else { return empty }
        return more == 0 ? first : "\(first) (+\(more) more)"
    }
}
