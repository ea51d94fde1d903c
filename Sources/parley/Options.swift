import Foundation
import ParleyAuth
import ParleyClientCore
import ParleyNet

/// Command-line parsing shared by the subcommands: `--flag value` and boolean `--flag`.
struct Options {
    var positional: [String] = []
    var values: [String: String] = [:]
    var switches: Set<String> = []

    /// Parses `arguments` given which flags take values and which are switches; exits 2 on anything else.
    init(_ arguments: [String], valued: Set<String>, switches allowed: Set<String>, usage: String) {
        var rest = arguments[...]
        while let arg = rest.popFirst() {
            if arg == "-h" || arg == "--help" {
                writeLine(usage)
                exit(0)
            } else if arg.hasPrefix("--") {
                let name = String(arg.dropFirst(2))
                if valued.contains(name) {
                    guard let v = rest.popFirst() else { fail("--\(name) needs a value\n\(usage)") }
                    values[name] = v
                } else if allowed.contains(name) {
                    switches.insert(name)
                } else {
                    fail("unknown option \(arg)\n\(usage)")
                }
            } else {
                positional.append(arg)
            }
        }
    }

    func has(_ name: String) -> Bool { switches.contains(name) }
    subscript(_ name: String) -> String? { values[name] }
}

/// Prints `parley: message` to standard error and exits with `code`.
func fail(_ message: String, code: Int32 = 2) -> Never {
    writeLine("parley: \(message)", fd: 2)
    exit(code)
}

/// Parses `90`, `90s`, `15m`, `1h`, `2d` into seconds.
func parseDuration(_ text: String) -> Int64? {
    let units: [Character: Int64] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
    if let last = text.last, let unit = units[last] {
        guard let n = Int64(text.dropLast()), n > 0 else { return nil }
        return n * unit
    }
    guard let n = Int64(text), n > 0 else { return nil }
    return n
}

/// The `--token` given, after checking it is `identity`'s: a token minted for someone else would join as them
/// without a word, so the mismatch is refused (exit 2). Nil when no token was given.
func givenToken(_ o: Options, identity: String) -> String? {
    guard let token = o["token"] else { return nil }
    guard let claims = TokenClaims.unverified(token) else { fail("--token is not a Parley token (a JWT from `parley token`)") }
    guard claims.identity == identity else {
        fail("--token is for \(claims.identity), not \(identity): pass --identity \(claims.identity) or a token minted for \(identity)")
    }
    return token
}

/// `--relay-key KEY` and `--cleartext`: how a session protects itself (`SignallingSession.Security`).
enum SecurityOptions {
    /// Flags that take a value.
    static let valued: Set<String> = ["relay-key"]
    /// Switches.
    static let switches: Set<String> = ["cleartext"]
    /// The lines the commands' usage shows.
    static let usage = """
      --relay-key KEY   the relay's public key (43 characters, as its ready line and GET /v1/relay show it); the
                        session ends with exit 11 unless the relay proves it holds it. Default: the token's relay_key
                        claim, else the key the relay presents (encrypted, but not proof against an impostor).
      --cleartext       debugging only: protocol version 1 without encryption (the relay must run --allow-cleartext)
    """

    /// The security the options ask for; `token` is the token the session will present (its `relay_key` claim pins
    /// the relay's key unless `--relay-key` does). Exits 2 on a key that is not 32 bytes of base64url.
    static func security(_ o: Options, token: String?) -> SignallingSession.Security {
        if o.has("cleartext") { return .cleartext }
        let text = o["relay-key"] ?? token.flatMap { TokenClaims.unverified($0)?.relayKey }
        guard let text else { return .encrypted(relayKey: nil) }
        guard let key = Base64URL.decode(Substring(text)), key.count == 32 else {
            fail("the relay key \"\(text)\" is not 43 characters of base64url (32 bytes)")
        }
        return .encrypted(relayKey: key)
    }
}
