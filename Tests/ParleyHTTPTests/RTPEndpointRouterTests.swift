import Foundation
import ParleyAuth
import ParleyCrypto
import ParleyHTTP
import ParleyRelay
import ParleyRelayCore
import Testing

@Suite("HTTP router: plain-RTP endpoints")
struct RTPEndpointRouterTests {
    let backend = CoreBackend()
    var router: HTTPRouter {
        HTTPRouter(backend: backend, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                   signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: RelayCoreConfig())
    }

    func call(_ method: String, _ path: String, _ body: String? = nil, admin: Bool = true) -> HTTPResponse {
        router.route(HTTPRequest(method: method, path: path, authorization: "Bearer " + RouterTests.token(admin: admin),
                                 body: Array((body ?? "").utf8)), now: RouterTests.now)
    }
    func json(_ r: HTTPResponse) -> [String: Any] { (try? JSONSerialization.jsonObject(with: Data(r.body))) as? [String: Any] ?? [:] }
    func errorCode(_ r: HTTPResponse) -> String? { (json(r)["error"] as? [String: Any])?["code"] as? String }

    @Test("POST creates an endpoint with address, SSRC, PT 111 and an SDP; it is listed as a member; DELETE removes it")
    func lifecycle() throws {
        #expect(call("POST", "/v1/rooms", #"{"name":"lobby"}"#).status == 201)
        let r = call("POST", "/v1/rooms/lobby/rtp-endpoints", #"{"identity":"rec","publish":false,"subscribe":true,"receive_address":"127.0.0.1:45000"}"#)
        #expect(r.status == 201, "\(String(decoding: r.body, as: UTF8.self))")
        let body = json(r)
        #expect(body["relay_address"] as? String == "127.0.0.1:7400")
        #expect(body["relay_port"] as? Int == 7400)
        #expect(body["payload_type"] as? Int == 111)
        #expect(body["receive_address"] as? String == "127.0.0.1:45000")
        #expect((body["ssrc"] as? Int ?? 0) != 0)
        // SRTP by default: two fresh keys; the SDP (the stream the endpoint receives) carries the relay's.
        let srtp = try #require(body["srtp"] as? [String: Any])
        let relayKey = try #require(srtp["relay_key"] as? String), endpointKey = try #require(srtp["endpoint_key"] as? String)
        #expect(srtp["suite"] as? String == "AES_CM_128_HMAC_SHA1_80")
        #expect(SDESKey(base64: relayKey) != nil && SDESKey(base64: endpointKey) != nil && relayKey != endpointKey)
        #expect(srtp["relay_crypto"] as? String == "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + relayKey)
        #expect(srtp["endpoint_crypto"] as? String == "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:" + endpointKey)
        let sdp = try #require(body["sdp"] as? String)
        let stream = try #require(body["stream_ssrc"] as? Int)
        #expect(stream != 0 && stream != body["ssrc"] as? Int)
        // A complete description: a session id of its own, RTCP on the RTP port, Opus with FEC, both level extensions,
        // the SSRC and CNAME of the stream it receives.
        let lines = sdp.components(separatedBy: "\r\n")
        #expect(sdp.hasSuffix("\r\n"))
        #expect(lines.first == "v=0" && lines.contains { $0.hasPrefix("o=- ") && !$0.hasPrefix("o=- 0 ") && $0.hasSuffix(" 1 IN IP4 127.0.0.1") })
        for line in ["s=Parley lobby", "c=IN IP4 127.0.0.1", "t=0 0", "m=audio 45000 RTP/SAVP 111", "a=rtpmap:111 opus/48000/2",
                     "a=fmtp:111 minptime=10;useinbandfec=1;stereo=0;sprop-stereo=0", "a=ptime:20", "a=rtcp-mux",
                     "a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level", "a=extmap:3 urn:ietf:params:rtp-hdrext:csrc-audio-level",
                     "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:\(relayKey)", "a=recvonly"] {
            #expect(lines.contains(line), "\(line)")
        }
        #expect(lines.contains { $0.hasPrefix("a=ssrc:\(stream) cname:parley-") })
        #expect(body["ffmpeg_receive_args"] as? [String] == ["-protocol_whitelist", "file,udp,rtp,srtp", "-i", "endpoint.sdp"])
        #expect(body["ffmpeg_send_args"] == nil)
        let pub = json(call("POST", "/v1/rooms/lobby/rtp-endpoints", #"{"identity":"cam","subscribe":false,"source_address":"127.0.0.1:45002"}"#))
        #expect(pub["source_address"] as? String == "127.0.0.1:45002")
        #expect((pub["sdp"] as? String)?.contains("m=audio 7400 RTP/SAVP 111\r\n") == true)
        #expect((pub["sdp"] as? String)?.contains("a=sendonly") == true)
        let pubKey = try #require((pub["srtp"] as? [String: Any])?["endpoint_key"] as? String)
        #expect(pub["ffmpeg_send_args"] as? [String] == ["-payload_type", "111", "-ssrc", "\(pub["ssrc"] as? Int ?? 0)", "-f", "rtp",
                                                          "-srtp_out_suite", "AES_CM_128_HMAC_SHA1_80", "-srtp_out_params", pubKey,
                                                          "srtp://127.0.0.1:7400?localport=45002&rtcpport=7400"])
        let members = json(call("GET", "/v1/rooms/lobby/members"))["members"] as? [[String: Any]] ?? []
        #expect(Set(members.compactMap { $0["identity"] as? String }) == ["rec", "cam"])
        #expect(call("POST", "/v1/rooms/lobby/rtp-endpoints", #"{"identity":"cam","receive_address":"127.0.0.1:45004"}"#).status == 409)
        #expect(call("DELETE", "/v1/rooms/lobby/rtp-endpoints/cam").status == 200)
        #expect(call("DELETE", "/v1/rooms/lobby/rtp-endpoints/cam").status == 404)
        let after = json(call("GET", "/v1/rooms/lobby/members"))["members"] as? [[String: Any]] ?? []
        #expect(after.compactMap { $0["identity"] as? String } == ["rec"])
    }

    @Test("cleartext (\"srtp\": false) is refused with 403 cleartext_refused unless the relay allows cleartext; then plain RTP/AVP")
    func cleartext() throws {
        #expect(call("POST", "/v1/rooms", #"{"name":"lobby"}"#).status == 201)
        let refused = call("POST", "/v1/rooms/lobby/rtp-endpoints", #"{"identity":"rec","publish":false,"receive_address":"127.0.0.1:45000","srtp":false}"#)
        #expect(refused.status == 403 && errorCode(refused) == "cleartext_refused")
        #expect(call("POST", "/v1/rooms/lobby/rtp-endpoints", #"{"identity":"rec","srtp":"no","receive_address":"127.0.0.1:45000"}"#).status == 400)
        var config = RelayCoreConfig()
        config.allowCleartext = true
        let open = CoreBackend(config: config)
        let router = HTTPRouter(backend: open, verifier: TokenVerifier(keys: ["k": RouterTests.secret]),
                                signer: TokenSigner(apiKey: "k", apiSecret: RouterTests.secret), config: config)
        func post(_ path: String, _ body: String) -> HTTPResponse {
            router.route(HTTPRequest(method: "POST", path: path, authorization: "Bearer " + RouterTests.token(admin: true),
                                     body: Array(body.utf8)), now: RouterTests.now)
        }
        #expect(post("/v1/rooms", #"{"name":"lobby"}"#).status == 201)
        let r = post("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"cam","subscribe":false,"source_address":"127.0.0.1:45002","srtp":false}"#)
        #expect(r.status == 201, "\(String(decoding: r.body, as: UTF8.self))")
        let body = json(r)
        #expect(body["srtp"] == nil)
        #expect((body["sdp"] as? String)?.contains("m=audio 7400 RTP/AVP 111\r\n") == true)
        #expect((body["sdp"] as? String)?.contains("a=crypto") == false)
        #expect((body["ffmpeg_send_args"] as? [String])?.last == "rtp://127.0.0.1:7400?localport=45002&rtcpport=7400")
        // Even with cleartext allowed, SRTP stays the default.
        let srtp = json(post("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"mic","subscribe":false,"source_address":"127.0.0.1:45004"}"#))
        #expect(srtp["srtp"] is [String: Any])
    }

    @Test("validation", arguments: [
        ("/v1/rooms/nowhere/rtp-endpoints", #"{"identity":"a","receive_address":"127.0.0.1:45000"}"#, 404, "not_found"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":""}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"tab\there"}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", "{\"identity\":\"" + String(repeating: "a", count: 129) + "\"}", 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","publish":false,"subscribe":false}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","publish":"yes"}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","receive_address":"nowhere"}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a"}"#, 400, "invalid_field"),                     // no address at all
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","publish":false}"#, 400, "invalid_field"),     // a subscriber needs one
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","source_address":"127.0.0.1"}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","receive_address":"127.0.0.1"}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","receive_address":"127.0.0.1:0"}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","receive_address":"127.0.0.1:70000"}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","receive_address":"[::1]:5000"}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a","receive_address":5000}"#, 400, "invalid_field"),
        ("/v1/rooms/lobby/rtp-endpoints", "not json", 400, "invalid_json"),
    ] as [(String, String, Int, String)])
    func validation(path: String, body: String, status: Int, code: String) {
        #expect(call("POST", "/v1/rooms", #"{"name":"lobby"}"#).status == 201)
        let r = call("POST", path, body)
        #expect(r.status == status, "\(String(decoding: r.body, as: UTF8.self))")
        #expect(errorCode(r) == code)
    }

    @Test("admin auth and methods")
    func auth() {
        #expect(call("POST", "/v1/rooms", #"{"name":"lobby"}"#).status == 201)
        #expect(call("POST", "/v1/rooms/lobby/rtp-endpoints", #"{"identity":"a"}"#, admin: false).status == 403)
        let none = router.route(HTTPRequest(method: "POST", path: "/v1/rooms/lobby/rtp-endpoints", authorization: nil,
                                            body: Array(#"{"identity":"a"}"#.utf8)), now: RouterTests.now)
        #expect(none.status == 401)
        #expect(call("GET", "/v1/rooms/lobby/rtp-endpoints").status == 405)
        #expect(call("DELETE", "/v1/rooms/nowhere/rtp-endpoints/a").status == 404)
    }
}
