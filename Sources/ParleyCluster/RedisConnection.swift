import CHiredis

/// Why a Redis command failed: connecting, the connection (timeout, closed), or Redis refusing the command.
public struct ClusterError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, in one line.
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// One reply of Redis (RESP 2), as hiredis parsed it.
public enum RedisReply: Equatable, Sendable {
    case string(String)
    case status(String)
    case integer(Int64)
    case array([RedisReply])
    case null
    case error(String)

    /// The text of a string or status reply.
    public var text: String? {
        switch self {
        case .string(let s), .status(let s): s
        default: nil
        }
    }
}

/// A blocking connection to one Redis server through hiredis, with a timeout on connecting and on every command: plain
/// TCP (hiredis's own I/O) or, for `rediss://`, TLS over the socket hiredis connected (`RedisTLSStream`); with the
/// URL's password sent by AUTH before anything else. Owned by one thread (the cluster agent's, the message store's, or
/// the API's history reader under its lock); never used on a worker's loop.
public final class RedisConnection {
    private let context: UnsafeMutablePointer<redisContext>
    private let tls: RedisTLSStream?

    /// Connects to `url` (TLS and AUTH as it says); throws when Redis cannot be reached within
    /// `timeoutMilliseconds`, the TLS handshake fails, or Redis refuses the password. No error names the password.
    public init(url: ClusterURL, timeoutMilliseconds: Int = 500) throws(ClusterError) {
        guard let c = parley_redis_connect(url.host, Int32(url.port), Int32(timeoutMilliseconds)) else {
            throw ClusterError("cannot allocate a Redis connection")
        }
        guard c.pointee.err == 0 else {
            let why = Self.errorText(c)
            redisFree(c)
            throw ClusterError("cannot reach Redis at \(url): \(why)")
        }
        if url.tls {
            do {
                tls = try RedisTLSStream(fd: c.pointee.fd, host: url.host, caFile: url.caFile)
            } catch {
                redisFree(c)
                throw ClusterError("\(url): \(error.description)")
            }
        } else {
            tls = nil
        }
        context = c
        if let password = url.password {
            let reply = try command(["AUTH"] + (url.user.map { [$0] } ?? []) + [password])
            if case .error(let why) = reply { throw ClusterError("Redis at \(url) refused the password (AUTH): \(why)") }
        }
    }

    deinit { redisFree(context) }

    /// Runs one command (its words, each sent as a binary-safe argument) and returns Redis's reply. Throws when the
    /// connection failed; a command Redis refused comes back as `.error`. After a throw the connection is unusable.
    public func command(_ words: [String]) throws(ClusterError) -> RedisReply {
        if tls != nil { return try pipeline([words])[0] }
        let arguments = words.map { Array($0.utf8CString) }
        let lengths = words.map { $0.utf8.count }
        let raw: UnsafeMutableRawPointer? = arguments.withUnsafeBufferPointers { pointers in
            lengths.withUnsafeBufferPointer { redisCommandArgv(context, Int32(words.count), pointers, $0.baseAddress) }
        }
        guard let raw else { throw ClusterError("Redis: \(Self.errorText(context))") }
        let reply = raw.assumingMemoryBound(to: redisReply.self)
        defer { freeReplyObject(raw) }
        return Self.convert(reply.pointee)
    }

    /// Runs `commands` in one round trip (pipelined: all sent, then every reply read), replies in order. Throws as
    /// `command` does.
    public func pipeline(_ commands: [[String]]) throws(ClusterError) -> [RedisReply] {
        if let tls {
            try tls.send(commands)
            var replies: [RedisReply] = []
            replies.reserveCapacity(commands.count)
            for _ in commands {
                let raw = try tls.nextReply()
                replies.append(Self.convert(raw.assumingMemoryBound(to: redisReply.self).pointee))
                freeReplyObject(raw)
            }
            return replies
        }
        for words in commands {
            let arguments = words.map { Array($0.utf8CString) }
            let lengths = words.map { $0.utf8.count }
            let status = arguments.withUnsafeBufferPointers { pointers in
                lengths.withUnsafeBufferPointer { redisAppendCommandArgv(context, Int32(words.count), pointers, $0.baseAddress) }
            }
            guard status == REDIS_OK else { throw ClusterError("Redis: \(Self.errorText(context))") }
        }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReply(context, &raw) == REDIS_OK, let raw else { throw ClusterError("Redis: \(Self.errorText(context))") }
            replies.append(Self.convert(raw.assumingMemoryBound(to: redisReply.self).pointee))
            freeReplyObject(raw)
        }
        return replies
    }

    private static func convert(_ r: redisReply) -> RedisReply {
        func text() -> String {
            guard let str = r.str else { return "" }
            return String(decoding: UnsafeRawBufferPointer(start: str, count: Int(r.len)), as: UTF8.self)
        }
        switch r.type {
        case REDIS_REPLY_STRING: return .string(text())
        case REDIS_REPLY_STATUS: return .status(text())
        case REDIS_REPLY_ERROR: return .error(text())
        case REDIS_REPLY_INTEGER: return .integer(r.integer)
        case REDIS_REPLY_ARRAY:
            var items: [RedisReply] = []
            for i in 0..<Int(r.elements) { if let e = r.element[i] { items.append(convert(e.pointee)) } }
            return .array(items)
        default: return .null
        }
    }

    private static func errorText(_ c: UnsafeMutablePointer<redisContext>) -> String {
        withUnsafeBytes(of: c.pointee.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
    }
}

extension Array where Element == [CChar] {
    /// Calls `body` with a C array of pointers to each element's characters (valid only inside `body`).
    func withUnsafeBufferPointers<R>(_ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> R) -> R {
        var pointers: [UnsafePointer<CChar>?] = []
        pointers.reserveCapacity(count)
        func nest(_ i: Int) -> R {
            guard i < count else { return pointers.withUnsafeMutableBufferPointer { body($0.baseAddress!) } }
            return self[i].withUnsafeBufferPointer { p in
                pointers.append(p.baseAddress)
                return nest(i + 1)
            }
        }
        return nest(0)
    }
}
