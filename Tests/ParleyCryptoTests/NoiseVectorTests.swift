import ParleyCrypto
import Testing

/// One published Noise test vector (the JSON format shared by cacophony, snow and noise-c), as hex strings.
struct NoiseVector: Sendable, CustomTestStringConvertible {
    let pattern: HandshakePattern
    let prologue: String
    let initiatorStatic: String?
    let initiatorEphemeral: String
    let responderStatic: String
    let responderEphemeral: String
    let handshakeHash: String?
    let messages: [(payload: String, ciphertext: String)]

    var testDescription: String { "\(pattern.protocolName), prologue \(prologue.prefix(16))…" }
}

/// Published vectors for the two patterns Parley builds, byte for byte. Messages alternate initiator → responder,
/// responder → initiator; the first two are the handshake, the rest are transport messages (nonces 0, 1, 2 per side).
enum NoiseVectors {
    /// cacophonyNK: from github:mcginty/snow tests/vectors/cacophony.txt (commit 8ac60f51), originally haskell-cryptography/cacophony vectors.
    static let cacophonyNK = NoiseVector(
        pattern: .nk,
        prologue: "4a6f686e2047616c74",
        initiatorStatic: nil,
        initiatorEphemeral: "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a",
        responderStatic: "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893",
        responderEphemeral: "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b",
        handshakeHash: "f87aa4eb6416e5b0d2b6e6f0b7bc41f3c5986a5d32d55c08d67cbd412f3ec2fa04d8e358ab95b3bbfab054a140a98eccf4284bb6309b600981d451ecac484932",
        messages: [
            (payload: "4c756477696720766f6e204d69736573",
             ciphertext: "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944f3041e39b0c8ba56008f2d1183fea6ac83564ead0267b0842ec4c521ed1e1407"),
            (payload: "4d757272617920526f746862617264",
             ciphertext: "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f1448088432281dcc1835131f305dca14525e15e27d1f32294aa835e40fc18be480c1db9"),
            (payload: "462e20412e20486179656b",
             ciphertext: "357e24e9f28ba22080666f7efacc01b2a0a4e358e742aeeff2aaf5"),
            (payload: "4361726c204d656e676572",
             ciphertext: "8b23b34ff3169de06a39551e969ca7876cc5122a4acff74bf2ec29"),
            (payload: "4a65616e2d426170746973746520536179",
             ciphertext: "5c104779b6f36e59fca73ed94b0ae092eae1d76dd109caf5060aaaedba385d7076"),
            (payload: "457567656e2042f6686d20766f6e2042617765726b",
             ciphertext: "34ae0518d0cd3aa641ed372ea94935ceecd87f8c4b422ce21a33d3f6f5493891e3e915d83f"),
        ])

    /// snowNK: from github:mcginty/snow tests/vectors/snow.txt (commit 8ac60f51).
    static let snowNK = NoiseVector(
        pattern: .nk,
        prologue: "5468657265206973206e6f20726967687420616e642077726f6e672e2054686572652773206f6e6c792066756e20616e6420626f72696e672e",
        initiatorStatic: nil,
        initiatorEphemeral: "151f660015d45eea5f28ee50258f33373c75906fb58e4ab59ed52dab535161cb",
        responderStatic: "0c0cac2c24c7ac76ab07049932d34f3aac2f791fd99ff957e81f685a7756138a",
        responderEphemeral: "dafad8e4c6404375195a18b8f7cd7feb985220f2f2ecc307b381207193298c3b",
        handshakeHash: nil,
        messages: [
            (payload: "a3a6441fd70fea11009bf133cd42402e358ab1024ed36f5199fef05203d6cac6",
             ciphertext: "d956ead53c15c6e114e9ee181ed233e2287ef647b65f1bdf1c455760ac7f2a7ce376799bd5adb227eb614be9db1d210bbe413a371e18ecfeb45bf4ca5eeb35a9668e8423875e16144100af1f849b5986"),
            (payload: "dba779f15f86d73d3c10aacecabd0dd1869308dc7f38f8c7f95274844e34618b",
             ciphertext: "77b149decc3c2339f0794c856db88c7de6ee665b923a43bad41bf5b54d80c51d26cc588eeb0d1a50a055c305f47bc0dde983039526354548b0abb04c2d3c1e5e7cc8d9cef41d0d4b7eb4b3cbfdd6a178"),
            (payload: "a40e189598732182bd93f25667217b0897cdf1be327f16236046aae1b1a05d02",
             ciphertext: "6595aea3a643319bb6f139f122d8fa32d7e1165721f5af678f51cf4d104c5b03aee688efa0ab2aa0f6e6309565653f4a"),
            (payload: "f825cd333af9f37889ecdcbc2f2f4862c8e117a058420074072f0488a90a6443",
             ciphertext: "9b8d0a0cbad3638d2cbef5bd69d23661e16b0c8692b968190052ac13751f17ac080e01d45668e04a365adaee3f9303d6"),
        ])

