#!/usr/bin/env python3
"""A TLS + HTTP/2 source on loopback (nginx, no delaying proxy): rsmirror baselines of N x 8 KiB,
builds taking turns, medians (stdlib only; nginx and openssl from the system).

    python3 benches/h2_loopback.py [--n 10000] [--reps 3] BINARY [BINARY ...]

The other end from benches/remote.py: no round trip, so what the transfer threads do with each
body (hash, write, rename) is what counts. Each run makes a new mirror on /dev/shm, checked after
(every resource's SHA-256); prints each run's wall time and what nginx saw, then the medians.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import remote  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="rsmirror-h2-loopback-")
    os.chmod(work, 0o755)  # nginx's workers read the site as another user
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(work, d))
    mirror = "/dev/shm/rsmirror-h2-loopback-m"
    ca, cert, key = remote.make_tls(work)
    port = remote.free_port()
    base = f"https://localhost:{port}"
    expected = remote.make_site(os.path.join(work, "site"), a.n, 8192, base, False)
    nginx, log = remote.start_nginx(work, os.path.join(work, "site"), port, cert, key)
    times = {b: [] for b in a.binaries}
    try:
        for _ in range(a.reps):
            for b in a.binaries:
                shutil.rmtree(mirror, ignore_errors=True)
                since = os.path.getsize(log)
                t0 = time.monotonic()
                p = subprocess.run([b, "baseline", f"{base}/resourcelist.xml", "--mirror", mirror,
                                    "--ca-file", ca, "-q"], capture_output=True, text=True)
                secs = time.monotonic() - t0
                bad = f"exit {p.returncode}: {p.stderr[:200]}" if p.returncode else remote.check_rsmirror(mirror, expected)
                if bad:
                    raise SystemExit(f"{b}: {bad}")
                times[b].append(secs)
                print(f"{b} {secs:.3f} s, {remote.nginx_figures(log, since)}", flush=True)
    finally:
        nginx.terminate()
        nginx.wait()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(mirror, ignore_errors=True)
    first = statistics.median(times[a.binaries[0]])
    for b in a.binaries:
        m = statistics.median(times[b])
        print(f"{b}: median {m:.3f} s ({m / first:.2f} of the first), runs {sorted(round(t, 3) for t in times[b])}")


if __name__ == "__main__":
    main()
