import CCurl
import Synchronization

/// The webhooks' HTTP client: libcurl's multi interface, many POSTs at once on the dispatcher's thread. Each attempt
/// has a connect timeout and a total one, follows no redirect, speaks only http and https, and reads at most 64 KiB of
/// the answer (thrown away): a hostile or slow receiver costs one transfer slot until the timeout, nothing more.
/// Owned by one thread, except `wake`, which any thread may call.
final class WebhookTransport: @unchecked Sendable {
    // Invariant: `multi`'s transfers and `running` are touched only by the owning thread; `wake` calls
    // curl_multi_wakeup, which libcurl makes safe from any thread.
    private let multi: UnsafeMutableRawPointer
    private var running: [Int: Transfer] = [:]
    private var nextTag = 0
    /// The most a whole attempt may take, and its connect (ms).
    let timeoutMilliseconds: Int, connectTimeoutMilliseconds: Int

    /// One attempt's handles, freed when it ends.
    private final class Transfer {
        let easy: UnsafeMutableRawPointer
        let headers: UnsafeMutablePointer<curl_slist>?
        let seen = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        init(easy: UnsafeMutableRawPointer, headers: UnsafeMutablePointer<curl_slist>?) {
            self.easy = easy
            self.headers = headers
            seen.initialize(to: 0)
        }
        deinit {
            curl_easy_cleanup(easy)
            curl_slist_free_all(headers)
            seen.deallocate()
        }
    }

    /// How an attempt ended: an HTTP status (0: none), and libcurl's error when the transfer failed.
    struct Outcome: Equatable {
        var status: Int
        var error: String?
        /// A 2xx status: the receiver took the event (even when the rest of a long answer was cut off).
        var delivered: Bool { (200...299).contains(status) }
    }

    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// A client; nil when libcurl cannot start.
    init?(timeoutMilliseconds: Int = 10_000, connectTimeoutMilliseconds: Int = 5_000) {
        guard Self.globalInit, let m = curl_multi_init() else { return nil }
        multi = m
        self.timeoutMilliseconds = timeoutMilliseconds
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
    }

    deinit {
        for t in running.values { curl_multi_remove_handle(multi, t.easy) }
        running.removeAll()
        curl_multi_cleanup(multi)
    }

    /// Attempts under way.
    var inFlight: Int { running.count }

    /// Starts a POST of `body` to `url` with `headers` ("Name: value"); returns its tag, or nil when libcurl refused
    /// it.
    func post(url: String, headers: [String], body: String) -> Int? {
        guard let easy = curl_easy_init() else { return nil }
        var list: UnsafeMutablePointer<curl_slist>?
        for h in headers + ["Content-Type: application/json", "Expect:"] {
            guard let appended = curl_slist_append(list, h) else {
                curl_slist_free_all(list); curl_easy_cleanup(easy); return nil
            }
            list = appended
        }
        let t = Transfer(easy: easy, headers: list)
        var ok = parley_curl_easy_setopt_string(easy, CURLOPT_URL, url) == CURLE_OK
        ok = ok && parley_curl_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK
        ok = ok && parley_curl_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0) == CURLE_OK
        ok = ok && parley_curl_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1) == CURLE_OK
        ok = ok && parley_curl_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMilliseconds) == CURLE_OK
        ok = ok && parley_curl_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMilliseconds) == CURLE_OK
        ok = ok && parley_curl_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list) == CURLE_OK
        ok = ok && parley_curl_easy_setopt_long(easy, CURLOPT_POSTFIELDSIZE, body.utf8.count) == CURLE_OK
        ok = ok && parley_curl_easy_setopt_string(easy, CURLOPT_COPYPOSTFIELDS, body) == CURLE_OK
        ok = ok && parley_curl_easy_setopt_string(easy, CURLOPT_USERAGENT, "parley-relay webhooks") == CURLE_OK
        ok = ok && parley_curl_easy_discard_body(easy, t.seen) == CURLE_OK
        guard ok, curl_multi_add_handle(multi, easy) == CURLM_OK else { return nil }
        nextTag += 1
        running[nextTag] = t
        _ = parley_curl_easy_setopt_pointer(easy, CURLOPT_PRIVATE, UnsafeMutableRawPointer(bitPattern: nextTag))
        return nextTag
    }

    /// Moves the transfers on, waiting at most `timeoutMilliseconds` for a socket (or `wake`); returns the attempts
    /// that ended, by tag.
    func poll(timeoutMilliseconds: Int) -> [(tag: Int, outcome: Outcome)] {
        var active: Int32 = 0
        curl_multi_perform(multi, &active)
        var ended = finished()
        if ended.isEmpty {
            curl_multi_poll(multi, nil, 0, Int32(clamping: timeoutMilliseconds), nil)
            curl_multi_perform(multi, &active)
            ended = finished()
        }
        return ended
    }

    private func finished() -> [(tag: Int, outcome: Outcome)] {
        var out: [(tag: Int, outcome: Outcome)] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle else { continue }
            let result = message.pointee.data.result
            var tagPointer: UnsafeMutableRawPointer?
            _ = parley_curl_easy_getinfo_pointer(easy, CURLINFO_PRIVATE, &tagPointer)
            var status = 0
            _ = parley_curl_easy_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            let tag = Int(bitPattern: tagPointer)
            curl_multi_remove_handle(multi, easy)
            running[tag] = nil
            let error = result == CURLE_OK ? nil : String(cString: curl_easy_strerror(result))
            out.append((tag, Outcome(status: status, error: error)))
        }
        return out
    }

    /// Wakes `poll` early (new events to send; any thread).
    func wake() { curl_multi_wakeup(multi) }
}
