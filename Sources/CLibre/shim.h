// libre (Debian's libre-dev): the SIP stack of the relay's SIP gateway (ParleySIP). Defines as Debian built it, so
// that struct sa (and every struct holding one, struct sip_msg among them) has the library's layout.
#ifndef PARLEY_CLIBRE_SHIM_H
#define PARLEY_CLIBRE_SHIM_H
#define HAVE_INET6 1
#define HAVE_INTTYPES_H 1
#define HAVE_STDBOOL_H 1
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <re/re.h>

// Swift cannot call C variadic functions: fixed-argument wrappers, no extra headers.
static inline int parley_sip_transp_add_udp(struct sip *sip, const struct sa *laddr) {
    return sip_transp_add(sip, SIP_TRANSP_UDP, laddr);
}

static inline int parley_sipsess_accept(struct sipsess **sessp, struct sipsess_sock *sock, const struct sip_msg *msg,
                                        uint16_t scode, const char *reason, const char *cuser, struct mbuf *desc,
                                        sipsess_offer_h *offerh, sipsess_answer_h *answerh,
                                        sipsess_estab_h *estabh, sipsess_close_h *closeh, void *arg) {
    return sipsess_accept(sessp, sock, msg, scode, reason, cuser, "application/sdp", desc, NULL, NULL, false,
                          offerh, answerh, estabh, NULL, NULL, closeh, arg, NULL);
}

static inline int parley_sipsess_connect(struct sipsess **sessp, struct sipsess_sock *sock, const char *to_uri,
                                         const char *from_name, const char *from_uri, const char *cuser,
                                         const char *route, struct mbuf *desc, sip_auth_h *authh, void *aarg,
                                         sipsess_offer_h *offerh, sipsess_answer_h *answerh, sipsess_progr_h *progrh,
                                         sipsess_estab_h *estabh, sipsess_close_h *closeh, void *arg) {
    const char *routev[1] = {route};
    return sipsess_connect(sessp, sock, to_uri, from_name, from_uri, cuser, route ? routev : NULL, route ? 1 : 0,
                           "application/sdp", desc, authh, aarg, false, offerh, answerh, progrh, estabh, NULL, NULL,
                           closeh, arg, NULL);
}

static inline int parley_sipsess_answer(struct sipsess *sess, uint16_t scode, const char *reason, struct mbuf *desc) {
    return sipsess_answer(sess, scode, reason, desc, NULL);
}

static inline int parley_sipsess_progress(struct sipsess *sess, uint16_t scode, const char *reason) {
    return sipsess_progress(sess, scode, reason, NULL, NULL);
}

static inline int parley_sipsess_reject(struct sipsess *sess, uint16_t scode, const char *reason) {
    return sipsess_reject(sess, scode, reason, NULL);
}

// A response with extra header lines (each ending in CRLF: a digest challenge, a registration's Contact) and no body.
static inline int parley_sip_reply(struct sip *sip, const struct sip_msg *msg, uint16_t scode, const char *reason,
                                   const char *headers) {
    return sip_replyf(sip, msg, scode, reason, "%sContent-Length: 0\r\n\r\n", headers);
}

// A provisional answer that keeps the INVITE's server transaction for the final one (sipsess_answer/_reject).
static inline int parley_sipsess_accept_provisional(struct sipsess **sessp, struct sipsess_sock *sock,
                                                    const struct sip_msg *msg, uint16_t scode, const char *reason,
                                                    sipsess_offer_h *offerh, sipsess_answer_h *answerh,
                                                    sipsess_estab_h *estabh, sipsess_close_h *closeh, void *arg) {
    return sipsess_accept(sessp, sock, msg, scode, reason, "parley", "application/sdp", NULL, NULL, NULL, false,
                          offerh, answerh, estabh, NULL, NULL, closeh, arg, NULL);
}
#endif
