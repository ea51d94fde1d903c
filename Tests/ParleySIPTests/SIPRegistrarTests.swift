import ParleySIP
import ParleyWire
import Testing

@Suite("SIP: devices' digest credentials, single-use nonces, registrations")
struct SIPRegistrarTests {
    let key = [UInt8](repeating: 7, count: 32)

    @Test func credentialsAreRecomputedFromTheUsernameAndLapse() {
        let credentials = SIPCredentials(key: key)
        let minted = credentials.mint(identity: "bob", now: 1_000, lifetime: 600)
        #expect(minted.username == "1600.bob")
        #expect(minted.expiresAt == 1_600)
        #expect(minted.password.count == 43)  // base64url of 32 bytes
        let checked = credentials.check(username: minted.username, now: 1_599)
        #expect(checked?.identity == "bob")
        #expect(checked?.password == minted.password)
        // Lapsed, or another expiry written in: no password the device knows.
        #expect(credentials.check(username: minted.username, now: 1_600) == nil)
        #expect(credentials.check(username: "99999.bob", now: 1_000)?.password != minted.password)
        // Another key (another relay's secret) gives another password; names the relay never mints are refused.
        #expect(SIPCredentials(key: [UInt8](repeating: 8, count: 32)).check(username: minted.username, now: 1_000)?
            .password != minted.password)
        for bad in ["bob", ".bob", "1600.", "x1600.bob", "1600.bo b", "1600.bob\"",
                    "1600." + String(repeating: "a", count: 65)] {
            #expect(credentials.check(username: bad, now: 1_000) == nil, "\(bad)")
        }
    }

    @Test func lifetimesAreClamped() {
        let credentials = SIPCredentials(key: key)
        #expect(credentials.mint(identity: "a", now: 0, lifetime: 1).expiresAt == 60)
        #expect(credentials.mint(identity: "a", now: 0, lifetime: 10 * 86_400).expiresAt == 7 * 86_400)
        #expect(credentials.mint(identity: "a", now: 0).expiresAt == 86_400)
    }

    @Test func identitiesSIPCanCarry() {
        for good in ["bob", "a.b-c_d+e@f", String(repeating: "x", count: 64)] {
            #expect(SIPCredentials.validIdentity(good))
        }
        for bad in ["", "bo b", "a:b", "a;b", "a<b", "é", String(repeating: "x", count: 65)] {
            #expect(!SIPCredentials.validIdentity(bad), "\(bad)")
        }
    }

    @Test func aNonceIsGoodOnceAndNotAfterItsLifetime() {
        var nonces = SIPNonces(lifetimeSeconds: 30, capacity: 100)
        let a = nonces.issue(random: [UInt8](repeating: 1, count: 16), now: 0)
        let b = nonces.issue(random: [UInt8](repeating: 2, count: 16), now: 0)
        #expect(a.count == 32 && a != b)
        let first = nonces.consume(a, now: 1_000), replayed = nonces.consume(a, now: 1_000)
        #expect(first && !replayed)
        let lapsed = nonces.consume(b, now: 30_000_000_000), gone = nonces.consume(b, now: 1)
        #expect(!lapsed && !gone)
        let stranger = nonces.consume("never-issued", now: 0)
        #expect(!stranger)
        #expect(nonces.outstanding == 0)
    }

    @Test func outstandingNoncesAreBounded() {
        var nonces = SIPNonces(lifetimeSeconds: 30, capacity: 10)
        var issued: [String] = []
        for i in 0..<25 { issued.append(nonces.issue(random: [UInt8(i), 0, 0, 0], now: 0)) }
        #expect(nonces.outstanding == 10)
        let oldest = nonces.consume(issued[0], now: 1), newest = nonces.consume(issued[24], now: 1)
        #expect(!oldest && newest)  // the oldest were forgotten first
        // Issuing and consuming many keeps memory flat.
        for i in 0..<10_000 {
            let n = nonces.issue(random: [UInt8(i & 0xFF), UInt8(i >> 8), 1, 1], now: 0)
            _ = nonces.consume(n, now: 1)
        }
        #expect(nonces.outstanding <= 10)
    }

    let home = PeerAddress(ipv4: 192, 0, 2, 10, port: 5062), away = PeerAddress(ipv4: 198, 51, 100, 7, port: 40_000)

    @Test func registerRefreshRemoveExpire() {
        var table = SIPRegistrations(maxPerIdentity: 2, capacity: 3)
        let s = 1_000_000_000 as Int64
        guard case .added(let first, nil) = table.register(identity: "bob", contact: "sip:bob@192.0.2.10:5062",
                                                            source: home, seconds: 600, now: 0, stream: 1) else {
            Issue.record("not added")
            return
        }
        #expect(first.expiresAt == 600 * s && first.stream == 1)
        // The same contact again: refreshed (its stream kept), from wherever it now sends.
        guard case .refreshed(let again) = table.register(identity: "bob", contact: "sip:bob@192.0.2.10:5062",
                                                           source: away, seconds: 10, now: 5 * s, stream: 2) else {
            Issue.record("not refreshed")
            return
        }
        #expect(again.stream == 1 && again.source == away && again.expiresAt == 65 * s)  // at least 60 s
        #expect(table.hasDevice(at: away.withPort(1)) && !table.hasDevice(at: home))
        // A third device of bob's replaces the oldest; the table is full for a new identity past capacity.
        _ = table.register(identity: "bob", contact: "sip:b2@x", source: home, seconds: 600, now: 6 * s, stream: 3)
        let third = table.register(identity: "bob", contact: "sip:b3@x", source: home, seconds: 600, now: 7 * s,
                                   stream: 4)
        #expect(third == .added(table.bindings(of: "bob")[1], replaced: again))
        _ = table.register(identity: "carol", contact: "sip:c@x", source: home, seconds: 600, now: 7 * s, stream: 5)
        let dave = table.register(identity: "dave", contact: "sip:d@x", source: home, seconds: 600, now: 7 * s,
                                  stream: 6)
        #expect(dave == .full)
        #expect(table.devices == 3)
        #expect(table.binding(stream: 5)?.identity == "carol")
        // Unregistered, and lapsed.
        let removed = table.remove(identity: "bob", contact: "sip:b2@x").map(\.stream)
        #expect(removed == [3])
        let early = table.expire(now: 606 * s), due = table.expire(now: 607 * s)
        #expect(early.isEmpty && due.map(\.stream) == [4, 5])
        #expect(table.devices == 0 && table.nextExpiry == nil)
        #expect(SIPRegistrations.granted(0) == 60 && SIPRegistrations.granted(1_000_000) == 3_600)
    }
}

