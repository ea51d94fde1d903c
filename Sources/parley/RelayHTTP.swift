import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// The relay's HTTP API as the commands reach it: `PARLEY_URL` (default http://127.0.0.1:7480), a bearer token, one
/// request at a time. `exchange` waits for the answer (the API commands; an upload before a session starts); `start`
/// hands it to a closure on URLSession's queue (downloads while a session runs: its loop must not wait on them).
enum RelayHTTP {
    /// The API's base URL.
    static var base: String { ProcessInfo.processInfo.environment["PARLEY_URL"] ?? "http://127.0.0.1:7480" }

    /// What the relay answered.
    struct Answer: Sendable {
        var status: Int
        var body: Data
        /// The `Content-Type` header, if any.
        var contentType: String?

        /// A 2xx status.
        var isSuccess: Bool { (200..<300).contains(status) }
        /// The body as a JSON object (empty when it is not one).
        var object: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        /// "404 not_found: no attachment …": the status and the API's error code and message, for a one-line report.
        var refusal: String {
            let e = object["error"] as? [String: Any]
            return "\(status) \(e?["code"] ?? "error"): \(e?["message"] ?? "")"
        }
    }

    /// Why no answer came.
    enum Failure: Error, Sendable {
        /// `PARLEY_URL` (with the path) is not a URL.
        case badURL(String)
        /// No HTTP answer: refused, unreachable, timed out.
        case unreachable(String)

        /// For people.
        var message: String {
            switch self {
            case .badURL(let base): "PARLEY_URL \(base) is not a URL"
            case .unreachable(let why): "cannot reach the relay at \(RelayHTTP.base): \(why)"
            }
        }
    }

    /// Sends one request and calls `then` with the outcome, on URLSession's queue.
    static func start(_ method: String, _ path: String, token: String, body: Data? = nil, contentType: String? = nil, timeout: Double = 5,
                      then: @escaping @Sendable (Result<Answer, Failure>) -> Void) {
        guard let url = URL(string: base + path) else { return then(.failure(.badURL(base))) }
        var r = URLRequest(url: url, timeoutInterval: timeout)
        r.httpMethod = method
        r.setValue("Bearer " + token, forHTTPHeaderField: "Authorization")
        if let body {
            r.httpBody = body
            r.setValue(contentType ?? "application/octet-stream", forHTTPHeaderField: "Content-Type")
        }
        URLSession.shared.dataTask(with: r) { data, response, error in
            guard let http = response as? HTTPURLResponse else {
                return then(.failure(.unreachable(error?.localizedDescription ?? "no answer")))
            }
            then(.success(Answer(status: http.statusCode, body: data ?? Data(), contentType: http.value(forHTTPHeaderField: "Content-Type"))))
        }.resume()
    }

    /// Sends one request and waits for the outcome.
    static func exchange(_ method: String, _ path: String, token: String, body: Data? = nil, contentType: String? = nil,
                         timeout: Double = 5) -> Result<Answer, Failure> {
        let result = Mutex<Result<Answer, Failure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        start(method, path, token: token, body: body, contentType: contentType, timeout: timeout) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 } ?? .failure(.unreachable("no answer"))
    }
}
