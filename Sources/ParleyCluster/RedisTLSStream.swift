import CHiredis
import COpenSSL

/// TLS to Redis (`rediss://`) over the socket hiredis connected: OpenSSL's client (TLS 1.2 at least, the server's
/// certificate checked against the system's CAs or a given CA file, and against the host's name or IP address), with
/// hiredis's own RESP writer (`redisFormatCommandArgv`) and reader (`redisReader`) on either side of it: hiredis 0.14
/// has no TLS of its own. Blocking, with the socket's timeouts (hiredis set them): a read or write that times out
/// fails the connection. Owned by its `RedisConnection`.
final class RedisTLSStream {
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    private let reader: UnsafeMutablePointer<redisReader>

    /// Runs the TLS handshake on `fd` (connected to `host`); throws when it fails or the certificate does not check out.
    init(fd: Int32, host: String, caFile: String?) throws(ClusterError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw ClusterError("TLS: cannot make an OpenSSL context") }
        _ = parley_tls_ctx_set_min_proto_version(context, TLS1_2_VERSION)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        let loaded = caFile.map { SSL_CTX_load_verify_locations(context, $0, nil) == 1 } ?? (SSL_CTX_set_default_verify_paths(context) == 1)
        guard loaded else {
            let why = Self.lastError()
            SSL_CTX_free(context)
            throw ClusterError(caFile.map { "TLS: cannot read the CA file \($0) (cluster_tls_ca): \(why)" } ?? "TLS: cannot load the system's CAs")
        }
        guard let ssl = SSL_new(context) else {
            SSL_CTX_free(context)
            throw ClusterError("TLS: out of memory")
        }
        guard let reader = redisReaderCreate() else {
            SSL_free(ssl)
            SSL_CTX_free(context)
            throw ClusterError("TLS: out of memory")
        }
        self.context = context
        self.ssl = ssl
        self.reader = reader
        // The certificate must name the host: its IP address when HOST is one, else its DNS name (and SNI asks for it).
        let param = SSL_get0_param(ssl)
        if X509_VERIFY_PARAM_set1_ip_asc(param, host) != 1 {
            guard SSL_set1_host(ssl, host) == 1 else { throw ClusterError("TLS: cannot check the server's name \(host)") }
            _ = parley_tls_set_server_name(ssl, host)
        }
        guard SSL_set_fd(ssl, fd) == 1 else { throw ClusterError("TLS: cannot use the socket") }
        ERR_clear_error()
        guard SSL_connect(ssl) == 1 else {
            let verify = SSL_get_verify_result(ssl)
            let why = verify != X509_V_OK ? String(cString: X509_verify_cert_error_string(verify)) : Self.lastError()
            throw ClusterError("TLS handshake with Redis failed: \(why)")
        }
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
        redisReaderFree(reader)
    }

    /// Sends `commands`, each formatted by hiredis (binary-safe arguments), in one write.
    func send(_ commands: [[String]]) throws(ClusterError) {
        var bytes: [UInt8] = []
        for words in commands {
            let arguments = words.map { Array($0.utf8CString) }
            let lengths = words.map { $0.utf8.count }
            var target: UnsafeMutablePointer<CChar>?
            let n = arguments.withUnsafeBufferPointers { pointers in
                lengths.withUnsafeBufferPointer { redisFormatCommandArgv(&target, Int32(words.count), pointers, $0.baseAddress) }
            }
            guard n > 0, let target else { throw ClusterError("Redis: cannot format \(words.first ?? "a command")") }
            bytes += UnsafeRawBufferPointer(start: target, count: Int(n))
            redisFreeCommand(target)
        }
        var sent = 0
        while sent < bytes.count {
            ERR_clear_error()
            let n = bytes[sent...].withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { throw ClusterError("Redis over TLS: write failed (\(errorText(n)))") }
            sent += Int(n)
        }
    }

    /// The next reply, read (and decrypted) until hiredis's reader has one whole; the caller frees it
    /// (`freeReplyObject`).
    func nextReply() throws(ClusterError) -> UnsafeMutableRawPointer {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            var reply: UnsafeMutableRawPointer?
            guard redisReaderGetReply(reader, &reply) == REDIS_OK else { throw ClusterError("Redis over TLS: a reply that is not RESP") }
            if let reply { return reply }
            ERR_clear_error()
            let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            guard n > 0 else { throw ClusterError("Redis over TLS: read failed (\(errorText(n)))") }
            let fed = buffer.withUnsafeBytes { redisReaderFeed(reader, $0.baseAddress!.assumingMemoryBound(to: CChar.self), Int(n)) }
            guard fed == REDIS_OK else { throw ClusterError("Redis over TLS: the reader refused the bytes") }
        }
    }

    /// What went wrong with an SSL_read or SSL_write that returned `result`.
    private func errorText(_ result: Int32) -> String {
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_ZERO_RETURN: "the server closed the connection"
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE: "timed out"
        case SSL_ERROR_SYSCALL: "the connection was lost"
        default: Self.lastError()
        }
    }

    /// OpenSSL's last error, in words.
    static func lastError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "no detail" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
