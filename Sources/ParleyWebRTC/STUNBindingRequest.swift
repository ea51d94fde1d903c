/// A STUN Binding request as an ICE connectivity check carries it (RFC 8489 §6, RFC 8445 §7.1.1, RFC 7675 consent
/// checks): the transaction, who is asking (USERNAME), the ICE attributes, and where MESSAGE-INTEGRITY is.
///
/// Parsing checks the structure and FINGERPRINT but not MESSAGE-INTEGRITY, which needs the key the USERNAME
/// selects: call `hasValidIntegrity(key:in:)` with the same bytes before acting on anything here. When an attribute
/// appears twice, the first counts (RFC 8489 §14). A comprehension-required attribute the parser does not know
/// throws `unknown_stun_attribute`: a full agent would answer 420, the relay answers nothing. Only FINGERPRINT may
/// follow MESSAGE-INTEGRITY and nothing may follow FINGERPRINT: where RFC 8489 §14.5 says to ignore such
/// attributes, the parser throws `bad_stun`.
public struct STUNBindingRequest: Equatable, Sendable {
    /// The 12-byte transaction ID, echoed in the response.
    public var transactionID: [UInt8]
    /// USERNAME: for ICE, `<receiver's ufrag>:<sender's ufrag>` (RFC 8445 §7.2.2).
    public var username: String?
    /// PRIORITY of the peer-reflexive candidate the check would create.
    public var priority: UInt32?
    /// USE-CANDIDATE: the controlling agent nominates this pair.
    public var useCandidate: Bool
    /// ICE-CONTROLLING's tie-breaker.
    public var iceControlling: UInt64?
    /// ICE-CONTROLLED's tie-breaker.
    public var iceControlled: UInt64?
    /// Offset of the MESSAGE-INTEGRITY attribute (its type field) within the message, if present.
    public var messageIntegrityOffset: Int?
    /// True when FINGERPRINT is present; a FINGERPRINT that does not match throws instead.
    public var hasFingerprint: Bool

    /// Parses a Binding request (type 0x0001). Throws `bad_stun` for a malformed message, `not_binding_request`
    /// for any other type, `bad_stun_fingerprint` for a wrong FINGERPRINT, `unknown_stun_attribute` for an unknown
    /// comprehension-required attribute.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(WebRTCError) {
        let type = try STUNAttributeWalk.messageType(of: bytes)
        guard type == STUNLayout.bindingRequest else {
            throw WebRTCError("not_binding_request", "STUN message type \(STUNLayout.hex(type)) is not a Binding request")
        }
        transactionID = Array(bytes[8..<STUN.headerSize])
        var username: String?
        var priority: UInt32?
        var useCandidate = false
        var iceControlling: UInt64?
        var iceControlled: UInt64?
        let trailer = try STUNAttributeWalk.walk(bytes) { (type, offset, length) throws(WebRTCError) in
            func expectLength(_ expected: Int, _ name: String) throws(WebRTCError) {
                guard length == expected else {
                    throw WebRTCError("bad_stun", "STUN \(name) is \(length) bytes, not \(expected)")
                }
            }
            switch type {
            case STUNLayout.username:
                guard length <= STUNLayout.maxUsernameSize else {
                    throw WebRTCError("bad_stun", "STUN USERNAME is \(length) bytes, more than 513")
                }
                guard let text = String(validating: bytes[offset..<(offset + length)], as: UTF8.self) else {
                    throw WebRTCError("bad_stun", "STUN USERNAME is not UTF-8")
                }
                if username == nil { username = text }
            case STUNLayout.priority:
                try expectLength(4, "PRIORITY")
                if priority == nil { priority = bytes.stunUInt32(at: offset) }
            case STUNLayout.useCandidate:
                try expectLength(0, "USE-CANDIDATE")
                useCandidate = true
            case STUNLayout.iceControlling:
                try expectLength(8, "ICE-CONTROLLING")
                if iceControlling == nil { iceControlling = bytes.stunUInt64(at: offset) }
            case STUNLayout.iceControlled:
                try expectLength(8, "ICE-CONTROLLED")
                if iceControlled == nil { iceControlled = bytes.stunUInt64(at: offset) }
            case ..<STUNLayout.firstComprehensionOptional:
                throw STUNAttributeWalk.unknownAttribute(type)
            default:
                break // comprehension-optional: SOFTWARE, GOOG-NETWORK-INFO, …
            }
        }
        self.username = username
        self.priority = priority
        self.useCandidate = useCandidate
        self.iceControlling = iceControlling
        self.iceControlled = iceControlled
        self.messageIntegrityOffset = trailer.messageIntegrityOffset
        self.hasFingerprint = trailer.hasFingerprint
    }

    /// True when the request has everything RFC 8445 §7.1.1 requires of a connectivity check: USERNAME, PRIORITY,
    /// ICE-CONTROLLING or ICE-CONTROLLED, MESSAGE-INTEGRITY and FINGERPRINT. Such a request is at least 80 bytes, no
    /// smaller than any response `STUNWriter` writes (`maxResponseSize`), so answering only these never amplifies.
    public var isConnectivityCheck: Bool {
        username != nil && priority != nil && (iceControlling != nil || iceControlled != nil)
            && messageIntegrityOffset != nil && hasFingerprint
    }

    /// True when the request carries MESSAGE-INTEGRITY and it is the HMAC-SHA1 under `key` (for ICE, the relay's
    /// ice-pwd as UTF-8) of `bytes`, the buffer this request was parsed from. `bytes` is not modified.
    public func hasValidIntegrity(key: [UInt8], in bytes: UnsafeRawBufferPointer) -> Bool {
        guard let offset = messageIntegrityOffset else { return false }
        return STUNMessageIntegrity.isValid(key: key, attributeOffset: offset, in: bytes)
    }
}
