// OpenSSL 3 (Debian's libssl-dev): DTLS 1.2 for WebRTC members (the relay is the DTLS server, RFC 5763/5764), their
// certificates and fingerprints, and HMAC-SHA1 for STUN's MESSAGE-INTEGRITY (RFC 8489).
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/x509.h>
#include <openssl/bio.h>
#include <openssl/srtp.h>
