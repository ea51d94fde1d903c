import Foundation

/// The JOSE header of the tokens this module mints and accepts: {"alg":"HS256","kid":…,"typ":"JWT"}.
struct TokenHeader: Codable, Sendable, Equatable {
    /// Signing algorithm; only "HS256" is accepted.
    var alg: String?
    /// API key id naming the secret that signed the token.
    var kid: String?
    /// Media type; "JWT" when minted here, not checked when verifying.
    var typ: String?
}

/// JSON encoding and decoding of token parts, with decoding failures turned into `TokenError.malformed`.
enum TokenJSON {
    /// Encodes with sorted keys and unescaped slashes so minting is deterministic.
    static func encode<Value: Encodable>(_ value: Value) -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return [UInt8](try encoder.encode(value))
        } catch {
            // Headers and claims hold only strings, integers and Booleans, which always encode.
            preconditionFailure("token JSON encoding failed: \(error)")
        }
    }

    /// Decodes `bytes` as `Value`; `part` ("header" or "claims") names the part in error messages.
    static func decode<Value: Decodable>(_ type: Value.Type, from bytes: [UInt8], part: String) throws(TokenError) -> Value {
        do {
            return try JSONDecoder().decode(type, from: Data(bytes))
        } catch let error as DecodingError {
            throw .malformed(describe(error, part: part))
        } catch {
            throw .malformed("the \(part) part is not valid JSON")
        }
    }

    /// A short description of a decoding failure naming the offending field, e.g. "exp has the wrong type".
    static func describe(_ error: DecodingError, part: String) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map(\.stringValue).joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context)
            return parent.isEmpty ? "\(key.stringValue) is missing" : "\(parent).\(key.stringValue) is missing"
        case .typeMismatch(_, let context):
            let field = path(context)
            return field.isEmpty ? "the \(part) part is not a JSON object" : "\(field) has the wrong type"
        case .valueNotFound(_, let context):
            let field = path(context)
            return field.isEmpty ? "the \(part) part is null" : "\(field) is null"
        case .dataCorrupted(let context):
            let field = path(context)
            return field.isEmpty ? "the \(part) part is not valid JSON" : "\(field) is invalid"
        @unknown default:
            return "the \(part) part could not be decoded"
        }
    }
}

/// Checks for identity and room names: 1...128 UTF-8 bytes, no control characters.
enum TokenNameRules {
    /// Longest identity or room name, in UTF-8 bytes.
    static let maximumBytes = 128

    /// Nil when `name` is acceptable, else what is wrong with it (prefixed by `field`).
    static func problem(with name: String, field: String) -> String? {
        let count = name.utf8.count
        if count == 0 { return "\(field) is empty" }
        if count > maximumBytes { return "\(field) is longer than \(maximumBytes) bytes" }
        for scalar in name.unicodeScalars where scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
            return "\(field) contains a control character"
        }
        return nil
    }
}
