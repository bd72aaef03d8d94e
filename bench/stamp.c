/* Benchmark job: appends "S <CLOCK_MONOTONIC ns>" when it starts and "E <ns>" when it ends (also
 * on SIGTERM) to the file argv[1], working argv[2] ms in between. Built by bench/run. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const char *path;

static void stamp(char kind) {
    struct timespec ts;
    char buf[64];
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int n = snprintf(buf, sizeof buf, "%c %lld\n", kind, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) {
        (void)!write(fd, buf, n);
        close(fd);
    }
}

static void on_term(int sig) {
    (void)sig;
    stamp('E');
    _exit(143);
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    path = argv[1];
    signal(SIGTERM, on_term);
    stamp('S');
    usleep((useconds_t)atoi(argv[2]) * 1000);
    stamp('E');
    return 0;
}
