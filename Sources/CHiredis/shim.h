// hiredis for Swift: the blocking client (the cluster agent runs on a thread of its own, never a worker's).
#include <hiredis/hiredis.h>
#include <sys/time.h>

/// redisConnectWithTimeout with the timeout in milliseconds; NULL when out of memory (check `err` otherwise).
static inline redisContext *parley_redis_connect(const char *host, int port, int timeout_ms) {
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    if (c != NULL && c->err == 0) redisSetTimeout(c, tv);  // each command's read and write, too
    return c;
}