    /// cacophonyIK: from github:mcginty/snow tests/vectors/cacophony.txt (commit 8ac60f51), originally haskell-cryptography/cacophony vectors.
    static let cacophonyIK = NoiseVector(
        pattern: .ik,
        prologue: "4a6f686e2047616c74",
        initiatorStatic: "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1",
        initiatorEphemeral: "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a",
        responderStatic: "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893",
        responderEphemeral: "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b",
        handshakeHash: "1c8fa891cb414fedba6daa7c6f4ae0a6d98e5f9768cc9cecd27e805614943ee9c8a1b27fbfb76dc197255c8aa69f6b4285c423840b8bedf45e652ca64f797d81",
        messages: [
            (payload: "4c756477696720766f6e204d69736573",
             ciphertext: "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd2f88f1db7e1fb0e99c64419097af91cee64e470f4b6fcd9298ce0b56fe20f86e13bf70439c538e3602a7127af71a29cc"),
            (payload: "4d757272617920526f746862617264",
             ciphertext: "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f1448088439f069b267a06b3de3ecb1043bcb098e9af91d9c64748d998c7b47890871571"),
            (payload: "462e20412e20486179656b",
             ciphertext: "cd54383060e7a28434cca27fb1cc524cfbabeb18181589df219d07"),
            (payload: "4361726c204d656e676572",
             ciphertext: "a856d3bf0246bfc476c655009cd1ed677b8dcc5b349ae8ef2a05f2"),
            (payload: "4a65616e2d426170746973746520536179",
             ciphertext: "49063084b2c51f098337cb8a13739ac848f907e67cfb2cc8a8b60586467aa02fc7"),
            (payload: "457567656e2042f6686d20766f6e2042617765726b",
             ciphertext: "8b9709d23b47e4639df7678d7a21741eba4ef1e9c60383001c7435549c20f9d56f30e935d3"),
        ])

    /// snowIK: from github:mcginty/snow tests/vectors/snow.txt (commit 8ac60f51).
    static let snowIK = NoiseVector(
        pattern: .ik,
        prologue: "5468657265206973206e6f20726967687420616e642077726f6e672e2054686572652773206f6e6c792066756e20616e6420626f72696e672e",
        initiatorStatic: "7d96e7fbefd508f6d553010ef8b53b9800f30bdd1bc82d141c543cc4afe31bde",
        initiatorEphemeral: "3fa848b150e958dad41a3e1e455c65c46b773d806a55f4abdcae3f5e3f80d816",
        responderStatic: "f192f565f752e8e706d20bd2a71b22d94b804bfeb499ac84391f1af846d1824d",
        responderEphemeral: "3092d9e2e44264afea07fd9b43562177e9ae63d65cbdc471d3539247e2ba1a36",
        handshakeHash: nil,
        messages: [
            (payload: "eab1b0a96295a7f0b29f013bf2baa6d74ab79b2b2f69b79764eb97684ca17e5d",
             ciphertext: "4b42c759ee133dc6a49aa1b19fc1727ca3d3876d6ed5479b60fe2963fede0f4ff9f68f1540f591b16150d98b3f65371da84c2dcfbf18f02295edcd20fdcf315c83529bc394387fc22bfc8583e23514c28884729838efe481016f828fefca4f53c4e61c7ed5a7b297044e11b90a28d2e264ac2335e254c7b636d1d0406aea1e3e"),
            (payload: "1a1d45c87a116c31f9704d9c599f833e65dbe1fc511a50fc85e07b440806430b",
             ciphertext: "058e04eada2f87f02ffb22ec049d3d629008eb672976078b61222af7822e9c19b04dc83d279b6d418149e3ba99ff887c64a2f9da7a1ad2c83bbea46759a503933f9cfc8c06dbc2b9170a0fb6a5a28740"),
            (payload: "752ce6ebed958e84d2e8ffa89ca929e500bc987d3ba01196f850fe73d7320822",
             ciphertext: "e4a719610c329661dcc3084484c92025c7fadff6910c6d9e8dcdae29d76cd2d33c74218a3588732db968a282ba4689ec"),
            (payload: "f7496b1a99db7ba96ce16c642662e966b8323aca4e7c8e2ed51d3e764c05a363",
             ciphertext: "8cdb272f66c39e16182c1b68a45052f97264ca6a337e338dbdd1121005fb268b637d94ecc94ded7352c1e22bf7d2a32d"),
        ])
    /// Every vector above.
    static let all = [cacophonyNK, snowNK, cacophonyIK, snowIK]
}

@Suite("Noise NK and IK (25519, ChaChaPoly, BLAKE2b) against published vectors")
struct NoiseVectorTests {
    static let bytes = X25519Tests.bytes

