/// The proof a member sends to resume its session from a new address:
/// `HMAC-SHA-256(session secret, "parley-resume" ‖ connection id (4, big-endian) ‖ timestamp ms (8, big-endian))`.
public enum ResumeProof {
    /// Computes the proof.
    public static func make(secret: [UInt8], connectionID: UInt32, timestamp: UInt64) -> [UInt8] {
        var message = Array("parley-resume".utf8)
        for shift in stride(from: 24, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: connectionID >> UInt32(shift))) }
        for shift in stride(from: 56, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: timestamp >> UInt64(shift))) }
        return Crypto.hmacSHA256(key: secret, message: message)
    }

    /// Checks a proof in constant time.
    public static func verify(_ proof: [UInt8], secret: [UInt8], connectionID: UInt32, timestamp: UInt64) -> Bool {
        Crypto.constantTimeEqual(proof, make(secret: secret, connectionID: connectionID, timestamp: timestamp))
    }

    /// The answer to a path challenge: HMAC-SHA-256(session secret, "parley-path" ‖ connection id ‖ challenge).
    public static func pathResponse(secret: [UInt8], connectionID: UInt32, challenge: [UInt8]) -> [UInt8] {
        var message = Array("parley-path".utf8)
        for shift in stride(from: 24, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: connectionID >> UInt32(shift))) }
        message += challenge
        return Crypto.hmacSHA256(key: secret, message: message)
    }

    /// Checks a path response's proof in constant time.
    public static func verifyPathResponse(_ proof: [UInt8], secret: [UInt8], connectionID: UInt32, challenge: [UInt8]) -> Bool {
        Crypto.constantTimeEqual(proof, pathResponse(secret: secret, connectionID: connectionID, challenge: challenge))
    }
}
