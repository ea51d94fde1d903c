import ParleyAuth
import Testing

/// `Crypto.sha256` and `Crypto.hex` against FIPS 180-2's examples (what attachments' blobs are named by).
@Suite("SHA-256 through libsodium, and lower-case hex")
struct SHA256Tests {
    @Test("FIPS 180-2 vectors: empty, \"abc\", the 448-bit message", arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func vectors(message: String, digest: String) {
        let hash = Crypto.sha256(Array(message.utf8))
        #expect(hash.count == Crypto.sha256Length)
        #expect(Crypto.hex(hash) == digest)
    }

    @Test("hex: two lower-case digits a byte")
    func hex() {
        #expect(Crypto.hex([]) == "")
        #expect(Crypto.hex([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
    }
}
