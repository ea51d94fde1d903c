import ParleyAuth
import ParleyWebRTC

/// The STUN and TURN servers a WebRTC member should use (`turn_urls`, with credentials from `turn_secret`), for any
/// token of this relay with the `join` grant, or an admin token:
///
///     GET     /v1/ice-servers   → 200 {"ice_servers": [{"urls": [...], "username": "…", "credential": "…"}]}
///                                 ({"ice_servers": []} when none are configured)
///     OPTIONS /v1/ice-servers   the CORS preflight, without a token
///
/// The list is what `RTCPeerConnection({iceServers})` takes; a TURN entry's username is `EXPIRY:IDENTITY` for the
/// token's identity (`TURNCredential`). The same servers come as `Link` headers on the 201 answers of WHIP, WHEP
/// and the combined endpoint (RFC 9725 §4.6), for clients that read them there. Answered at admission: nothing in
/// it waits for a worker. The shared secret is in no answer, only what it signs.
extension HTTPRouter {
    /// `/v1/ice-servers`, as the router splits paths.
    static let iceServersPath = ["v1", "ice-servers"]

    /// Answers `/v1/ice-servers` (at admission, and from `route` alike).
    func answerICEServers(_ request: HTTPRequest, now: Int64) -> HTTPResponse {
        if request.method == "OPTIONS" { return Self.preflight }
        do throws(APIError) {
            let claims = try bearerClaims(request, now: now,
                                          missing: "a member token is required (Authorization: Bearer)")
            guard claims.grants.join || claims.grants.admin else {
                throw APIError(403, "forbidden", "the token does not grant join")
            }
            try allow(request.method, "GET")
            var response = Self.json(API.ICEServerList(iceServers: iceServers.servers(for: claims.identity, now: now)))
            // Credentials: not for a cache to keep or hand to someone else.
            response.headers["Cache-Control"] = "no-store"
            return Self.withCORS(response)
        } catch {
            return Self.withCORS(error.response)
        }
    }

    /// The `Link` header of a WHIP, WHEP or combined answer for `identity` at `now` (RFC 9725 §4.6): one link per
    /// URL, joined with ", " (one header field, as HTTP allows for `Link`: RFC 8288 §3, RFC 9110 §5.3), TURN ones
    /// with their credential; nil when no servers are configured.
    ///
    ///     <stun:stun.example.net>; rel="ice-server",
    ///     <turn:turn.example.net?transport=udp>; rel="ice-server"; username="1700000000:ann"; credential="…";
    ///         credential-type="password"
    func iceServerLinks(identity: String, now: Int64) -> String? {
        var links: [String] = []
        for server in iceServers.servers(for: identity, now: now) {
            for url in server.urls {
                var link = "<\(url)>; rel=\"ice-server\""
                if let username = server.username, let credential = server.credential {
                    link += "; username=\(Self.quoted(username)); credential=\(Self.quoted(credential))"
                        + "; credential-type=\"password\""
                }
                links.append(link)
            }
        }
        return links.isEmpty ? nil : links.joined(separator: ", ")
    }

    /// `text` as an HTTP quoted-string (RFC 9110 §5.6.4): `"` and `\` escaped. (A `TURNCredential` holds neither;
    /// this keeps it so whatever the text.)
    static func quoted(_ text: String) -> String {
        var out = "\""
        for c in text.unicodeScalars {
            if c == "\"" || c == "\\" { out.unicodeScalars.append("\\") }
            out.unicodeScalars.append(c)
        }
        return out + "\""
    }
}
