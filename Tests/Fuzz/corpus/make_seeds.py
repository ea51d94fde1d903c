#!/usr/bin/env python3
"""Writes the seed corpus for the libFuzzer targets (run by hand once; the outputs are committed).

    python3 Tests/Fuzz/corpus/make_seeds.py

Each directory gets a handful of small valid and near-valid inputs, named after what they hold.
"""
import base64, hashlib, hmac, json, os, struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(kind, name, data):
    d = os.path.join(HERE, kind)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


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
