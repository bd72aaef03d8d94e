/* The floor of a guarded run, for bench/run's per-run table: what any client that keeps
 * dlock's keys must do at least. Connect over TCP, run dlock's acquire script, start the job
 * (posix_spawnp, as flock does with fork), wait for it, run dlock's release script with the
 * same stats, history and run-log arguments `dlock run -- true` sends, exit with the job's
 * status. No options, no checks beyond "acquired", no timeouts, no renewals, no signals:
 * dlock's time above this one is what its own work costs.
 *
 *   floor PORT KEY ACQUIRE_SHA RELEASE_SHA JOB...   (the scripts loaded by the caller)
 *
 * The arguments mirror src/store/lock.rs (AcquireCall, ReleaseCall) as of 2026-12-03 (the release carries the run's lease, and the cancel's two fields); bench/run
 * checks after the rounds that each run left the lock free and logged, so a drift shows. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static char buf[16384];

/* One command as a RESP array; its reply read into buf (these replies fit one read). */
static void call(int fd, int n, const char **a) {
  char *p = buf;
  p += sprintf(p, "*%d\r\n", n);
  for (int i = 0; i < n; i++) p += sprintf(p, "$%zu\r\n%s\r\n", strlen(a[i]), a[i]);
  if (write(fd, buf, p - buf) != p - buf || read(fd, buf, sizeof buf - 1) <= 0) exit(70);
}

static void unix_ms(char *out) {
  struct timeval tv;
  gettimeofday(&tv, 0);
  sprintf(out, "%lld", (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000);
}

int main(int argc, char **argv) {
  if (argc < 6) return 64;
  const char *key = argv[2];
  unsigned char r[16];
  char tok[33], pid[16], start[24], end[24], k[11][160];
  if (getrandom(r, sizeof r, 0) != sizeof r) return 70;
  for (int i = 0; i < 16; i++) sprintf(tok + 2 * i, "%02x", r[i]);
  sprintf(pid, "%d", getpid());
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) return 69;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  const char *suffix[] = {":fence", ":stats", ":limit", "",         ":holder",
                          ":wake",  ":runs",  ":done",  ":timeline", ":pause"};
  for (int i = 0; i < 10; i++)
    snprintf(k[i], sizeof k[i], i == 3 ? "dlock:%s%s" : "{dlock:%s}%s", key, suffix[i]);
  /* The prefix-wide pause record, read by the acquire script too (dlock pause --all). */
  snprintf(k[10], sizeof k[10], "{dlock:}:pause");
  unix_ms(start);
  const char *acquire[] = {"EVALSHA", argv[3], "8", k[0], k[1], k[2], k[7], k[9], k[3], k[4],
                           k[10], tok, "30000", "1", "host", pid, argv[5], start, "0", "1", "0",
                           "0", "", "", "", ""};
  call(fd, 26, acquire);
  if (strncmp(buf, "*5\r\n:1\r\n", 8)) return 75;
  pid_t child;
  int status;
  if (posix_spawnp(&child, argv[5], 0, 0, argv + 5, environ)) return 127;
  waitpid(child, &status, 0);
  unix_ms(end);
  /* N, then --also's A, M and known-lost (none), the history, the run log (its --also field
     empty). */
  const char *release[] = {"EVALSHA", argv[4], "9", k[3], k[4], k[1], k[5], k[2], k[6], k[7],
                           k[3], k[8], tok, "1", "0", "0", "h0", "", "1", "0", "1", "0", "ok", "0",
                           "host", pid, start, end, "100", tok, "host", pid, "0", "1", argv[5],
                           start, end, "0", "0", "30000", "3", "10000", "5000", "", "", "", "",
                           ""};
  call(fd, 48, release);
  return WEXITSTATUS(status);
}
