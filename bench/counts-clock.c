/* LD_PRELOAD shim for bench/counts: the monotonic clocks of the process that loads it run
 * COUNTS_SLOWER times slower than the machine's, from the moment it starts. The wall clock
 * (CLOCK_REALTIME) is left alone: the server's TIME and the host's must agree.
 *
 * Why: under valgrind dlock runs some 50 times slower than natively, and slower still on a
 * loaded machine, so its own timers come due on paths a native run never takes (the
 * connection's first look 100 ms into the job, the cancel listener at 250 ms: a `true` job
 * under callgrind is "held" 100 to 600 ms). Its clock slowed by more than that (bench/counts
 * says how much), dlock takes the path a native run takes, every time.
 *
 * No system call and no allocation per reading: the real clock_gettime (the vDSO's) is found
 * once, when the shim is loaded. Built by bench/counts with the system C compiler. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

typedef int (*clock_fn)(clockid_t, struct timespec *);
static clock_fn real_clock;
static long long slower = 1;
static long long origin[8];

static long long ns(const struct timespec *ts) {
    return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static int is_monotonic(clockid_t clk) {
    return clk == CLOCK_MONOTONIC || clk == CLOCK_MONOTONIC_RAW ||
           clk == CLOCK_MONOTONIC_COARSE || clk == CLOCK_BOOTTIME;
}

__attribute__((constructor)) static void init(void) {
    real_clock = (clock_fn)dlsym(RTLD_NEXT, "clock_gettime");
    const char *s = getenv("COUNTS_SLOWER");
    if (s && atoll(s) > 1) slower = atoll(s);
    for (clockid_t c = 0; c < 8; c++) {
        struct timespec ts;
        if (is_monotonic(c) && real_clock && real_clock(c, &ts) == 0) origin[c] = ns(&ts);
    }
}

int clock_gettime(clockid_t clk, struct timespec *ts) {
    int r = real_clock(clk, ts);
    if (r == 0 && slower > 1 && clk >= 0 && clk < 8 && is_monotonic(clk)) {
        long long t = origin[clk] + (ns(ts) - origin[clk]) / slower;
        ts->tv_sec = t / 1000000000LL;
        ts->tv_nsec = t % 1000000000LL;
    }
    return r;
}
