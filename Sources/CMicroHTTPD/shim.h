// libmicrohttpd for Swift: MHD_start_daemon, MHD_set_connection_option and the info getters are variadic, so Swift
// calls these shims instead.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <string.h>
#include <microhttpd.h>

/// A query (URI) argument of the request, percent-decoded, or NULL (Swift does not see MHD_GET_ARGUMENT_KIND).
static inline const char *parley_mhd_query_value(struct MHD_Connection *connection, const char *key) {
    return MHD_lookup_connection_value(connection, MHD_GET_ARGUMENT_KIND, key);
}

/// What `parley_mhd_start` hands to libmicrohttpd besides the callbacks (HTTPLimits in Swift).
struct parley_mhd_limits {
    unsigned int max_connections;       // MHD_OPTION_CONNECTION_LIMIT
    unsigned int per_address;           // MHD_OPTION_PER_IP_CONNECTION_LIMIT
    unsigned int idle_timeout_seconds;  // MHD_OPTION_CONNECTION_TIMEOUT: no byte moved for this long closes it
    size_t memory_bytes;                // MHD_OPTION_CONNECTION_MEMORY_LIMIT: headers and buffers of one connection
};

/// Where libmicrohttpd's messages go: `line(cls, text)`, one formatted line at a time (Swift cannot take a va_list
/// callback). Owned by the caller; must outlive the daemon.
struct parley_mhd_logger {
    void (*line)(void *cls, const char *text);
    void *cls;
};

/// MHD_LogCallback that formats and hands the line to a `parley_mhd_logger`.
static inline void parley_mhd_log(void *cls, const char *format, va_list ap) {
    const struct parley_mhd_logger *logger = (const struct parley_mhd_logger *)cls;
    char text[256];
    vsnprintf(text, sizeof text, format, ap);
    logger->line(logger->cls, text);
}

/// The TLS versions HTTPS offers (GnuTLS priority string): 1.3 and 1.2, GnuTLS's NORMAL ciphers.
#define PARLEY_MHD_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

/// Fills `items` (4 entries) with the HTTPS options for MHD_OPTION_ARRAY: the PEM certificate (chain) and key and
/// the TLS versions, or nothing when `cert_pem` or `key_pem` is NULL. The strings must outlive the daemon.
static inline void parley_mhd_tls_options(struct MHD_OptionItem items[4], const char *cert_pem, const char *key_pem) {
    struct MHD_OptionItem end = {MHD_OPTION_END, 0, NULL};
    items[0] = items[1] = items[2] = items[3] = end;
    if (cert_pem == NULL || key_pem == NULL) return;
    items[0] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)cert_pem};
    items[1] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)key_pem};
    items[2] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)PARLEY_MHD_TLS_PRIORITIES};
}

/// 1 when this libmicrohttpd was built with TLS (Debian's is, with GnuTLS).
static inline int parley_mhd_has_tls(void) { return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES; }

/// Whether GnuTLS (through libmicrohttpd) takes `cert_pem` and `key_pem` as a matching certificate and key: starts a
/// daemon with TLS and no socket and stops it at once. 1 yes, 0 no (the reason goes to `logger`).
static inline int parley_mhd_check_tls(const char *cert_pem, const char *key_pem, MHD_AccessHandlerCallback handler,
                                       const struct parley_mhd_logger *logger) {
    struct MHD_OptionItem tls[4];
    parley_mhd_tls_options(tls, cert_pem, key_pem);
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG, 0, NULL, NULL, handler, NULL,
                                            MHD_OPTION_EXTERNAL_LOGGER, parley_mhd_log, (void *)logger,
                                            MHD_OPTION_ARRAY, tls,
                                            MHD_OPTION_END);
    if (d == NULL) return 0;
    MHD_stop_daemon(d);
    return 1;
}

