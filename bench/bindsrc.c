/* LD_PRELOAD shim for bench/failover: every IPv4 TCP connection the process makes leaves from
 * the loopback address in BIND_SRC (e.g. 127.0.0.2) instead of 127.0.0.1. The failover
 * proxies tell clients apart by their source address, so the holder can be cut off from
 * everything while a rival on another address still gets through, with no network namespace
 * and no address outside 127.0.0.0/8. Built by bench/failover with the system C compiler:
 *
 *   cc -O2 -shared -fPIC -o bindsrc.so bench/bindsrc.c -ldl
 *
 * Anything other than an IPv4 connect to a 127.0.0.0/8 destination is left alone, and so is
 * any BIND_SRC outside 127.0.0.0/8. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static int loopback(struct in_addr a) {
    return (ntohl(a.s_addr) >> 24) == 127;
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static connect_fn real;
    if (!real) real = (connect_fn)dlsym(RTLD_NEXT, "connect");
    const char *src = getenv("BIND_SRC");
    if (src && addr && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in to;
        memcpy(&to, addr, sizeof to);
        struct sockaddr_in from;
        memset(&from, 0, sizeof from);
        from.sin_family = AF_INET;
        if (loopback(to.sin_addr) && inet_pton(AF_INET, src, &from.sin_addr) == 1 &&
            loopback(from.sin_addr)) {
            /* A socket already bound (by the program itself) keeps its address. */
            (void)bind(fd, (struct sockaddr *)&from, sizeof from);
        }
    }
    return real(fd, addr, len);
}
