/* LD_PRELOAD shim for the wall-clock test: the wall clock (CLOCK_REALTIME, gettimeofday, time)
 * of every process that loads it jumps by CLOCKSHIFT_SECONDS once the monotonic clock, which all
 * processes share, passes CLOCKSHIFT_AT_NS: as an NTP step or an operator's `date -s` would.
 * The monotonic clock is left alone. Built by the tests with the system C compiler. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long mono_ns(void) {
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long shift_ns(void) {
    const char *at = getenv("CLOCKSHIFT_AT_NS");
    const char *by = getenv("CLOCKSHIFT_SECONDS");
    if (!at || !by || mono_ns() < atoll(at)) return 0;
    return atoll(by) * 1000000000LL;
}

static int is_wall(clockid_t clk) {
    return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = (int)syscall(SYS_clock_gettime, clk, ts);
    if (r == 0 && is_wall(clk)) {
        long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + shift_ns();
        ts->tv_sec = ns / 1000000000LL;
        ts->tv_nsec = ns % 1000000000LL;
    }
    return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    struct timespec ts;
    int r = clock_gettime(CLOCK_REALTIME, &ts);
    if (r == 0 && tv) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return r;
}

time_t time(time_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (t) *t = ts.tv_sec;
    return ts.tv_sec;
}
