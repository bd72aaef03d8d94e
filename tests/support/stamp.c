/* A guarded job that leaves stamps on CLOCK_MONOTONIC, which every process on the machine
 * shares, so intervals from different jobs compare directly. Compiled once per test run (and by
 * bench/run): no interpreter start-up sits between the job's exec and its first stamp.
 *
 *   stamp MS      append "S <id> <fence> <pid> <ns>" at start and "E <id> <ns>" after working
 *                 MS ms, or on SIGTERM (then exit 143)
 *   stamp -i MS   the same, but SIGTERM is ignored: only SIGKILL ends it early (no E stamp)
 *   stamp -s MS   the same as `stamp MS`, its id followed by "." and DLOCK_SLOT (a semaphore's
 *                 jobs, paired per slot), without a shell started in front of the job to say so
 *   stamp -b      heartbeat: overwrite the file with the current time every ~1 ms, forever,
 *                 ignoring SIGTERM; what is left in the file after SIGKILL is its last beat
 *
 * Environment: STAMP_FILE (required), STAMP_ID (the test's name for this run, "-" if unset),
 * DLOCK_FENCE (from dlock). Each stamp is one write(2) of a short line with O_APPEND: atomic
 * against the other jobs appending to the same file. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *path;
static const char *id;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void append(const char *line, int n) {
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)!write(fd, line, (size_t)n);
        close(fd);
    }
}

static void stamp_end(void) {
    char buf[96];
    int n = snprintf(buf, sizeof buf, "E %s %lld\n", id, now_ns());
    append(buf, n);
}

static void on_term(int sig) {
    (void)sig;
    stamp_end();
    _exit(143);
}

static void beat(void) {
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) _exit(1);
    signal(SIGTERM, SIG_IGN);
    struct timespec ms = {0, 1000000};
    for (;;) {
        char buf[21];
        snprintf(buf, sizeof buf, "%019lld\n", now_ns());
        (void)!pwrite(fd, buf, 20, 0);
        nanosleep(&ms, NULL);
    }
}

int main(int argc, char **argv) {
    path = getenv("STAMP_FILE");
    id = getenv("STAMP_ID");
    if (!path) return 2;
    if (!id) id = "-";
    if (argc == 2 && strcmp(argv[1], "-b") == 0) beat();
    int stubborn = argc == 3 && strcmp(argv[1], "-i") == 0;
    int slotted = argc == 3 && strcmp(argv[1], "-s") == 0;
    if (argc != 2 && !stubborn && !slotted) return 2;
    char slot_id[128];
    if (slotted) {
        const char *slot = getenv("DLOCK_SLOT");
        snprintf(slot_id, sizeof slot_id, "%s.%s", id, slot ? slot : "?");
        id = slot_id;
    }
    long work_ms = atol(argv[argc - 1]);
    const char *fence = getenv("DLOCK_FENCE");

    /* SIGTERM before the start stamp is written kills the job without any stamp (it never
     * started its work); after it, the handler writes the end stamp. */
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, NULL);
    char buf[128];
    int n = snprintf(buf, sizeof buf, "S %s %s %d %lld\n", id, fence ? fence : "?", (int)getpid(),
                     now_ns());
    append(buf, n);
    signal(SIGTERM, stubborn ? SIG_IGN : on_term);
    sigprocmask(SIG_UNBLOCK, &term, NULL);

    struct timespec left = {work_ms / 1000, (work_ms % 1000) * 1000000};
    while (nanosleep(&left, &left) != 0) {
    }
    stamp_end();
    return 0;
}
