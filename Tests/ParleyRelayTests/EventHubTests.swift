import Foundation
import ParleyRelay
import ParleyRelayCore
import Testing

/// `EventHub`: the ring of relay events the workers publish to and the API's event streams read from.
@Suite("Event hub: reads in pages, readers behind the ring, waits for the next event")
struct EventHubTests {
    @Test("events(from:limit:) takes at most `limit`, a reader behind the ring skips to its oldest, wait(past:) returns the head")
    func hubReads() {
        let hub = EventHub(capacity: 4)
        let e = (0..<6).map { RelayEvent(kind: .roomStarted, room: "r\($0)", unixMilliseconds: Int64($0)) }
        hub.publish(Array(e[0..<3]))
        let first = hub.events(from: 0, limit: 2)
        #expect(first.events.map(\.room) == ["r0", "r1"] && first.next == 2)
        #expect(hub.events(from: first.next, limit: 2).events.map(\.room) == ["r2"])
        hub.publish(Array(e[3..<6]))  // the ring keeps r2...r5
        let behind = hub.events(from: 0, limit: 10)
        #expect(behind.events.map(\.room) == ["r2", "r3", "r4", "r5"] && behind.next == 6)
        #expect(hub.events(from: 6).events.isEmpty)
        #expect(hub.wait(past: 5, seconds: 5) == 6)  // already past: no wait
        let start = Date()
        #expect(hub.wait(past: 6, seconds: 0.05) == 6)
        #expect(Date().timeIntervalSince(start) >= 0.04)
    }
}
