#ifndef CPARLEYSYS_H
#define CPARLEYSYS_H
// The few glibc calls Swift cannot see without _GNU_SOURCE, wrapped once. Everything else goes through Glibc.
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>

/// One datagram slot for the batched calls: mirrors `struct mmsghdr` without needing _GNU_SOURCE in Swift.
struct parley_mmsg {
    struct msghdr msg_hdr;
    unsigned int msg_len;
};

/// recvmmsg(2) with MSG_DONTWAIT; returns the count or -errno.
int parley_recvmmsg(int fd, struct parley_mmsg *msgs, unsigned int count);
/// sendmmsg(2) with MSG_DONTWAIT; returns the count sent or -errno.
int parley_sendmmsg(int fd, struct parley_mmsg *msgs, unsigned int count);
/// Sets SO_RCVBUF/SO_SNDBUF, trying SO_*BUFFORCE first (root), returns 0 or -errno.
int parley_set_socket_buffers(int fd, int bytes);

/// accept4(2) non-blocking and close-on-exec, EINTR retried, TCP_NODELAY set; returns the descriptor or -errno.
int parley_accept4(int fd, void *address, unsigned int *length);
/// A non-blocking, close-on-exec TCP socket (IPv6 when `ipv6`), TCP_NODELAY and SO_REUSEADDR set; the descriptor or
/// -errno. (TCPSocket's calls live here: Swift 6.0 loses glibc's socket macros in a module's other files when one
/// file uses them beside UDPSocket's in some build orders.)
int parley_tcp_socket(int ipv6);
/// Pins the calling thread (and the threads and processes it starts afterwards) to the `count` CPUs in `cpus`;
/// 0, or -errno.
int parley_pin_to_cpus(const int *cpus, int count);
/// recv(2) with MSG_DONTWAIT, EINTR retried: bytes read, 0 at end of stream, or -errno.
long parley_tcp_recv(int fd, void *buffer, unsigned long length);
/// send(2) with MSG_DONTWAIT | MSG_NOSIGNAL, EINTR retried: bytes written or -errno.
long parley_tcp_send(int fd, const void *buffer, unsigned long length);
/// The socket's pending error (SO_ERROR) after a non-blocking connect: 0 or the errno.
int parley_socket_error(int fd);

/// eventfd(2) non-blocking and close-on-exec; returns the descriptor or -errno.
int parley_eventfd(void);

/// epoll_create1(2) close-on-exec; returns the descriptor or -errno.
int parley_epoll_create(void);
/// Watches `fd` for input (level-triggered) on `epoll`, reported by `parley_epoll_wait` as `token`; 0 or -errno.
int parley_epoll_watch(int epoll, int fd, uint64_t token);
/// Watches `fd` on `epoll` for its peer closing or resetting the connection only (EPOLLRDHUP; EPOLLHUP and EPOLLERR
/// are always reported), reported as `token`; bytes arriving wake nothing. 0 or -errno.
int parley_epoll_watch_hangup(int epoll, int fd, uint64_t token);
/// Stops watching `fd` on `epoll` (EPOLL_CTL_DEL); 0 or -errno.
int parley_epoll_forget(int epoll, int fd);
/// epoll_wait(2), EINTR retried: the tokens of up to `capacity` ready descriptors; the count (0 on timeout) or -errno.
/// (`struct epoll_event` is packed on x86-64, which Swift cannot lay out: it stays on this side.)
int parley_epoll_wait(int epoll, uint64_t *tokens, int capacity, int timeout_ms);

/// statvfs(3): bytes free to an unprivileged user on the file system holding `path` (f_bavail × f_frsize), or -errno.
int64_t parley_free_bytes(const char *path);

/// malloc_trim(3) with pad 0: gives the free pages of every malloc arena back to the system; 1 if any were.
int parley_malloc_trim(void);

/// pthread_setname_np(3) for the calling thread (`name` at most 15 bytes); returns 0 or an errno value.
int parley_set_thread_name(const char *name);

/// Asks the CPU to bring the cache lines of `count` addresses toward its caches (no fault for any address, freed or
/// unmapped: a prefetch is only a hint), so the next use finds them there.
static inline void parley_prefetch_lines(const void *const *lines, int count) {
    for (int i = 0; i < count; i++) __builtin_prefetch(lines[i], 1, 3);
}

#endif
