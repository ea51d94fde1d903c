// JSON in and out of the API, the checks on names and fields, and the API's errors.

import Foundation
import ParleyAuth

extension HTTPRouter {
    // MARK: JSON and validation

    /// Whether `text` is an X25519 public key in base64url without padding, as the relay shows its own.
    static func isRelayKey(_ text: String) -> Bool {
        text.utf8.count == 43 && Base64URL.decode(Substring(text)).map { Base64URL.encode($0) == text && $0.count == 32 } == true
    }

    static func noRoom(_ name: String) -> APIError { APIError(404, "not_found", "room \(name) does not exist") }

    /// A name the relay accepts: 1–128 bytes of UTF-8 without control characters.
    static func validName(_ name: String, field: String) throws(APIError) -> String {
        guard !name.isEmpty else { throw APIError(400, "invalid_field", "\(field) must not be empty") }
        guard name.utf8.count <= maxNameBytes else { throw APIError(400, "invalid_field", "\(field) is longer than \(maxNameBytes) bytes") }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw APIError(400, "invalid_field", "\(field) contains control characters")
        }
        return name
    }

    static func decode<T: Decodable>(_ type: T.Type, _ body: [UInt8]) throws(APIError) -> T {
        guard body.count <= maxBodyBytes else { throw APIError(413, "body_too_large", "the body is larger than \(maxBodyBytes) bytes") }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        do {
            return try decoder.decode(T.self, from: Data(body.isEmpty ? Array("{}".utf8) : body))
        } catch let DecodingError.typeMismatch(expected, context) where !context.codingPath.isEmpty {
            throw APIError(400, "invalid_field", "\(Self.path(context)) must be \(Self.typeName(expected))")
        } catch let DecodingError.keyNotFound(key, _) {
            throw APIError(400, "invalid_field", "\(key.stringValue.snakeCased) is required")
        } catch let DecodingError.valueNotFound(expected, context) {
            throw APIError(400, "invalid_field", "\(Self.path(context)) must be \(Self.typeName(expected)), not null")
        } catch let DecodingError.dataCorrupted(context) where !context.codingPath.isEmpty {
            throw APIError(400, "invalid_field", "\(Self.path(context)) is not valid: \(context.debugDescription)")
        } catch {
            throw APIError(400, "invalid_json", "the body must be a JSON object")
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map(\.stringValue.snakeCased).joined(separator: ".")
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is UInt32.Type: "an integer"
        default: "\(type)".lowercased()
        }
    }

    /// Encodes `value` as snake_case JSON with sorted keys.
    public static func json<T: Encodable>(_ value: T, status: Int = 200) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return HTTPResponse(status: status, body: Array(data) + [0x0A])
    }
}

/// An API error: a status, a code and a message, answered as `{"error": {...}}`.
public struct APIError: Error, Equatable, Sendable {
    /// HTTP status.
    public var status: Int
    /// Machine-readable code.
    public var code: String
    /// For people.
    public var message: String
    /// Headers the answer carries besides (`Retry-After`).
    public var headers: [String: String] = [:]

    /// An error.
    public init(_ status: Int, _ code: String, _ message: String, headers: [String: String] = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    /// The JSON response.
    public var response: HTTPResponse {
        var r = HTTPRouter.json(API.ErrorBody(error: .init(code: code, message: message)), status: status)
        for (name, value) in headers { r.headers[name] = value }
        return r
    }
}

extension String {
    /// `maxMembers` → `max_members`.
    var snakeCased: String {
        var out = ""
        for c in self {
            if c.isUppercase { out += "_" + c.lowercased() } else { out.append(c) }
        }
        return out
    }
}
