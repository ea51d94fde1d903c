#define _GNU_SOURCE
#include "CParleySys.h"
#include <errno.h>
#include <sys/socket.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/epoll.h>
#include <sys/statvfs.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>

_Static_assert(sizeof(struct parley_mmsg) == sizeof(struct mmsghdr), "parley_mmsg must mirror mmsghdr");

int parley_accept4(int fd, void *address, unsigned int *length) {
    int c;
    do { c = accept4(fd, (struct sockaddr *)address, (socklen_t *)length, SOCK_NONBLOCK | SOCK_CLOEXEC); } while (c < 0 && errno == EINTR);
    if (c < 0) return -errno;
    int on = 1;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    return c;
}

int parley_tcp_socket(int ipv6) {
    int fd = socket(ipv6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    return fd;
}

long parley_tcp_recv(int fd, void *buffer, unsigned long length) {
    ssize_t n;
    do { n = recv(fd, buffer, length, MSG_DONTWAIT); } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

long parley_tcp_send(int fd, const void *buffer, unsigned long length) {
    ssize_t n;
    do { n = send(fd, buffer, length, MSG_DONTWAIT | MSG_NOSIGNAL); } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

int parley_socket_error(int fd) {
    int error = 0;
    socklen_t size = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return errno;
    return error;
}

int parley_recvmmsg(int fd, struct parley_mmsg *msgs, unsigned int count) {
    int n;
    do { n = recvmmsg(fd, (struct mmsghdr *)msgs, count, MSG_DONTWAIT, NULL); } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

int parley_sendmmsg(int fd, struct parley_mmsg *msgs, unsigned int count) {
    int n;
    do { n = sendmmsg(fd, (struct mmsghdr *)msgs, count, MSG_DONTWAIT); } while (n < 0 && errno == EINTR);
    return n < 0 ? -errno : n;
}

int parley_set_socket_buffers(int fd, int bytes) {
    int rc = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0 &&
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes) != 0) rc = -errno;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0 &&
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes) != 0) rc = -errno;
    return rc;
}

int parley_eventfd(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int parley_epoll_create(void) {
    int fd = epoll_create1(EPOLL_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int parley_epoll_watch(int epoll, int fd, uint64_t token) {
    struct epoll_event e = { .events = EPOLLIN, .data.u64 = token };
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &e) < 0 ? -errno : 0;
}

int parley_epoll_watch_hangup(int epoll, int fd, uint64_t token) {
    struct epoll_event e = { .events = EPOLLRDHUP, .data.u64 = token };
    return epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &e) < 0 ? -errno : 0;
}

int parley_epoll_forget(int epoll, int fd) {
    struct epoll_event unused = { 0 };  // kernels before 2.6.9 want a non-NULL event
    return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, &unused) < 0 ? -errno : 0;
}

int parley_epoll_wait(int epoll, uint64_t *tokens, int capacity, int timeout_ms) {
    struct epoll_event events[256];
    if (capacity > 256) capacity = 256;
    int n;
    do { n = epoll_wait(epoll, events, capacity, timeout_ms); } while (n < 0 && errno == EINTR);
    if (n < 0) return -errno;
    for (int i = 0; i < n; i++) tokens[i] = events[i].data.u64;
    return n;
}

int64_t parley_free_bytes(const char *path) {
    struct statvfs info;
    if (statvfs(path, &info) != 0) return -(int64_t)errno;
    return (int64_t)info.f_bavail * (int64_t)info.f_frsize;
}

int parley_malloc_trim(void) { return malloc_trim(0); }

int parley_set_thread_name(const char *name) { return pthread_setname_np(pthread_self(), name); }

int parley_pin_to_cpus(const int *cpus, int count) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < count; i++) {
        if (cpus[i] < 0 || cpus[i] >= CPU_SETSIZE) return -EINVAL;
        CPU_SET(cpus[i], &set);
    }
    return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : -errno;
}