@Suite("SIP: DTMF (RFC 4733) and rooms' PINs")
struct SIPDTMFTests {
    /// One telephone-event payload: event, end bit, volume 10, duration.
    func event(_ code: UInt8, end: Bool, duration: UInt16 = 800) -> [UInt8] {
        [code, (end ? 0x80 : 0) | 10, UInt8(duration >> 8), UInt8(duration & 0xFF)]
    }

    @Test func eachPressIsOneDigitWhateverItsRepeats() {
        var dtmf = DTMFCollector(capacity: 4)
        var seen: [Character] = []
        for (ts, code) in [(UInt32(100), UInt8(1)), (900, 2), (1700, 11)] {
            for packet in [event(code, end: false, duration: 160), event(code, end: false, duration: 320),
                           event(code, end: true), event(code, end: true), event(code, end: true)] {
                packet.withUnsafeBytes { if let d = dtmf.take($0, timestamp: ts) { seen.append(d) } }
            }
        }
        #expect(seen == ["1", "2", "#"] && dtmf.digits == ["1", "2", "#"])
        // Too short, or no event code: nothing.
        let none1 = [UInt8(1), 0, 0].withUnsafeBytes { dtmf.take($0, timestamp: 5) }
        let none2 = [UInt8(16), 0, 0, 0].withUnsafeBytes { dtmf.take($0, timestamp: 6) }
        #expect(none1 == nil && none2 == nil)
        for ts in UInt32(10)..<UInt32(20) { _ = event(7, end: true).withUnsafeBytes { dtmf.take($0, timestamp: ts) } }
        #expect(dtmf.digits.count == 4)  // bounded
    }

    @Test func pinTries() {
        #expect(SIPRoomPINs.judge(["1", "2"], pin: "1234") == .more)
        #expect(SIPRoomPINs.judge(["1", "2", "3", "4"], pin: "1234") == .right)
        #expect(SIPRoomPINs.judge(["1", "2", "3", "4", "#"], pin: "1234") == .right)
        #expect(SIPRoomPINs.judge(["1", "2", "#"], pin: "1234") == .wrong)
        #expect(SIPRoomPINs.judge(["1", "2", "3", "5"], pin: "1234") == .wrong)
        #expect(SIPRoomPINs.judge(["#"], pin: "1234") == .wrong)
        #expect(SIPRoomPINs.valid("0042") && SIPRoomPINs.valid("123456789012"))
        for bad in ["123", "1234567890123", "12a4", "١٢٣٤", ""] { #expect(!SIPRoomPINs.valid(bad), "\(bad)") }
        var pins = SIPRoomPINs()
        pins.set("1234", for: "r")
        #expect(pins.pin(for: "r") == "1234" && pins.pin(for: "s") == nil)
        pins.set(nil, for: "r")
        #expect(pins.pin(for: "r") == nil)
    }
}
