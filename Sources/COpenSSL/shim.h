// OpenSSL 3 (Debian's libssl-dev): TLS to a cluster's Redis (rediss://); DTLS 1.2 for WebRTC members (the relay is the DTLS server, RFC 5763/5764), their
// certificates and fingerprints, and HMAC-SHA1 for STUN's MESSAGE-INTEGRITY (RFC 8489).
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/srtp.h>

// DTLS
// OpenSSL's configuration calls below are macros (or variadic), which Swift cannot import: one static inline function
// each, named after the macro. Used by ParleyWebRTC's DTLSCertificate, DTLSContext and DTLSSession.
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <sys/time.h>

/// `EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")`: a fresh ECDSA P-256 key (the call is variadic).
static inline EVP_PKEY *parley_dtls_keygen_p256(void) { return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"); }
/// The options every DTLS context sets: no MTU probing (the write BIO is not a socket), no tickets, no renegotiation,
/// server-preferred cipher order.
static inline uint64_t parley_dtls_context_options(void) {
    return SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE;
}
/// `SSL_CTX_set_min_proto_version`.
static inline int parley_dtls_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
/// `SSL_CTX_set_read_ahead`.
static inline void parley_dtls_ctx_set_read_ahead(SSL_CTX *ctx, int yes) { SSL_CTX_set_read_ahead(ctx, yes); }
/// `SSL_CTX_set1_groups_list`.
static inline int parley_dtls_ctx_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return (int)SSL_CTX_set1_groups_list(ctx, list);
}
/// `SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF)`.
static inline void parley_dtls_ctx_disable_session_cache(SSL_CTX *ctx) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
}
/// `SSL_CTX_set_max_cert_list`.
static inline void parley_dtls_ctx_set_max_cert_list(SSL_CTX *ctx, long bytes) { SSL_CTX_set_max_cert_list(ctx, bytes); }
/// `SSL_set_mtu`: the MTU when taken, 0 when below DTLS's minimum.
static inline int parley_dtls_set_mtu(SSL *ssl, long mtu) { return (int)SSL_set_mtu(ssl, mtu); }
/// `DTLSv1_get_timeout` in microseconds, or -1 when no retransmission timer runs. OpenSSL reads the real clock here.
static inline long long parley_dtls_get_timeout_us(SSL *ssl) {
    struct timeval tv;
    if (DTLSv1_get_timeout(ssl, &tv) != 1) return -1;
    return (long long)tv.tv_sec * 1000000LL + (long long)tv.tv_usec;
}
/// `DTLSv1_handle_timeout`: 1 retransmitted, 0 the timer had not expired (OpenSSL's clock) or none runs, -1 failed.
static inline int parley_dtls_handle_timeout(SSL *ssl) { return (int)DTLSv1_handle_timeout(ssl); }
/// `BIO_set_mem_eof_return`.
static inline void parley_dtls_bio_set_mem_eof_return(BIO *bio, int value) { BIO_set_mem_eof_return(bio, value); }
/// `BIO_reset`: a memory BIO forgets what it holds.
static inline void parley_dtls_bio_reset(BIO *bio) { (void)BIO_reset(bio); }
/// `BIO_ctrl_pending`: bytes a memory BIO still holds.
static inline size_t parley_dtls_bio_pending(BIO *bio) { return BIO_ctrl_pending(bio); }
/// `SSL_get_app_data`: `SSL_get_ex_data(ssl, 0)`.
static inline void *parley_dtls_get_app_data(const SSL *ssl) { return SSL_get_app_data(ssl); }
/// `SSL_set_app_data`.
static inline void parley_dtls_set_app_data(SSL *ssl, void *data) { (void)SSL_set_app_data(ssl, data); }

// TLS to the cluster's Redis (`rediss://`, ParleyCluster's RedisTLSStream): the client side over hiredis's socket.
/// `SSL_CTX_set_min_proto_version` (a macro).
static inline int parley_tls_ctx_set_min_proto_version(SSL_CTX *ctx, int version) { return (int)SSL_CTX_set_min_proto_version(ctx, version); }
/// `SSL_set_tlsext_host_name` (a macro): the server name the client asks for (SNI).
static inline int parley_tls_set_server_name(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }
