# A guarded job for the overlap detector: appends "S fence dlock_pid monotonic_ns" when it starts
# and "E ..." when it ends (also on SIGTERM), to the file named by STAMP_FILE. argv[1]: how long
# to work, in ms. CLOCK_MONOTONIC is shared by every process on the machine, so intervals from
# different jobs compare directly.
import os
import signal
import sys
import time

path = os.environ["STAMP_FILE"]
fence = os.environ.get("DLOCK_FENCE", "?")


def stamp(kind):
    line = f"{kind} {fence} {os.getppid()} {time.monotonic_ns()}\n".encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, line)  # one write of a short line: atomic with O_APPEND
    os.close(fd)


def on_term(*_):
    stamp("E")
    os._exit(143)


signal.signal(signal.SIGTERM, on_term)
stamp("S")
time.sleep(float(sys.argv[1]) / 1000)
stamp("E")