    @Test("handshake messages, handshake hash and transport messages match byte for byte", arguments: NoiseVectors.all)
    func vector(_ v: NoiseVector) throws {
        let responderStatic = try #require(X25519KeyPair(secretKey: Self.bytes(v.responderStatic)))
        var initiator = try HandshakeState(
            pattern: v.pattern, role: .initiator, prologue: Self.bytes(v.prologue),
            localStatic: v.initiatorStatic.map { X25519KeyPair(secretKey: Self.bytes($0))! },
            remoteStatic: responderStatic.publicKey,
            localEphemeral: X25519KeyPair(secretKey: Self.bytes(v.initiatorEphemeral)))
        var responder = try HandshakeState(
            pattern: v.pattern, role: .responder, prologue: Self.bytes(v.prologue), localStatic: responderStatic,
            localEphemeral: X25519KeyPair(secretKey: Self.bytes(v.responderEphemeral)))

        // -> e, es (, s, ss)
        let first = try initiator.writeMessage(payload: Self.bytes(v.messages[0].payload))
        #expect(first == Self.bytes(v.messages[0].ciphertext))
        #expect(try responder.readMessage(first) == Self.bytes(v.messages[0].payload))
        if let initiatorStatic = v.initiatorStatic {
            #expect(responder.remoteStatic == X25519KeyPair(secretKey: Self.bytes(initiatorStatic))!.publicKey)
        }
        // <- e, ee (, se)
        let second = try responder.writeMessage(payload: Self.bytes(v.messages[1].payload))
        #expect(second == Self.bytes(v.messages[1].ciphertext))
        #expect(try initiator.readMessage(second) == Self.bytes(v.messages[1].payload))

        #expect(initiator.isComplete && responder.isComplete)
        #expect(initiator.handshakeHash == responder.handshakeHash)
        if let hash = v.handshakeHash { #expect(initiator.handshakeHash == Self.bytes(hash)) }

        // Transport: Noise's own messages with implicit nonces, alternating directions.
        var (initiatorSend, initiatorReceive) = try initiator.split()
        var (responderSend, responderReceive) = try responder.split()
        for (index, message) in v.messages.enumerated().dropFirst(2) {
            let payload = Self.bytes(message.payload), expected = Self.bytes(message.ciphertext)
            if index % 2 == 0 {
                #expect(try initiatorSend.encrypt(payload, associatedData: []) == expected)
                #expect(try responderReceive.decrypt(expected, associatedData: []) == payload)
            } else {
                #expect(try responderSend.encrypt(payload, associatedData: []) == expected)
                #expect(try initiatorReceive.decrypt(expected, associatedData: []) == payload)
            }
        }
    }

    @Test("a SealedChannel datagram is the counter followed by the Noise transport message for that nonce",
          arguments: NoiseVectors.all)
    func sealedChannelBodyIsTheTransportMessage(_ v: NoiseVector) throws {
        let responderStatic = try #require(X25519KeyPair(secretKey: Self.bytes(v.responderStatic)))
        var initiator = try HandshakeState(
            pattern: v.pattern, role: .initiator, prologue: Self.bytes(v.prologue),
            localStatic: v.initiatorStatic.map { X25519KeyPair(secretKey: Self.bytes($0))! },
            remoteStatic: responderStatic.publicKey,
            localEphemeral: X25519KeyPair(secretKey: Self.bytes(v.initiatorEphemeral)))
        var responder = try HandshakeState(
            pattern: v.pattern, role: .responder, prologue: Self.bytes(v.prologue), localStatic: responderStatic,
            localEphemeral: X25519KeyPair(secretKey: Self.bytes(v.responderEphemeral)))
        _ = try responder.readMessage(try initiator.writeMessage(payload: Self.bytes(v.messages[0].payload)))
        _ = try initiator.readMessage(try responder.writeMessage(payload: Self.bytes(v.messages[1].payload)))
        let keys = try initiator.split(), peerKeys = try responder.split()
        let client = SealedChannel(sending: keys.sending, receiving: keys.receiving)
        let relay = SealedChannel(sending: peerKeys.sending, receiving: peerKeys.receiving)

        // Initiator's messages 2 and 4 use nonces 0 and 1.
        for (counter, index) in [(UInt64(0), 2), (1, 4)] where index < v.messages.count {
            let payload = Self.bytes(v.messages[index].payload)
            var datagram = [UInt8](repeating: 0, count: payload.count + SealedChannel.overhead)
            #expect(try client.seal(payload, into: &datagram) == datagram.count)
            #expect(Array(datagram.prefix(8)) == (0..<8).map { UInt8(truncatingIfNeeded: counter >> (8 * UInt64($0))) })
            #expect(Array(datagram.dropFirst(8)) == Self.bytes(v.messages[index].ciphertext))
            var plaintext = [UInt8](repeating: 0, count: payload.count)
            #expect(try relay.open(datagram, into: &plaintext) == payload.count)
            #expect(plaintext == payload)
        }
    }
}
