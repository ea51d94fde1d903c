#!/usr/bin/env python3
"""Writes the seed corpus for the libFuzzer targets (run by hand once; the outputs are committed).

    python3 Tests/Fuzz/corpus/make_seeds.py

Each directory gets a handful of small valid and near-valid inputs, named after what they hold. The SDP offers and the
RFC 5769 STUN vectors are read from the test files that hold them (Tests/ParleyWebRTCTests/SDPTestOffers.swift,
STUNTestSupport.swift); `found-…` seeds are inputs a fuzz run crashed on, each kept refused by a unit test.
"""
import base64, hashlib, hmac, json, os, re, struct, zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def write(kind, name, data):
    d = os.path.join(HERE, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def swift_declaration(path, name):
    """The text of `let NAME ... = ...` in a Swift file of the repository, up to the next top-level declaration."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    match = re.search(r"^let " + re.escape(name) + r"\b.*?(?=^(?:let|func|///|//) |\Z)", text, re.S | re.M)
    assert match, f"{name} not found in {path}"
    return match.group(0)


def swift_bytes(path, name):
    """A `[UInt8]` literal of a test file (hex bytes, comments ignored)."""
    body = re.sub(r"//[^\n]*", "", swift_declaration(path, name))
    return bytes(int(h, 16) for h in re.findall(r"0x([0-9a-fA-F]{2})\b", body))


def swift_strings(path, name):
    """The string literals of a `[String]` declaration of a test file, in order (up to a `.joined(separator:)`)."""
    body = swift_declaration(path, name).split(".joined(")[0]
    return [json.loads('"' + s + '"') for s in re.findall(r'"((?:[^"\\]|\\.)*)"', body)]


# ---------------------------------------------------------------- RTP (RFC 3550, RFC 8285)
def rtp(pt=111, seq=1000, ts=48000, ssrc=0x11223344, marker=False, csrcs=(), ext=None, payload=b"\xfc" * 20, pad=0):
    b0 = 0x80 | (0x20 if pad else 0) | (0x10 if ext is not None else 0) | len(csrcs)
    out = struct.pack("!BBHII", b0, (0x80 if marker else 0) | pt, seq, ts, ssrc)
    out += b"".join(struct.pack("!I", c) for c in csrcs)
    if ext is not None:
        profile, data = ext
        data += b"\x00" * (-len(data) % 4)
        out += struct.pack("!HH", profile, len(data) // 4) + data
    out += payload
    if pad:
        out += b"\x00" * (pad - 1) + bytes([pad])
    return out


write("rtp", "plain", rtp())
# One-byte form: id 1 audio level (V set, -5 dBov), id 3 with 2 bytes of data.
write("rtp", "onebyte-audiolevel", rtp(ext=(0xBEDE, b"\x10\x85\x32\xaa\xbb"), marker=True))
# Two-byte form: id 1 len 1 (level), id 2 len 0, padding, id 200 len 3.
write("rtp", "twobyte-ext", rtp(ext=(0x1000, b"\x01\x01\x8a\x02\x00\x00\xc8\x03abc")))
# Two CSRCs with an RFC 6465 mixer-to-client level element (id 2, one byte per CSRC) and a client level (id 1).
write("rtp", "csrcs-levels", rtp(csrcs=(0xAAAA0001, 0xBBBB0002), ext=(0xBEDE, b"\x10\x90\x21\x05\x7f")))
write("rtp", "padding", rtp(pad=4, payload=b"\x01\x02\x03"))
write("rtp", "everything", rtp(csrcs=(1, 2, 3), ext=(0xBEDE, b"\x10\x01\x00\x21\x02\x03\x04\xf0"), pad=3, marker=True))
write("rtp", "opaque-profile", rtp(ext=(0x1234, b"\xde\xad\xbe\xef")))
# Near-valid: extension length past the end, element past its block, padding count 0, too many CSRCs for the size.
write("rtp", "bad-ext-length", rtp(ext=(0xBEDE, b"\x10\x01\x00\x00"))[:-22] + b"\x00")
write("rtp", "bad-element", rtp(ext=(0xBEDE, b"\x1f\x01\x00\x00"), payload=b""))
write("rtp", "bad-padding", rtp(pad=1)[:-1] + b"\x00")
write("rtp", "truncated-csrcs", bytes([0x8f]) + rtp()[1:16])

# ---------------------------------------------------------------- RTCP (RFC 3550, RFC 4585)
def rtcp(count, pt, body, pad=0):
    body += b"\x00" * (-len(body) % 4)
    if pad:
        body += b"\x00" * (pad - 1) + bytes([pad])
    return struct.pack("!BBH", 0x80 | (0x20 if pad else 0) | count, pt, (len(body) + 4) // 4 - 1) + body


def block(ssrc=0x55667788, fraction=12, lost=-3, highest=0x0001_0010, jitter=30, lsr=0x1234_5678, dlsr=0x10000):
    return struct.pack("!IIIIII", ssrc, (fraction << 24) | (lost & 0xFFFFFF), highest, jitter, lsr, dlsr)


sender_info = struct.pack("!IQIII", 0x11223344, 0xE8D4A51000000000, 48000, 100, 16000)
sr = rtcp(1, 200, sender_info + block())
rr = rtcp(2, 201, struct.pack("!I", 0x99AABBCC) + block() + block(ssrc=1, lost=5))
cname = b"alice@example"
sdes = rtcp(1, 202, struct.pack("!I", 0x11223344) + bytes([1, len(cname)]) + cname + b"\x00")
nack = rtcp(1, 205, struct.pack("!IIHHHH", 0x99AABBCC, 0x11223344, 1000, 0x0005, 65535, 0x0001))
bye = rtcp(1, 203, struct.pack("!I", 0x11223344) + bytes([7]) + b"leaving")
write("rtcp", "sr", sr)
write("rtcp", "rr", rr)
write("rtcp", "sr-sdes", sr + sdes)
write("rtcp", "rr-nack", rtcp(0, 201, struct.pack("!I", 0x99AABBCC)) + nack)
write("rtcp", "nack", nack)
write("rtcp", "bye", bye)
write("rtcp", "bye-noreason", rtcp(2, 203, struct.pack("!II", 1, 2)))
write("rtcp", "rr-padded-bye", rtcp(1, 201, struct.pack("!I", 7) + block(), pad=4) + bye)
# Near-valid: length past the end, trailing bytes, NACK without entries, report count larger than the body.
write("rtcp", "bad-length", sr[:-8])
write("rtcp", "trailing", sr + b"\x80\xc8")
write("rtcp", "nack-empty", rtcp(1, 205, struct.pack("!II", 1, 2)))
write("rtcp", "rr-short", rtcp(3, 201, struct.pack("!I", 7) + block()))

# ---------------------------------------------------------------- Signalling (Sources/ParleyWire/SignallingParse.swift)
def tlv(tag, value):
    return struct.pack("!BH", tag, len(value)) + value


def u8(tag, v): return tlv(tag, struct.pack("!B", v))
def u16(tag, v): return tlv(tag, struct.pack("!H", v))
def u32(tag, v): return tlv(tag, struct.pack("!I", v))
def u64(tag, v): return tlv(tag, struct.pack("!Q", v))


def datagram(mtype, fields, conn=0, seq=0, ack=0):
    return struct.pack("!BBBBIII", 0x50, 1, mtype, 0, conn, seq, ack) + b"".join(fields)


def member(mid, ssrc, flags, identity, name):
    return struct.pack("!IIBB", mid, ssrc, flags, len(identity)) + identity + bytes([len(name)]) + name


TOKEN_T, ROOM, COOKIE, NONCE, FLAGS, KEYSHARE, MEMBERID, SSRC, PORT = 1, 2, 3, 4, 5, 6, 7, 8, 9
SECRET, MODE, IDENTITY, MEMBERCOUNT, KEEPALIVE, TIMEOUT, TIMESTAMP, PROOF, CODE, REASON = range(10, 20)
PAGEINDEX, PAGECOUNT, MEMBER, EVENTKIND, SPEAKER, TO, MESSAGEID, FRAGINDEX, FRAGCOUNT, CHUNK = range(20, 30)
DIRECT, DELIVERED, MUTED = 30, 31, 32
CALLID, ACCEPT, NAME, CALLSTATE, SPEAKERSFROMMEDIA, CHALLENGE = 33, 34, 35, 36, 37, 38
nonce = bytes(range(16))
write("signalling", "join", datagram(0x01, [tlv(TOKEN_T, b"eyJhbGciOiJIUzI1NiJ9.e30.sig"), tlv(ROOM, b"lobby"), tlv(NONCE, nonce)]))
write("signalling", "join-cookie-muted", datagram(0x01, [tlv(TOKEN_T, b"t"), tlv(ROOM, b"lobby"), tlv(COOKIE, b"\xc0" * 24),
                                                         tlv(NONCE, nonce), u8(MUTED, 1), tlv(99, b"unknown tag")]))
write("signalling", "welcome", datagram(0x82, [
    tlv(NONCE, nonce), u32(MEMBERID, 7), u32(SSRC, 0x11223344), u16(PORT, 40000), tlv(SECRET, b"\x5a" * 32),
    tlv(ROOM, b"lobby"), tlv(MODE, b"forward"), tlv(IDENTITY, b"alice"), u32(MEMBERCOUNT, 2), u32(KEEPALIVE, 5000),
    u32(TIMEOUT, 30000), u8(FLAGS, 6)], conn=0xC0FFEE, seq=1))
write("signalling", "memberpage", datagram(0x84, [u16(PAGEINDEX, 0), u16(PAGECOUNT, 1),
                                                  tlv(MEMBER, member(8, 0x55, 6, b"bob", b"Bob")),
                                                  tlv(MEMBER, member(9, 0x66, 7, b"carol", b""))], conn=0xC0FFEE, seq=2, ack=1))
write("signalling", "memberevent", datagram(0x85, [u8(EVENTKIND, 2), tlv(MEMBER, member(8, 0x55, 6, b"bob", b"Bob")),
                                                   tlv(REASON, b"timed out")], conn=0xC0FFEE, seq=3))
write("signalling", "text", datagram(0x87, [u32(MEMBERID, 8), tlv(IDENTITY, b"bob"), u8(DIRECT, 1), u32(MESSAGEID, 42),
                                            u8(FRAGINDEX, 0), u8(FRAGCOUNT, 1), tlv(CHUNK, "héllo".encode())], conn=0xC0FFEE, seq=4))
write("signalling", "sendtext", datagram(0x05, [tlv(TO, b"bob"), u32(MESSAGEID, 42), u8(FRAGINDEX, 1), u8(FRAGCOUNT, 2),
                                                tlv(CHUNK, b"second half")], conn=0xC0FFEE, seq=5))
write("signalling", "speakers", datagram(0x86, [tlv(SPEAKER, struct.pack("!IIB", 8, 0x55, 20)),
                                                tlv(SPEAKER, struct.pack("!IIB", 9, 0x66, 90))], conn=0xC0FFEE, seq=6))
write("signalling", "ping", datagram(0x03, [u64(TIMESTAMP, 123456789)], conn=0xC0FFEE, ack=4))
write("signalling", "resume", datagram(0x06, [u64(TIMESTAMP, 99), tlv(PROOF, b"\x11" * 32)], conn=0xC0FFEE))
write("signalling", "refused", datagram(0x83, [u16(CODE, 13), tlv(REASON, b"bad signature")]))
write("signalling", "goodbye", datagram(0x89, [u16(CODE, 3), tlv(REASON, b"timed out")], conn=0xC0FFEE))
write("signalling", "textstatus", datagram(0x88, [u32(MESSAGEID, 42), u8(DELIVERED, 1)], conn=0xC0FFEE, seq=7))
# Near-valid: reliable join (sequence set), truncated TLV, bad UTF-8 identity, unknown type.
write("signalling", "join-reliable", datagram(0x01, [tlv(TOKEN_T, b"t"), tlv(ROOM, b"r"), tlv(NONCE, nonce)], seq=1))
write("signalling", "truncated-tlv", datagram(0x03, [u64(TIMESTAMP, 1)])[:-3])
write("signalling", "bad-utf8", datagram(0x87, [u32(MEMBERID, 8), tlv(IDENTITY, b"\xff\xfe"), u32(MESSAGEID, 1),
                                                u8(FRAGINDEX, 0), u8(FRAGCOUNT, 1), tlv(CHUNK, b"x")], seq=1))
write("signalling", "unknown-type", datagram(0x42, []))
# Path validation (Sources/ParleyRelayCore/PathChallenge.swift): the relay's challenge to a new address, 16 bytes =
# issued-at (8, Unix ms) + 8 bytes of HMAC; the member's answer from that address, proof = 32-byte HMAC. Both unreliable.
challenge = struct.pack("!Q", 1_800_000_000_000) + bytes(range(0xA0, 0xA8))
write("signalling", "pathchallenge", datagram(0x8E, [tlv(CHALLENGE, challenge)], conn=0xC0FFEE))
write("signalling", "pathresponse", datagram(0x0C, [tlv(CHALLENGE, challenge), tlv(PROOF, b"\x22" * 32)], conn=0xC0FFEE, ack=3))
# Near-valid: no proof, a challenge over 32 bytes, a sequence number on an unreliable message.
write("signalling", "pathresponse-noproof", datagram(0x0C, [tlv(CHALLENGE, challenge)], conn=0xC0FFEE))
write("signalling", "pathchallenge-long", datagram(0x8E, [tlv(CHALLENGE, b"\x01" * 33)], conn=0xC0FFEE))
write("signalling", "pathchallenge-reliable", datagram(0x8E, [tlv(CHALLENGE, challenge)], conn=0xC0FFEE, seq=9))
# The rest of the message types, so every branch of the parser starts from a valid example.
write("signalling", "join-speakers-from-media", datagram(0x01, [tlv(TOKEN_T, b"t"), tlv(ROOM, b"lobby"), tlv(NONCE, nonce),
                                                                u8(SPEAKERSFROMMEDIA, 1)]))
write("signalling", "leave", datagram(0x02, [], conn=0xC0FFEE, seq=8, ack=7))
write("signalling", "setmuted", datagram(0x04, [u8(MUTED, 1)], conn=0xC0FFEE, seq=9))
write("signalling", "ack", datagram(0x07, [], conn=0xC0FFEE, ack=12))
write("signalling", "retry", datagram(0x81, [tlv(COOKIE, b"\xc0" * 20)]))
write("signalling", "pong", datagram(0x8A, [u64(TIMESTAMP, 123456789)], conn=0xC0FFEE))
write("signalling", "resumed", datagram(0x8B, [], conn=0xC0FFEE, seq=10))
write("signalling", "register", datagram(0x08, [tlv(TOKEN_T, b"t"), tlv(COOKIE, b"\xc0" * 20), tlv(NONCE, nonce)]))
write("signalling", "callinvite", datagram(0x09, [u32(CALLID, 0x80000001), tlv(TO, b"bob")], conn=0xC0FFEE, seq=2))
write("signalling", "callanswer", datagram(0x0A, [u32(CALLID, 1), u8(ACCEPT, 1)], conn=0xC0FFEE, seq=3))
write("signalling", "callhangup", datagram(0x0B, [u32(CALLID, 1)], conn=0xC0FFEE, seq=4))
write("signalling", "incomingcall", datagram(0x8C, [u32(CALLID, 1), tlv(IDENTITY, b"alice"), tlv(NAME, b"Alice")], conn=0xC0FFEE, seq=2))
write("signalling", "callstatus-answered", datagram(0x8D, [u32(CALLID, 0x80000001), u8(CALLSTATE, 2),
                                                           tlv(ROOM, b"call-0123456789abcdef0123456789abcdef"), tlv(TOKEN_T, b"t.t.t")],
                                                  conn=0xC0FFEE, seq=3))
KEYSHARE = 48
write("signalling", "callinvite-keyshare", datagram(0x09, [u32(CALLID, 0x80000001), tlv(TO, b"bob"), tlv(KEYSHARE, bytes(range(32)))],
                                                  conn=0xC0FFEE, seq=2))
write("signalling", "callanswer-keyshare", datagram(0x0A, [u32(CALLID, 1), u8(ACCEPT, 1), tlv(KEYSHARE, b"\x42" * 32)], conn=0xC0FFEE, seq=3))
write("signalling", "incomingcall-keyshare", datagram(0x8C, [u32(CALLID, 1), tlv(IDENTITY, b"alice"), tlv(KEYSHARE, b"\x07" * 32)],
                                                    conn=0xC0FFEE, seq=2))
write("signalling", "callstatus-answered-keyshare", datagram(0x8D, [u32(CALLID, 0x80000001), u8(CALLSTATE, 2), tlv(ROOM, b"call-x"),
                                                                    tlv(TOKEN_T, b"t.t.t"), tlv(KEYSHARE, b"\x09" * 32)], conn=0xC0FFEE, seq=3))
write("signalling", "callstatus-declined", datagram(0x8D, [u32(CALLID, 0x80000001), u8(CALLSTATE, 3), tlv(REASON, b"busy")],
                                                  conn=0xC0FFEE, seq=4))

# ---------------------------------------------------------------- Tokens (Sources/ParleyAuth, HS256 JWT)
KEY, SECRET_KEY = "devkey", b"parley-dev-secret-do-not-use-in-production"


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def js(obj):
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


def mint(claims, header=None, key=SECRET_KEY):
    header = header or {"alg": "HS256", "kid": KEY, "typ": "JWT"}
    signing = b64(js(header)) + b"." + b64(claims if isinstance(claims, bytes) else js(claims))
    return signing + b"." + b64(hmac.new(key, signing, hashlib.sha256).digest())


grants = {"admin": False, "create": True, "join": True, "publish": True, "subscribe": True}
claims = {"sub": "alice", "name": "Alice", "room": "lobby", "exp": 1_900_000_000, "iat": 1_799_990_000,
          "nbf": 1_799_990_000, "grants": grants}
valid = mint(claims)
write("token", "valid", valid)
write("token", "valid-admin-anyroom", mint({"sub": "ops", "exp": 1_900_000_000, "mode": "mix",
                                            "grants": dict(grants, admin=True)}))
write("token", "expired", mint(dict(claims, exp=1_700_000_000)))
write("token", "bad-signature", valid[:-2] + (b"AA" if valid[-2:] != b"AA" else b"AB"))
write("token", "alg-none", mint(claims, header={"alg": "none", "kid": KEY}).rsplit(b".", 1)[0] + b".")
write("token", "unknown-kid", mint(claims, header={"alg": "HS256", "kid": "other"}))
write("token", "two-parts", valid.rsplit(b".", 1)[0])
write("token", "bad-base64", b"eyJ!bGciOiJIUzI1NiJ9." + valid.split(b".", 1)[1])
# Claims JSON on its own (the target also signs the input as claims, so these reach the claims decoder).
write("token", "claims", js(claims))
write("token", "claims-minimal", b'{"sub":"a","exp":1900000000}')
write("token", "claims-wrongtype", b'{"sub":"a","exp":1.5,"grants":{"join":"yes"}}')
write("token", "claims-control", b'{"sub":"a\\u0001b","room":"","exp":9223372036854775807,"nbf":-9223372036854775808}')


# ---------------------------------------------------------------- Envelope (Sources/ParleyWire/SignallingEnvelope.swift, version 2)
HELLO, COOKIE_ANSWER, INITIATION, RESPONSE, SEALED = 1, 2, 3, 4, 5


def envelope(kind, body, conn=0, flags=0):
    return struct.pack("!BBBBI", 0x50, 2, kind, flags, conn) + body


def opaque(label, n):
    """`n` bytes that look like ciphertext or a public key, the same on every run."""
    out = b""
    while len(out) < n:
        out += hashlib.sha256(label.encode() + bytes([len(out) & 0xFF])).digest()
    return out[:n]


relay_key = opaque("relay key", 32)
join_cookie = opaque("cookie", 20)  # JoinCookie.size
# Noise NK message 1: e (32) ‖ the sealed version 1 join (its bytes + 16-byte tag); message 2: e (32) ‖ an empty sealed payload (16).
join_datagram = datagram(0x01, [tlv(TOKEN_T, b"eyJhbGciOiJIUzI1NiJ9.e30.sig"), tlv(ROOM, b"lobby"), tlv(NONCE, nonce)])
noise1 = opaque("e", 32) + opaque("join", len(join_datagram) + 16)
noise2 = opaque("e2", 32) + opaque("tag", 16)
# A sealed ping: counter (8) ‖ ChaCha20-Poly1305 of the version 1 datagram ‖ tag (16).
ping = datagram(0x03, [u64(TIMESTAMP, 123456789)], conn=0xC0FFEE, ack=4)
sealed_body = struct.pack("!Q", 7) + opaque("ping", len(ping)) + opaque("ping tag", 16)
write("envelope", "hello", envelope(HELLO, nonce + bytes(96 - 8 - 16)))
write("envelope", "cookie-answer", envelope(COOKIE_ANSWER, join_cookie + relay_key))
write("envelope", "initiation", envelope(INITIATION, bytes([len(join_cookie)]) + join_cookie + noise1))
write("envelope", "response", envelope(RESPONSE, noise2))
write("envelope", "response-refused", envelope(RESPONSE, noise2[:32] + opaque("refused", 30 + 16)))
write("envelope", "sealed", envelope(SEALED, sealed_body, conn=0xC0FFEE))
# Near-valid: a hello one byte short or with non-zero padding (taken: the padding is not read), a cookie of 65 bytes, a
# body that is only a key, an initiation whose cookie length is 65 or runs past the end, an empty initiation, an unknown
# kind, a version 1 datagram, a sealed datagram over 1,200 bytes, a short header, flags set.
write("envelope", "hello-short", envelope(HELLO, nonce + bytes(96 - 8 - 16 - 1)))
write("envelope", "hello-padding", envelope(HELLO, nonce + b"\x01" * (96 - 8 - 16)))
write("envelope", "cookie-answer-long", envelope(COOKIE_ANSWER, opaque("long cookie", 65) + relay_key))
write("envelope", "cookie-answer-keyonly", envelope(COOKIE_ANSWER, relay_key))
write("envelope", "initiation-cookie-65", envelope(INITIATION, bytes([65]) + opaque("long cookie", 65) + noise1))
write("envelope", "initiation-past-end", envelope(INITIATION, bytes([40]) + join_cookie))
write("envelope", "initiation-empty", envelope(INITIATION, b""))
write("envelope", "unknown-kind", envelope(6, noise2))
write("envelope", "version1", join_datagram)
write("envelope", "sealed-oversize", envelope(SEALED, opaque("big", 1201 - 8), conn=0xC0FFEE))
write("envelope", "truncated", envelope(SEALED, b"", conn=0xC0FFEE)[:7])
write("envelope", "sealed-flags", envelope(SEALED, sealed_body, conn=0xC0FFEE, flags=0x80))

# ---------------------------------------------------------------- STUN (Sources/ParleyWebRTC, RFC 8489 / RFC 8445)
STUN_COOKIE = 0x2112A442
USERNAME, MESSAGE_INTEGRITY, ERROR_CODE, XOR_MAPPED, MAPPED = 0x0006, 0x0008, 0x0009, 0x0020, 0x0001
PRIORITY, USE_CANDIDATE, FINGERPRINT, ICE_CONTROLLED, ICE_CONTROLLING = 0x0024, 0x0025, 0x8028, 0x8029, 0x802A
SOFTWARE, GOOG_NETWORK_INFO = 0x8022, 0xC057
# The key the stun target signs and checks with (Tests/Fuzz/STUN/main.swift), so these seeds' integrity verifies there.
STUN_KEY = b"fuzzFUZZfuzzFUZZfuzz+/"
txid = bytes.fromhex("b7e7a701bc34d686fa87dfae")


def attr(t, v):
    return struct.pack("!HH", t, len(v)) + v + b"\x00" * (-len(v) % 4)


def stun(mtype, attrs, key=STUN_KEY, fingerprint=True, tid=txid):
    """A STUN message: `attrs`, then MESSAGE-INTEGRITY under `key` (none when None) and FINGERPRINT, each computed with
    the header's length as if it were the last attribute (RFC 8489 §14.5, §14.7)."""
    body = b"".join(attrs)
    if key is not None:
        header = struct.pack("!HHI", mtype, len(body) + 24, STUN_COOKIE) + tid
        body += attr(MESSAGE_INTEGRITY, hmac.new(key, header + body, hashlib.sha1).digest())
    if fingerprint:
        header = struct.pack("!HHI", mtype, len(body) + 8, STUN_COOKIE) + tid
        body += attr(FINGERPRINT, struct.pack("!I", (zlib.crc32(header + body) ^ 0x5354554E) & 0xFFFFFFFF))
    return struct.pack("!HHI", mtype, len(body), STUN_COOKIE) + tid + body


def xor_address(ip, port, family=1):
    x_port = port ^ (STUN_COOKIE >> 16)
    mask = struct.pack("!I", STUN_COOKIE) + txid
    return struct.pack("!BBH", 0, family, x_port) + bytes(a ^ m for a, m in zip(ip, mask))


STUN_VECTORS = "Tests/ParleyWebRTCTests/STUNTestSupport.swift"
write("stun", "rfc5769-request", swift_bytes(STUN_VECTORS, "rfc5769Request"))
write("stun", "rfc5769-ipv4-response", swift_bytes(STUN_VECTORS, "rfc5769IPv4Response"))
write("stun", "rfc5769-ipv6-response", swift_bytes(STUN_VECTORS, "rfc5769IPv6Response"))
# A browser's check (controlling, nominating) and the relay's own consent check (controlled), as STUNWriter writes them.
check = [attr(USERNAME, b"R3layUfr:Xq3F"), attr(GOOG_NETWORK_INFO, struct.pack("!HH", 1, 10)), attr(ICE_CONTROLLING, struct.pack("!Q", 0x1122334455667788)),
         attr(USE_CANDIDATE, b""), attr(PRIORITY, struct.pack("!I", 1853824767))]
write("stun", "browser-check", stun(0x0001, check))
write("stun", "consent-check", stun(0x0001, [attr(USERNAME, b"Xq3F:R3layUfr"), attr(PRIORITY, struct.pack("!I", 2130706431)),
                                             attr(ICE_CONTROLLED, struct.pack("!Q", 42))]))
write("stun", "success-ipv4", stun(0x0101, [attr(XOR_MAPPED, xor_address(bytes([203, 0, 113, 5]), 50000))]))
write("stun", "success-ipv6", stun(0x0101, [attr(XOR_MAPPED, xor_address(bytes.fromhex("20010db8000000000000000000000005"), 50000, family=2))]))
write("stun", "success-mapped-address", stun(0x0101, [attr(MAPPED, struct.pack("!BBH4B", 0, 1, 3478, 192, 0, 2, 1))], key=None))
write("stun", "error-401", stun(0x0111, [attr(ERROR_CODE, struct.pack("!HBB", 0, 4, 1) + b"Unauthorized")]))
write("stun", "error-487-unknown-attributes", stun(0x0111, [attr(ERROR_CODE, struct.pack("!HBB", 0, 4, 87) + b"Role Conflict"),
                                                          attr(0x000A, struct.pack("!H", 0x0030))], key=None))
# Near-valid: a wrong FINGERPRINT, an attribute after FINGERPRINT, one after MESSAGE-INTEGRITY, MESSAGE-INTEGRITY of 19
# bytes, an unknown comprehension-required attribute, a length that is not a multiple of 4, an attribute overrunning the
# message, a USERNAME that is not UTF-8 and one of 514 bytes, a wrong magic cookie, a Binding indication, an IPv4
# address of 7 bytes, address family 3.
good = stun(0x0001, check)
write("stun", "bad-fingerprint", good[:-1] + bytes([good[-1] ^ 1]))
signed = stun(0x0001, check, fingerprint=False)
extra = attr(PRIORITY, b"\x00\x00\x00\x01")
header = struct.pack("!HHI", 0x0001, len(signed) - 20 + 8 + len(extra), STUN_COOKIE) + txid
fingerprinted = header + signed[20:] + attr(FINGERPRINT, struct.pack("!I", (zlib.crc32(header + signed[20:]) ^ 0x5354554E) & 0xFFFFFFFF))
write("stun", "after-fingerprint", fingerprinted + extra)
write("stun", "after-integrity", stun(0x0001, check, fingerprint=False) + attr(PRIORITY, b"\x00\x00\x00\x01"))
write("stun", "integrity-19", stun(0x0001, check + [attr(MESSAGE_INTEGRITY, b"\x00" * 19)], key=None))
write("stun", "unknown-required", stun(0x0001, check + [attr(0x0030, b"\x00" * 4)]))
write("stun", "length-not-4", good[:2] + struct.pack("!H", len(good) - 20 - 2) + good[4:-2])
write("stun", "overrun", good[:20] + struct.pack("!HH", USERNAME, 200) + good[24:])
write("stun", "username-not-utf8", stun(0x0001, [attr(USERNAME, b"\xff\xfe:abc")] + check[2:]))
write("stun", "username-514", stun(0x0001, [attr(USERNAME, b"u" * 514)] + check[2:]))
write("stun", "wrong-cookie", good[:4] + b"\x21\x12\xa4\x43" + good[8:])
write("stun", "indication", stun(0x0011, [], key=None))
write("stun", "address-7", stun(0x0101, [attr(XOR_MAPPED, xor_address(bytes([203, 0, 113, 5]), 50000)[:7])], key=None))
# What the stun target found (STUNWriterTests keeps it refused): a success response whose ERROR-CODE, class 5 and number
# 150, read as 650.
write("stun", "found-error-code-150", bytes.fromhex("010100142112a442b7e7a701bc34d686fa87dfae000900080001" "0d96c0000201ffff0004b5e42e26"))
write("stun", "address-family-3", stun(0x0101, [attr(XOR_MAPPED, xor_address(bytes([203, 0, 113, 5]), 50000, family=3))], key=None))

# ---------------------------------------------------------------- SDP offers (Sources/ParleyWebRTC/SDPOffer*.swift)
SDP_OFFERS = "Tests/ParleyWebRTCTests/SDPTestOffers.swift"
chrome_lines = swift_strings(SDP_OFFERS, "chromeOfferLines")
firefox_lines = swift_strings(SDP_OFFERS, "firefoxOffer")
video_data = swift_strings(SDP_OFFERS, "audioVideoDataOffer")
assert chrome_lines[0] == "v=0" and firefox_lines[0] == "v=0" and video_data[0] == "a=group:BUNDLE 0 1 2"


def crlf(lines):
    return ("\r\n".join(lines) + "\r\n").encode()


# aiortc (the interop tests' non-browser client, aiortc 1.x): ICE and DTLS at the end of the media section, a host and a
# server-reflexive candidate, three fingerprints (sha-256 first), PT 96 for Opus, mid extension first.
aiortc_lines = [
    "v=0", "o=- 3913372637 3913372637 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=group:BUNDLE 0", "a=msid-semantic:WMS *",
    "m=audio 47011 UDP/TLS/RTP/SAVPF 96 0 8", "c=IN IP4 192.168.1.20", "a=sendrecv",
    "a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid", "a=extmap:2 urn:ietf:params:rtp-hdrext:ssrc-audio-level", "a=mid:0",
    "a=msid:6f2d1c6e-3a59-4b0e-9d7f-1c2b3a4d5e6f 0b9a8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d", "a=rtcp:9 IN IP4 0.0.0.0", "a=rtcp-mux",
    "a=ssrc:3366431216 cname:8b0e5c1a-2d3f-4e6a-9b7c-1d2e3f4a5b6c", "a=rtpmap:96 opus/48000/2", "a=rtpmap:0 PCMU/8000",
    "a=rtpmap:8 PCMA/8000",
    "a=candidate:5b3d0f7e8c1a2b4d6e9f0a1b2c3d4e5f 1 udp 2130706431 192.168.1.20 47011 typ host",
    "a=candidate:a1b2c3d4e5f60718293a4b5c6d7e8f90 1 udp 1694498815 203.0.113.7 47011 typ srflx raddr 192.168.1.20 rport 47011",
    "a=end-of-candidates", "a=ice-ufrag:Qv3x", "a=ice-pwd:S8n9vR2kLq0wYbT4cJ6dHf",
    "a=fingerprint:sha-256 " + ":".join(f"{b:02X}" for b in opaque("aiortc 256", 32)),
    "a=fingerprint:sha-384 " + ":".join(f"{b:02X}" for b in opaque("aiortc 384", 48)),
    "a=fingerprint:sha-512 " + ":".join(f"{b:02X}" for b in opaque("aiortc 512", 64)),
    "a=setup:actpass",
]
write("sdp", "chrome", crlf(chrome_lines))
write("sdp", "firefox", ("\n".join(firefox_lines) + "\n").encode())
write("sdp", "chrome-audio-video-data", crlf(chrome_lines[0:4] + video_data[0:1] + chrome_lines[5:] + video_data[1:]))
write("sdp", "aiortc", crlf(aiortc_lines))
# Several audio sections: a receive-only one after the first is a further forwarding slot (bundled), and the same
# without BUNDLE (the answer may then take one section only).
media = chrome_lines[7:]
second = [line.replace("a=mid:0", "a=mid:1").replace("a=sendrecv", "a=recvonly") for line in media if not line.startswith("a=ssrc")]
write("sdp", "chrome-two-audio-bundled", crlf(chrome_lines[0:4] + ["a=group:BUNDLE 0 1"] + chrome_lines[5:] + second))
write("sdp", "chrome-two-audio-unbundled", crlf(chrome_lines[0:4] + chrome_lines[5:] + second))


def chrome_with(transform):
    return crlf(transform(list(chrome_lines)))


# Near-valid: not starting with v=0, a line over 4,096 bytes, a lone CR, a NUL, invalid UTF-8 in an attribute, a mid
# with a space, a BUNDLE mid that names no section, a mid twice, a port count, a fingerprint of 31 bytes, only a sha-1
# fingerprint, setup:passive, no rtcp-mux, extmap ids 15 and 256, an ID mapped twice, 17 media sections, an m= line
# that is all injection attempt.
write("sdp", "no-version", chrome_with(lambda l: l[1:]))
write("sdp", "long-line", chrome_with(lambda l: l + ["a=x-long:" + "y" * 4100]))
write("sdp", "lone-cr", chrome_with(lambda l: l[:-1] + [l[-1] + "\rb=AS:30"]))
write("sdp", "nul", chrome_with(lambda l: l + ["a=x-nul:\u0000"]))
write("sdp", "bad-utf8", crlf(chrome_lines).replace(b"a=msid:7b2f", b"a=msid:\xff\xfe7b2f"))
write("sdp", "mid-space", chrome_with(lambda l: [x.replace("a=mid:0", "a=mid:0 1") for x in l]))
write("sdp", "bundle-unknown-mid", chrome_with(lambda l: [x.replace("a=group:BUNDLE 0", "a=group:BUNDLE 0 7") for x in l]))
write("sdp", "mid-twice", chrome_with(lambda l: l + ["m=audio 9 UDP/TLS/RTP/SAVPF 111", "a=mid:0"]))
write("sdp", "port-count", chrome_with(lambda l: [x.replace("m=audio 9 ", "m=audio 9/2 ") for x in l]))
write("sdp", "fingerprint-31", chrome_with(lambda l: [x[:-3] if x.startswith("a=fingerprint") else x for x in l]))
write("sdp", "fingerprint-sha1", chrome_with(lambda l: [("a=fingerprint:sha-1 " + ":".join(["AB"] * 20)) if x.startswith("a=fingerprint") else x
                                                        for x in l]))
write("sdp", "setup-passive", chrome_with(lambda l: [x.replace("setup:actpass", "setup:passive") for x in l]))
write("sdp", "no-rtcp-mux", chrome_with(lambda l: [x for x in l if x != "a=rtcp-mux"]))
write("sdp", "extmap-15-256", chrome_with(lambda l: l + ["a=extmap:15 urn:ietf:params:rtp-hdrext:ssrc-audio-level",
                                                           "a=extmap:256 urn:x"]))
write("sdp", "extmap-twice", chrome_with(lambda l: l + ["a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid"]))
write("sdp", "seventeen-sections", chrome_with(lambda l: l + [f"m=video 0 RTP/AVP {n}" for n in range(17)]))
write("sdp", "m-line-injection", chrome_with(lambda l: l + ["m=audio 9 UDP/TLS/RTP/SAVPF 111\\r\\na=evil"]))

# ---------------------------------------------------------------- Cascade bodies (Sources/ParleyRelayCore/CascadeMessage.swift)
def s8(text):
    b = text.encode() if isinstance(text, str) else text
    return bytes([len(b)]) + b


def s16(text):
    b = text.encode()
    return struct.pack("!H", len(b)) + b


def fragment(message_id, index, count, chunk, ids=()):
    return (struct.pack("!IBBH", message_id, index, count | (0x80 if ids else 0), len(chunk)) + chunk
            + ((bytes([len(ids)]) + b"".join(i.encode() for i in ids)) if ids else b""))


def share(b):
    return bytes([len(b)]) + b


attachment_ids = ["fUNQLHuQBWMBiIYr16lWVg", "AAAAAAAAAAAAAAAAAAAAAA", "-_-_abcdefghij0123456w", "zyxwvutsrqponmlkjihgfw"]
rtp_packet = bytes([0x80, 111, 0, 1, 0, 0, 0, 9, 0, 0, 0, 5, 1, 2, 3])
roster = (bytes([2]) + s8("lobby") + struct.pack("!IBBI", 3, 0, 2, 40) + bytes([2]) + struct.pack("!QQ", 1, 2)
          + bytes([2]) + struct.pack("!IIB", 9, 77, 6) + s8("ann") + s8("Ann") + struct.pack("!IIB", 10, 78, 7) + s8("bob") + s8(""))
# The messages of CascadeTests.messagesRoundTrip and TextAttachmentRelayTests.linkBodies, as `bytes` writes them.
write("cascade", "media", bytes([1]) + s8("lobby") + struct.pack("!IB", 7, 20) + rtp_packet)
write("cascade", "roster", roster)
write("cascade", "mix", bytes([3]) + s8("lobby") + struct.pack("!II", 0, 12) + bytes([0x81, 111, 0, 0, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0, 7, 9]))
write("cascade", "text", bytes([4]) + s8("lobby") + struct.pack("!I", 3) + s8("bob") + fragment(4, 0, 1, b"hi"))
write("cascade", "text-attachments", bytes([4]) + s8("lobby") + struct.pack("!I", 3) + s8("bob") + fragment(9, 0, 2, b"", attachment_ids))
write("cascade", "text-last-of-5", bytes([4]) + s8("lobby") + struct.pack("!I", 3) + s8("") + fragment(9, 4, 5, "é".encode() * 450))
write("cascade", "invite", bytes([5]) + s8("") + struct.pack("!I", 5) + s8("ann") + s8("Ann") + s8("bob") + share(b"\x01" * 32))
write("cascade", "invite-noshare", bytes([5]) + s8("") + struct.pack("!I", 5) + s8("ann") + s8("") + s8("bob") + share(b""))
write("cascade", "hangup", bytes([6]) + s8("") + struct.pack("!I", 5) + s8("ann"))
write("cascade", "callstatus-answered", bytes([7]) + s8("") + s8("ann") + struct.pack("!IB", 5, 2) + s8("") + s8("call-x") + s16("t.o.k")
      + share(b"\x09" * 32))
write("cascade", "callstatus-declined", bytes([7]) + s8("") + s8("ann") + struct.pack("!IB", 5, 3) + s8("busy") + s8("") + s16("") + share(b""))
write("cascade", "directtext", bytes([8]) + s8("") + s8("ann") + s8("bob") + fragment(1, 0, 1, b"yo"))
write("cascade", "directtext-attachments", bytes([8]) + s8("") + s8("a") + s8("b") + fragment(4, 0, 1, b"h", attachment_ids[1:2]))
# Near-valid: a roster part equal to its parts, ids on a later fragment, the ids flag without ids, a byte after an
# invite, an unknown kind, a presence kind naming a room, a roster cut short, identities that are not UTF-8, a text of 6
# fragments, a key share of 31 bytes, an answered status without a room.
write("cascade", "roster-part-is-parts", roster[:11] + bytes([2]) + roster[12:])
write("cascade", "text-attachments-later", bytes([4]) + s8("lobby") + struct.pack("!I", 3) + s8("") + fragment(9, 1, 2, b"x", attachment_ids[:1]))
write("cascade", "text-flag-no-ids", bytes([4]) + s8("r") + struct.pack("!I", 3) + s8("") + struct.pack("!IBBH", 4, 0, 0x81, 1) + b"h")
write("cascade", "invite-trailing", bytes([5]) + s8("") + struct.pack("!I", 5) + s8("ann") + s8("") + s8("bob") + share(b"") + b"\x00")
write("cascade", "unknown-kind", bytes([9]) + s8("lobby") + b"\x00" * 8)
write("cascade", "hangup-with-room", bytes([6]) + s8("lobby") + struct.pack("!I", 5) + s8("ann"))
write("cascade", "roster-short", roster[:-4])
write("cascade", "roster-bad-utf8", roster.replace(s8("ann"), s8(b"\xff\xfe\xfd")))
write("cascade", "text-six-fragments", bytes([4]) + s8("lobby") + struct.pack("!I", 3) + s8("") + fragment(9, 0, 6, b"x"))
write("cascade", "invite-share-31", bytes([5]) + s8("") + struct.pack("!I", 5) + s8("ann") + s8("") + s8("bob") + share(b"\x01" * 31))
write("cascade", "callstatus-answered-no-room", bytes([7]) + s8("") + s8("ann") + struct.pack("!IB", 5, 2) + s8("") + s8("") + s16("")
      + share(b""))
# What the cascade target found (CascadeMessageBoundsTests keeps each refused): a key share of 1 byte, a token on a call
# not answered, a text of 47 fragments, each passed on to members whose codec refused it.
write("cascade", "found-invite-share-1", bytes.fromhex("0500a1f70701000001010100"))
write("cascade", "found-callstatus-token-unanswered", bytes.fromhex("070000000000da04000000072fffff0621001600"))
write("cascade", "found-text-47-fragments", bytes.fromhex("0400000000000657000001010000000000002f0000"))
