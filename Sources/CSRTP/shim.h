// libsrtp2 (Debian's libsrtp2-dev): the SDES profile AES_CM_128_HMAC_SHA1_80 of plain-RTP endpoints.
#include <srtp2/srtp.h>
