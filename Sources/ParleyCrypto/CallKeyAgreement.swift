import CSodium

/// The end-to-end key of a one-to-one call: each side draws an ephemeral X25519 key pair for the call and sends its
/// public half (the *share*, 32 bytes) through the relay as an opaque signalling field; the relay passes it on and
/// never learns the Diffie-Hellman result.
///
/// ```
/// transcript = "parley-call-e2ee-v1" ‖ lp(caller identity) ‖ lp(callee identity) ‖ lp(call room) ‖ caller share ‖ callee share
///              (lp = 2-byte big-endian length, then the UTF-8 bytes; shares in this fixed order whichever side computes)
/// h          = BLAKE2b-512(transcript)
/// k1, k2     = HKDF-BLAKE2b(chaining key h, X25519(own secret, peer share))   (Noise §4.3, two outputs)
/// caller → callee key = k1[0..<32] (key id 0),  callee → caller key = k2[0..<32] (key id 1)
/// safety code = six groups of five digits from BLAKE2b-512("parley-call-safety-v1" ‖ h)
/// ```
///
/// The call is named by its room (`call-…`, chosen by the relay per call and the same on both sides; the call ids
/// differ between the two sides). The safety code depends only on public values, so both sides compute the same one
/// exactly when each received the other's share unchanged. A relay that substitutes its own shares (a
/// man-in-the-middle) gives the two sides different transcripts; to make their codes agree it must find a share
/// whose code matches a code already fixed — a second preimage on the code's ~99.7 bits (10^30), far beyond any
/// attacker. Comparing only some of the groups gives 16.6 bits per group.
public struct CallKeyAgreement {
    /// Which end of the call this side is.
    public enum Role: Sendable, Equatable {
        case caller, callee
    }

    /// The key id of frames the caller seals; the callee's use `calleeKeyID`.
    public static let callerKeyID: UInt8 = 0
    /// The key id of frames the callee seals.
    public static let calleeKeyID: UInt8 = 1
    /// Length of a share (an X25519 public key).
    public static let shareLength = X25519KeyPair.keyLength

    /// This side's role.
    public let role: Role
    private let keyPair: X25519KeyPair

    /// A fresh ephemeral key pair for one call.
    public init(role: Role) { self.init(role: role, keyPair: X25519KeyPair()) }

    /// An agreement over a given key pair (tests pin vectors with fixed secrets).
    public init(role: Role, keyPair: X25519KeyPair) {
        self.role = role
        self.keyPair = keyPair
    }

    /// The share to send the other side.
    public var share: [UInt8] { keyPair.publicKey }

    /// Agrees the call's keys with the peer's share for the call of `callerIdentity` to `calleeIdentity` in `room`.
    /// Throws `.invalidShare` when the share is not 32 bytes or is a low-order point (the result would be all zeros).
    public func agree(peerShare: [UInt8], callerIdentity: String, calleeIdentity: String, room: String) throws(CallKeyError) -> CallKeys {
        guard peerShare.count == Self.shareLength, var shared = keyPair.sharedSecret(with: peerShare) else { throw .invalidShare }
        defer { sodium_memzero(&shared, shared.count) }
        let (callerShare, calleeShare) = role == .caller ? (share, peerShare) : (peerShare, share)
        let h = NoiseHash.hash(Array("parley-call-e2ee-v1".utf8), Self.lengthPrefixed(callerIdentity),
                               Self.lengthPrefixed(calleeIdentity), Self.lengthPrefixed(room), callerShare, calleeShare)
        var outputs = NoiseHash.hkdf(chainingKey: h, inputKeyMaterial: shared, outputs: 2)
        defer { for i in outputs.indices { sodium_memzero(&outputs[i], outputs[i].count) } }
        let callerToCallee = Array(outputs[0].prefix(FrameCipher.keyLength))
        let calleeToCaller = Array(outputs[1].prefix(FrameCipher.keyLength))
        let code = SafetyCode(transcriptHash: h)
        return role == .caller
            ? CallKeys(sendKey: callerToCallee, sendKeyID: Self.callerKeyID, receiveKey: calleeToCaller, receiveKeyID: Self.calleeKeyID, safetyCode: code)
            : CallKeys(sendKey: calleeToCaller, sendKeyID: Self.calleeKeyID, receiveKey: callerToCallee, receiveKeyID: Self.callerKeyID, safetyCode: code)
    }

    private static func lengthPrefixed(_ s: String) -> [UInt8] {
        let bytes = Array(s.utf8.prefix(Int(UInt16.max)))
        return [UInt8(bytes.count >> 8), UInt8(truncatingIfNeeded: bytes.count)] + bytes
    }
}

/// What a call's key agreement yields for one side: its two frame keys and the safety code.
public struct CallKeys {
    /// The key this side seals with (32 bytes).
    public let sendKey: [UInt8]
    /// The key id this side's frames carry.
    public let sendKeyID: UInt8
    /// The key the peer seals with.
    public let receiveKey: [UInt8]
    /// The key id the peer's frames carry.
    public let receiveKeyID: UInt8
    /// The code both people compare by voice.
    public let safetyCode: SafetyCode

    /// A frame cipher over these keys (the arrays here are copies; the cipher wipes its own on release).
    public func frameCipher() -> FrameCipher {
        FrameCipher(sendKey: sendKey, sendKeyID: sendKeyID, receiveKey: receiveKey, receiveKeyID: receiveKeyID)!
    }
}

/// The short code two people read to each other to check that no one sits between them: six groups of five decimal
/// digits (10^30 values, ~99.7 bits), each group from 5 bytes of `BLAKE2b-512("parley-call-safety-v1" ‖ h)` reduced
/// mod 100,000 (bias below 10^-7).
public struct SafetyCode: Equatable, Sendable, CustomStringConvertible {
    /// Number of groups.
    public static let groupCount = 6
    /// The groups, each 0…99,999.
    public let groups: [UInt32]

    /// The code of a call's transcript hash.
    init(transcriptHash h: [UInt8]) {
        let digest = NoiseHash.hash(Array("parley-call-safety-v1".utf8), h)
        groups = (0..<Self.groupCount).map { g in
            var v: UInt64 = 0
            for i in 0..<5 { v = v << 8 | UInt64(digest[g * 5 + i]) }
            return UInt32(v % 100_000)
        }
    }

    /// "12345 67890 …": each group zero-padded to five digits.
    public var description: String {
        groups.map { g in
            let s = String(g)
            return String(repeating: "0", count: 5 - s.count) + s
        }.joined(separator: " ")
    }
}

/// Why a call key could not be agreed.
public enum CallKeyError: Error, Equatable, Sendable {
    /// The peer's share is not 32 bytes or is a low-order X25519 point.
    case invalidShare
}
