#define _GNU_SOURCE
#include "CParleySys.h"
#include <errno.h>
#include <sys/socket.h>
#include <string.h>
#include <sys/eventfd.h>
#include <malloc.h>
#include <pthread.h>

_Static_assert(sizeof(struct parley_mmsg) == sizeof(struct mmsghdr), "parley_mmsg must mirror mmsghdr");

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

int parley_malloc_trim(void) { return malloc_trim(0); }

int parley_set_thread_name(const char *name) { return pthread_setname_np(pthread_self(), name); }
