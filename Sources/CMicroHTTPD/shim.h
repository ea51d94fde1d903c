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

/// Starts a daemon on `addr` (IPv4, network order inside): one internal thread running an epoll loop over every
/// connection (no thread per connection), with suspend/resume so that answers computed elsewhere and event streams
/// waiting for events do not hold it. `handler(cls, ...)` for every request, `completed` when one ends, `notify` when
/// a connection opens or closes, its messages to `logger`.
static inline struct MHD_Daemon *parley_mhd_start(const struct sockaddr_in *addr, MHD_AccessHandlerCallback handler, void *cls,
                                                  MHD_RequestCompletedCallback completed, MHD_NotifyConnectionCallback notify,
                                                  const struct parley_mhd_logger *logger, struct parley_mhd_limits limits) {
    return MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
                            ntohs(addr->sin_port), NULL, NULL, handler, cls,
                            MHD_OPTION_EXTERNAL_LOGGER, parley_mhd_log, (void *)logger,  // first, or some go to stderr
                            MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, cls,
                            MHD_OPTION_CONNECTION_LIMIT, limits.max_connections,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.per_address,
                            MHD_OPTION_CONNECTION_TIMEOUT, limits.idle_timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits.memory_bytes,
                            MHD_OPTION_END);
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

/// The client's IPv4 address in host order, or 0 when it is not IPv4.
static inline uint32_t parley_mhd_client_ipv4(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || info->client_addr->sa_family != AF_INET) return 0;
    return ntohl(((const struct sockaddr_in *)info->client_addr)->sin_addr.s_addr);
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
