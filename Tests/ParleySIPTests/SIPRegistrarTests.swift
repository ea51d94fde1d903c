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
