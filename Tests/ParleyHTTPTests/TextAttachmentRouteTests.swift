import Foundation
import ParleyAuth
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import ParleyWire
import Testing

/// `POST /v1/rooms/{room}/messages` with `attachments`, and the `attachments` of the event streams' text events.
@Suite("HTTP: texts with image attachments")
struct TextAttachmentRouteTests {
    static let ids = ["fUNQLHuQBWMBiIYr16lWVg", "AAAAAAAAAAAAAAAAAAAAAA", "-_-_abcdefghij0123456w", "zyxwvutsrqponmlkjihgfw"]
    let routes = RouterTests()

    @Test("the backend's text carries ids to the room; image-only is fine; the text event lists them")
    func adminText() {
        #expect(routes.call("POST", "/v1/rooms", #"{"name":"aa"}"#).status == 201)
        _ = routes.backend.core.drainEvents()
        let body = #"{"text":"look","attachments":["fUNQLHuQBWMBiIYr16lWVg","AAAAAAAAAAAAAAAAAAAAAA"]}"#
        #expect(routes.call("POST", "/v1/rooms/aa/messages", body).status == 200)
        #expect(routes.call("POST", "/v1/rooms/aa/messages", #"{"attachments":["zyxwvutsrqponmlkjihgfw"]}"#).status == 200)
        let texts = routes.backend.core.drainEvents().filter { $0.kind == .text }
        #expect(texts.map(\.detail) == ["look", ""])
        #expect(texts.map(\.attachments) == [[Self.ids[0], Self.ids[1]], [Self.ids[3]]])
    }

    @Test("ids that are not ids, too many, or no text and no image: 400 invalid_field, nothing sent",
          arguments: [
            #"{"text":"x","attachments":["fUNQLHuQBWMBiIYr16lWVg","AAAAAAAAAAAAAAAAAAAAAA","AAAAAAAAAAAAAAAAAAAAAA","AAAAAAAAAAAAAAAAAAAAAA","AAAAAAAAAAAAAAAAAAAAAA"]}"#,
            #"{"text":"x","attachments":["fUNQLHuQBWMBiIYr16lWV"]}"#,
            #"{"text":"x","attachments":["fUNQLHuQBWMBiIYr16lWVh"]}"#,
            #"{"text":"x","attachments":["../../relay-key/AAAAAAAA"]}"#,
            #"{"text":"x","attachments":"fUNQLHuQBWMBiIYr16lWVg"}"#,
            #"{"text":"x","attachments":[5]}"#,
            #"{"attachments":[]}"#,
            #"{"text":""}"#,
            #"{}"#,
          ])
    func badAttachments(body: String) {
        #expect(routes.call("POST", "/v1/rooms", #"{"name":"aa"}"#).status == 201)
        _ = routes.backend.core.drainEvents()
        let r = routes.call("POST", "/v1/rooms/aa/messages", body)
        #expect(r.status == 400, "\(r.text)")
        #expect(routes.errorCode(r) == "invalid_field", "\(r.text)")
        #expect(routes.backend.core.drainEvents().isEmpty)
    }

    @Test("a text event's JSON has attachments only when the text carries some")
    func eventJSON() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        let with = RelayEvent(kind: .text, room: "aa", identity: "ann", detail: "", unixMilliseconds: 5, attachments: [Self.ids[0]])
        #expect(String(decoding: try encoder.encode(API.Event(with)), as: UTF8.self)
                == #"{"at":5,"attachments":["fUNQLHuQBWMBiIYr16lWVg"],"identity":"ann","room":"aa","type":"text"}"#)
        let direct = RelayEvent(kind: .directText, room: "", identity: "bob", detail: "hi", unixMilliseconds: 6, recipient: 9, attachments: Self.ids)
        #expect(API.Event(direct).attachments == Self.ids && API.Event(direct).type == "direct_text")
        let plain = RelayEvent(kind: .text, room: "aa", identity: "ann", detail: "hi", unixMilliseconds: 5)
        #expect(!String(decoding: try encoder.encode(API.Event(plain)), as: UTF8.self).contains("attachments"))
    }
}

extension WebRTCRouteTests {
    @Test("a member's text with ids goes to the room from its identity; a bad id is 400")
    func roomTextsWithImages() {
        #expect(send("POST", "/v1/rooms/R/webrtc", chromeOffer, token: Self.memberToken("ann", grants: Grants(create: true))).status == 201)
        _ = backend.core.drainEvents()
        let ok = send("POST", "/v1/rooms/R/messages", #"{"attachments":["fUNQLHuQBWMBiIYr16lWVg"]}"#, contentType: "application/json")
        #expect(ok.status == 200, "\(ok.text)")
        let events = backend.core.drainEvents()
        #expect(events.contains { $0.kind == .text && $0.identity == "ann" && $0.detail.isEmpty && $0.attachments == ["fUNQLHuQBWMBiIYr16lWVg"] },
                "\(events)")
        let bad = send("POST", "/v1/rooms/R/messages", #"{"text":"x","attachments":["nope"]}"#, contentType: "application/json")
        #expect(bad.status == 400 && errorCode(bad) == "invalid_field", "\(bad.text)")
    }
}
