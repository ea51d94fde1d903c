import CLibre

/// What every SIP request must carry before the gateway acts on it (RFC 3261 §8.1.1, §8.2.2, §16.3). libre decodes a
/// datagram into `sip_msg` but, in Debian's 1.1, passes a request with no Call-ID, no Max-Forwards or a CSeq naming
/// another method on to its listeners, which then answer it as if it were whole (an INVITE without a Call-ID reached
/// the session layer and was answered 482, one without Max-Forwards 488). The gateway runs this first and answers:
/// - 400 Bad Request when a header a response or a dialog needs is missing (Via with a branch, From, To, Call-ID,
///   CSeq, Max-Forwards), the CSeq's method is not the request's (libre's newer versions do the same) or
///   Content-Length promises more body than the datagram holds (§18.3);
/// - 483 Too Many Hops when Max-Forwards is 0 (or not a number of 0-255: 400), for anything but OPTIONS;
/// - nothing to an ACK, which is never answered.
/// A datagram libre cannot decode at all has no Via or Call-ID to answer on, and is dropped.
public enum SIPRequestCheck {
    /// The parts of a decoded request the check reads.
    public struct Fields: Sendable, Equatable {
        /// The request line's method.
        public var method: String
        /// The CSeq header's method ("" when the header is missing).
        public var cseqMethod: String
        /// Whether the top Via has a branch parameter.
        public var hasViaBranch: Bool
        /// Whether From and To carry an address.
        public var hasFrom: Bool, hasTo: Bool
        /// Whether there is a Call-ID.
        public var hasCallID: Bool
        /// Max-Forwards as written (nil: missing).
        public var maxForwards: String?
        /// Content-Length as written (nil: missing, which UDP allows), and the bytes after the headers.
        public var contentLength: String?, bodyBytes: Int

        /// Fields as given (tests, the fuzz target).
        public init(method: String, cseqMethod: String, hasViaBranch: Bool, hasFrom: Bool, hasTo: Bool,
                    hasCallID: Bool, maxForwards: String?, contentLength: String? = nil, bodyBytes: Int = 0) {
            self.method = method
            self.cseqMethod = cseqMethod
            self.hasViaBranch = hasViaBranch
            self.hasFrom = hasFrom
            self.hasTo = hasTo
            self.hasCallID = hasCallID
            self.maxForwards = maxForwards
            self.contentLength = contentLength
            self.bodyBytes = bodyBytes
        }

        /// The fields of a request libre decoded.
        public init(_ msg: UnsafePointer<sip_msg>) {
            func text(_ value: pl) -> String? {
                guard let p = value.p, value.l > 0 else { return nil }
                return String(decoding: UnsafeRawBufferPointer(start: p, count: value.l), as: UTF8.self)
            }
            let m = msg.pointee
            self.init(method: text(m.met) ?? "", cseqMethod: text(m.cseq.met) ?? "",
                      hasViaBranch: text(m.via.branch) != nil, hasFrom: text(m.from.auri) != nil,
                      hasTo: text(m.to.auri) != nil, hasCallID: text(m.callid) != nil, maxForwards: text(m.maxfwd),
                      contentLength: text(m.clen), bodyBytes: m.mb.map { mbuf_get_left($0) } ?? 0)
        }
    }

    /// What to do with a request.
    public enum Verdict: Sendable, Equatable {
        /// Whole: on to the registrar and the sessions.
        case pass
        /// Answer with this status and reason, and go no further.
        case answer(UInt16, String, why: String)
        /// Neither act on it nor answer it (a malformed ACK).
        case drop(why: String)
    }

    /// The verdict on `fields`.
    public static func judge(_ fields: Fields) -> Verdict {
        var missing: [String] = []
        if !fields.hasViaBranch { missing.append("Via branch") }
        if !fields.hasFrom { missing.append("From") }
        if !fields.hasTo { missing.append("To") }
        if !fields.hasCallID { missing.append("Call-ID") }
        if fields.cseqMethod.isEmpty { missing.append("CSeq") }
        if fields.maxForwards == nil { missing.append("Max-Forwards") }
        let hops = fields.maxForwards.flatMap { UInt8($0) }  // libre hands the value without its spaces
        var why: String?
        if !missing.isEmpty {
            why = "no " + missing.joined(separator: ", ")
        } else if fields.cseqMethod.uppercased() != fields.method.uppercased() {
            why = "CSeq method \(fields.cseqMethod.prefix(32)) in a \(fields.method.prefix(32))"
        } else if hops == nil {
            why = "Max-Forwards not a number of 0-255"
        } else if let length = fields.contentLength, Int(length).map({ $0 < 0 || $0 > fields.bodyBytes }) ?? true {
            why = "Content-Length \(length.prefix(16)) beyond the \(fields.bodyBytes) bytes of body"
        }
        if let why {
            return fields.method == "ACK" ? .drop(why: why) : .answer(400, "Bad Request", why: why)
        }
        if hops == 0, fields.method != "OPTIONS", fields.method != "ACK" {
            return .answer(483, "Too Many Hops", why: "Max-Forwards 0")
        }
        return .pass
    }
}

