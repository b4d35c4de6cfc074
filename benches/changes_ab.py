#!/usr/bin/env python3
"""benches/changes_ab.py: rsmirror builds side by side on one synthetic source, for changes to
the engine: per build and repetition, a `baseline` of state A into a fresh mirror, then an
`incremental` after the source moved to state B (1% of the resources changed: updates, creates,
deletes, through a Change List), then a baseline re-run of B on the complete mirror. The builds
take turns (odd repetitions the first build first, even ones the last first); every mirror is
checked after its timed run against the source's manifest (catalog and object bytes). Prints
each build's median wall and CPU (user + system) seconds per step and the ratios to the first
build.

    benches/changes_ab.py [--n N] [--size S] [--reps R] [--mirror-dir DIR] BIN [BIN...]

The source is made by `benches/gen.py source` under benches/.work/changes-ab/ (kept for the
next run) and served by nginx on 127.0.0.1; mirrors go to DIR (default /dev/shm) and are
removed at the end. The machine should be otherwise idle: say how busy it was with the figures.
"""

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402  (benches/harness.py: load_manifest, verify_rsmirror)

STEPS = ("baseline", "incremental", "re-run")


def free_port(wanted=18097):
    """`wanted` when free (the generated documents carry the port, so a stable one lets the
    next run reuse them), else any free port."""
    for p in (wanted, 0):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", p))
            return s.getsockname()[1]
        except OSError:
            continue
        finally:
            s.close()
    raise SystemExit("changes_ab: no free port")


def nginx(work, port):
    """Start nginx serving work/serve/current; returns its pid file."""
    ngx = os.path.join(work, "nginx")
    os.makedirs(os.path.join(ngx, "tmp"), exist_ok=True)
    user = "user root;" if os.getuid() == 0 else ""
    conf = os.path.join(ngx, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""{user}
worker_processes auto;
pid {ngx}/nginx.pid;
error_log {ngx}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  types {{ application/xml xml; application/zip zip; }}
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  keepalive_requests 1000000;
  client_body_temp_path {ngx}/tmp;
  proxy_temp_path {ngx}/tmp;
  fastcgi_temp_path {ngx}/tmp;
  uwsgi_temp_path {ngx}/tmp;
  scgi_temp_path {ngx}/tmp;
  server {{
    listen 127.0.0.1:{port};
    root {work}/serve/current;
    location = /.well-known/resourcesync {{ default_type application/xml; }}
  }}
}}
""")
    exe = shutil.which("nginx") or "/usr/sbin/nginx"
    subprocess.run([exe, "-c", conf, "-p", ngx, "-e", os.path.join(ngx, "error.log")], check=True)
    return os.path.join(ngx, "nginx.pid")


def timed(argv):
    """(exit code, wall s, CPU s) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(argv, stdin=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return rc, wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--mirror-dir", default="/dev/shm")
    ap.add_argument("bins", nargs="+")
    a = ap.parse_args()

    work = os.path.join(HERE, ".work", "changes-ab")
    os.makedirs(os.path.join(work, "serve"), exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    src = os.path.join(work, f"src-{a.n}-{a.size}-{port}")
    if not os.path.exists(os.path.join(src, "meta.json")):
        print(f"== generating the source, N={a.n}, {a.size} bytes each", file=sys.stderr)
        subprocess.run([sys.executable, os.path.join(HERE, "gen.py"), "source", "--out", src,
                        "--base", base, "--n", str(a.n), "--size", str(a.size)], check=True)
    current = os.path.join(work, "serve", "current")

    def serve(state):
        tmp = current + ".new"
        if os.path.lexists(tmp):
            os.remove(tmp)
        os.symlink(os.path.join(src, state), tmp)
        os.replace(tmp, current)

    man = {s: harness.load_manifest(os.path.join(src, f"manifest-{s}.tsv")) for s in "AB"}
    serve("A")
    pidfile = nginx(work, port)
    runs = os.path.join(a.mirror_dir, f"rsmirror-changes-ab.{os.getpid()}")
    rows = []  # (bin, step, wall, cpu)
    try:
        for _ in range(50):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        for rep in range(1, a.reps + 1):
            order = a.bins if rep % 2 else list(reversed(a.bins))
            for i, b in enumerate(order):
                m = os.path.join(runs, f"{rep}-{i}")
                shutil.rmtree(m, ignore_errors=True)
                load = os.getloadavg()[0]
                for step, state, argv in (
                    ("baseline", "A", [b, "baseline", base + "/", "--via", "list", "--mirror", m, "-q"]),
                    ("incremental", "B", [b, "incremental", "--mirror", m, "-q"]),
                    ("re-run", "B", [b, "baseline", base + "/", "--via", "list", "--mirror", m, "-q"]),
                ):
                    serve(state)
                    subprocess.run(["sync"])
                    rc, wall, cpu = timed(argv)
                    wrong = harness.verify_rsmirror(m, man[state]) if rc == 0 else f"exit {rc}"
                    if wrong:
                        sys.exit(f"changes_ab: {b} {step} (rep {rep}): {wrong}")
                    rows.append((b, step, wall, cpu))
                    print(f"rep {rep} {step:<11} {wall:7.3f} s wall {cpu:7.3f} s CPU "
                          f"load {load:.1f}  {b}", file=sys.stderr)
                shutil.rmtree(m, ignore_errors=True)
    finally:
        if os.path.exists(pidfile):
            subprocess.run(["kill", open(pidfile).read().strip()])
        shutil.rmtree(runs, ignore_errors=True)

    first = a.bins[0]
    med = {}
    for b in a.bins:
        for s in STEPS:
            mine = [r for r in rows if r[0] == b and r[1] == s]
            med[b, s] = (statistics.median(r[2] for r in mine), statistics.median(r[3] for r in mine))
    print(f"N={a.n}, {a.size} bytes, {a.reps} reps; every mirror verified")
    print(f"| step | {' | '.join(os.path.basename(b) + ' wall / CPU s' for b in a.bins)} | ratio wall | ratio CPU |")
    print("|---" * (len(a.bins) + 3) + "|")
    for s in STEPS:
        cells = " | ".join(f"{med[b, s][0]:.3f} / {med[b, s][1]:.3f}" for b in a.bins)
        last = a.bins[-1]
        rw = med[last, s][0] / med[first, s][0]
        rc = med[last, s][1] / med[first, s][1]
        print(f"| {s} | {cells} | {rw:.2f} | {rc:.2f} |")


if __name__ == "__main__":
    main()
