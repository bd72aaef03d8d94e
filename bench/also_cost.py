#!/usr/bin/env python3
"""Redis cost of one acquire.lua call with --also (issue 52): 16 --also keys of M slots each
(M = --also-limit), against a redis-server of its own on loopback, read from the server's
own account: INFO commandstats' EVALSHA usec_per_call (CONFIG RESETSTAT before each phase;
the least of 3 rounds, so a shared machine's load inflates it least). Phases: a grant (every
key free; the keys deleted by a plain DEL between tries, so only the script is counted), a
busy try (KEY free, every slot of every --also key held by another: every slot read and its
PTTL taken, the longest script) and a lost reply's retry (the whole set ours). A = 0 is the
plain run, for scale. MAX_ALSO_LIMIT (src/store/keys.rs) is the largest M where one acquire
stays under about 0.3 ms.

  bench/also_cost.py [REPO] [PORT]"""
import hashlib, os, socket, subprocess, sys, tempfile, time

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 6391
lib = open(f"{ROOT}/src/store/scripts/lib.lua", "rb").read()
body = open(f"{ROOT}/src/store/scripts/acquire.lua", "rb").read()
SRC = lib + b"\n" + body
SHA = hashlib.sha1(SRC).hexdigest()

def enc(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)

class R:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.f = self.s.makefile("rb")
    def read(self):
        line = self.f.readline()
        t, rest = line[:1], line[1:-2]
        if t in (b"+",): return rest.decode()
        if t == b"-": raise RuntimeError(rest.decode())
        if t == b":": return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0: return None
            d = self.f.read(n + 2)[:-2]
            return d.decode(errors="replace")
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise RuntimeError(line)
    def cmd(self, *args):
        self.s.sendall(enc(args))
        return self.read()
    def pipe(self, cmds):
        self.s.sendall(b"".join(enc(c) for c in cmds))
        return [self.read() for _ in cmds]

def comp(lock, sfx): return "{%s}:%s" % (lock, sfx)
def slot(lock, i):
    return (lock, comp(lock, "holder")) if i == 0 else (comp(lock, f"slot:{i}"), comp(lock, f"holder:{i}"))

def call(K, X, M, token):
    keys = [comp(K, "fence"), comp(K, "stats"), comp(K, "limit"), comp(K, "done"), comp(K, "pause")]
    keys += list(slot(K, 0))
    if X:
        keys.append(comp(K, "wake"))
        for x in X:
            keys += [comp(x, "fence"), comp(x, "limit"), comp(x, "pause"), comp(x, "wake")]
            keys += [slot(x, i)[0] for i in range(M)] + [slot(x, i)[1] for i in range(M)]
    keys.append("{m:}:pause")
    argv = [token, 30000, 1, "host", 1, "./job.sh", 1700000000000, 0, 1, 0, 0, "", "", "", "", "", "", "",
            len(X), M, ""]
    return ["EVALSHA", SHA, len(keys)] + keys + argv

def usec(r):
    info = r.cmd("INFO", "commandstats")
    for line in info.splitlines():
        if line.startswith("cmdstat_evalsha:"):
            f = dict(kv.split("=") for kv in line.split(":", 1)[1].split(","))
            return float(f["usec_per_call"]), int(f["calls"])
    return None, 0

def main():
    d = tempfile.mkdtemp()
    p = subprocess.Popen(["redis-server", "--port", str(PORT), "--save", "", "--appendonly", "no",
                          "--dir", d], stdout=subprocess.DEVNULL)
    time.sleep(0.3)
    r = R(PORT)
    r.cmd("SCRIPT", "LOAD", SRC)
    A = 16
    rows = []
    for M in [0, 1, 2, 4, 8, 16, 32, 64]:
        a = A if M else 0
        m = M or 1
        X = [f"m:x{j}" for j in range(a)]
        res = {}
        # grant: all free; the keys are deleted by plain DEL between tries (not an EVALSHA)
        allkeys = lambda: [k for x in ["m:k"] + X for i in range(m if x != "m:k" else 1) for k in slot(x, i)]
        reps = 300 if m <= 8 else 100
        samples = []
        for rnd in range(3):
            r.cmd("CONFIG", "RESETSTAT")
            for i in range(reps):
                v = r.cmd(*call("m:k", X, m, f"t{i}"))
                assert v[0] == 1, v
                r.cmd("DEL", *allkeys())
            samples.append(usec(r)[0])
        res["grant"] = min(samples)
        # busy: every slot of every --also key held by others, KEY free: the longest script
        # (every slot read, every slot's PTTL)
        r.cmd("FLUSHALL")
        fill = [["SET", slot(x, i)[0], "other", "PX", 600000] for x in X for i in range(m)]
        if fill: r.pipe(fill)
        if m > 1: r.pipe([["SET", comp(x, "limit"), m, "PX", 600000] for x in X])
        samples = []
        for rnd in range(3):
            r.cmd("CONFIG", "RESETSTAT")
            for i in range(reps):
                v = r.cmd(*call("m:k", X, m, "tok"))
                assert v[0] == (0 if a else 1), v
                if not a: r.cmd("DEL", *allkeys())
            samples.append(usec(r)[0])
        res["busy"] = min(samples)
        r.cmd("FLUSHALL")
        # retry: the whole set is ours (a lost reply's retry), every slot read twice
        samples = []
        v = r.cmd(*call("m:k", X, m, "tok"))
        for rnd in range(3):
            r.cmd("CONFIG", "RESETSTAT")
            for i in range(reps):
                v = r.cmd(*call("m:k", X, m, "tok"))
                assert v[0] == 1, v
            samples.append(usec(r)[0])
        res["retry"] = min(samples)
        r.cmd("FLUSHALL")
        nkeys = len(call("m:k", X, m, "t")) - 3 - 21
        rows.append((a, M, nkeys, res))
        print(f"A={a:2d} M={M:2d} KEYS={nkeys:5d}  grant {res['grant']:8.1f} us  busy {res['busy']:8.1f} us  retry {res['retry']:8.1f} us", flush=True)
    p.terminate()
    p.wait()

main()
