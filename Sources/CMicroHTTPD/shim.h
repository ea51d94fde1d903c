// libmicrohttpd for Swift: MHD_start_daemon is variadic, so Swift calls this shim instead.
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <string.h>
#include <microhttpd.h>

/// Starts a daemon on `addr` (IPv4, network order inside) with one thread per connection (event streams
/// block in their content reader), `handler(cls, ...)` for every request and `completed` when one ends.
static inline struct MHD_Daemon *parley_mhd_start(const struct sockaddr_in *addr, MHD_AccessHandlerCallback handler, void *cls,
                                                  MHD_RequestCompletedCallback completed, unsigned int connection_limit) {
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG,
                            ntohs(addr->sin_port), NULL, NULL, handler, cls,
                            MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)addr,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, cls,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120,
                            MHD_OPTION_END);
}

/// The port the daemon listens on (after binding port 0), or 0.
static inline uint16_t parley_mhd_port(struct MHD_Daemon *d) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    return info ? info->port : 0;
}

/// MHD_YES / MHD_NO as plain ints for Swift.
static inline int parley_mhd_yes(void) { return MHD_YES; }
static inline int parley_mhd_no(void) { return MHD_NO; }
/// MHD_CONTENT_READER_END_OF_STREAM.
static inline ssize_t parley_mhd_end_of_stream(void) { return MHD_CONTENT_READER_END_OF_STREAM; }