/// Starts a daemon on `addr` (IPv4, network order inside): one internal thread running an epoll loop over every
/// connection (no thread per connection), with suspend/resume so that answers computed elsewhere and event streams
/// waiting for events do not hold it. `handler(cls, ...)` for every request, `completed` when one ends, `notify` when
/// a connection opens or closes, its messages to `logger`. HTTPS with `cert_pem` and `key_pem` (PEM text, kept by the
/// caller until the daemon stops) when both are given, plain HTTP when they are NULL.
/// `addr` is a `sockaddr_in` or `sockaddr_in6` (`ipv6` 1); `dual_stack` 1 serves IPv4 on an IPv6 wildcard too.
/// `listen_fd` ≥ 0: serve on that listening socket (another daemon's, handed over at a reload) instead of binding.
/// ITC (an eventfd) lets `MHD_quiesce_daemon` stop the internal thread's accepting without a race.
static inline struct MHD_Daemon *parley_mhd_start(const struct sockaddr *addr, int ipv6, int dual_stack, int listen_fd,
                                                  MHD_AccessHandlerCallback handler, void *cls,
                                                  MHD_RequestCompletedCallback completed, MHD_NotifyConnectionCallback notify,
                                                  const struct parley_mhd_logger *logger, struct parley_mhd_limits limits,
                                                  const char *cert_pem, const char *key_pem) {
    struct MHD_OptionItem tls[4];
    parley_mhd_tls_options(tls, cert_pem, key_pem);
    const int https = tls[0].option != MHD_OPTION_END;
    const unsigned int family = dual_stack ? MHD_USE_DUAL_STACK : ipv6 ? MHD_USE_IPv6 : 0;
    const uint16_t port = ipv6 ? ntohs(((const struct sockaddr_in6 *)addr)->sin6_port) : ntohs(((const struct sockaddr_in *)addr)->sin_port);
    struct MHD_OptionItem where[2] = {{MHD_OPTION_SOCK_ADDR, 0, (void *)addr}, {MHD_OPTION_END, 0, NULL}};
    if (listen_fd >= 0) where[0] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL};
    return MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG | MHD_USE_ITC
                                | (https ? MHD_USE_TLS : 0) | family,
                            port, NULL, NULL, handler, cls,
                            MHD_OPTION_EXTERNAL_LOGGER, parley_mhd_log, (void *)logger,  // first, or some go to stderr
                            MHD_OPTION_ARRAY, tls,
                            MHD_OPTION_ARRAY, where,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, cls,
                            MHD_OPTION_CONNECTION_LIMIT, limits.max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.per_address,
                            MHD_OPTION_CONNECTION_TIMEOUT, limits.idle_timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits.memory_bytes,
                            MHD_OPTION_END);
}

/// The daemon's listening socket, or -1.
static inline int parley_mhd_listen_fd(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_LISTEN_FD);
    return info ? info->listen_fd : -1;
}

/// The daemon's open connections.
static inline unsigned int parley_mhd_connections(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info ? info->num_connections : 0;
}

/// The port the daemon listens on (after binding port 0), or 0.
static inline uint16_t parley_mhd_port(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// Sets one connection's inactivity timeout (MHD_CONNECTION_OPTION_TIMEOUT), overriding the daemon's.
static inline void parley_mhd_set_timeout(struct MHD_Connection *c, unsigned int seconds) {
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

/// Copies the client's address (AF_INET or AF_INET6) into `out`; 0 when there is none.
static inline int parley_mhd_client_address(struct MHD_Connection *c, struct sockaddr_storage *out) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return 0;
    switch (info->client_addr->sa_family) {
    case AF_INET: memcpy(out, info->client_addr, sizeof(struct sockaddr_in)); return 1;
    case AF_INET6: memcpy(out, info->client_addr, sizeof(struct sockaddr_in6)); return 1;
    default: return 0;
    }
}

/// The connection's socket, or -1.
static inline int parley_mhd_socket(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

/// MHD_YES / MHD_NO as plain ints for Swift.
static inline int parley_mhd_yes(void) { return MHD_YES; }
static inline int parley_mhd_no(void) { return MHD_NO; }
/// MHD_CONTENT_READER_END_OF_STREAM.
static inline ssize_t parley_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
/// MHD_CONTENT_READER_END_WITH_ERROR: the response cannot go on; libmicrohttpd closes the connection at once.
static inline ssize_t parley_mhd_end_with_error(void) { return MHD_CONTENT_READER_END_WITH_ERROR; }
