#!/usr/bin/env python3
"""benches/oai_bench.py: an OAI-PMH harvest of 100,000 records by rsmirror against Sickle 0.7.0
on the same pyoai 2.5.0 repository, in one run (issue 65's benchmark: rsmirror within 1.2x of
Sickle's time, peak RSS under 150 MB).

    benches/oai_bench.py [--records N] [--deleted-percent P] [--batch B] [--rounds R]
                         [--rsmirror BIN] [--python PY] [--mirror-dir DIR]

Makes the records file once (`tests/peers/oai_server.py --gen N --deleted N*P/100`, kept in
benches/.work/oai/ for the next run), starts ONE server (`oai_server.py --records FILE --batch B
--log FILE`, B records a page, 1000 by default), then R rounds (default 3), the clients taking
turns (the order rotates each round):

  sickle-records  `sickle_harvest.py URL` (ListRecords: every record, metadata parsed; the fair
                  comparison, as rsmirror harvests ListRecords too)
  sickle-ids      `sickle_harvest.py URL --list-identifiers` (the bare listing: headers only)
  rsmirror        `rsmirror baseline URL --mirror M -q` into a fresh mirror, followed at once
                  by `rsmirror incremental --mirror M -q` with nothing changed (rs-incremental)

Each client is measured alone (under /usr/bin/time): wall seconds, user + system CPU seconds
and peak RSS of the client only, not the server's. The server's own CPU seconds during each
run (/proc/PID/stat) and the requests the client made (the server's log) are printed too:
pyoai re-reads and re-sorts the whole records file on every request, so most of every client's
wall time is the server's, which both clients pay. Every run is checked: Sickle printed N
records (M of them deleted); rsmirror's catalog holds the N - M live records, by identifier.
Mirrors go to DIR (default benches/.work/oai/mirrors) and are kept until the end of the run
(a deletion of many files slows the next run's creates on ext4), then removed.

Prints each run, then a table of medians (peak RSS: the largest of the rounds) and the ratios
rsmirror / Sickle for both Sickle modes: of the median walls, round by round, of CPU, and of
wall minus the server's CPU in the run (what is left when the server's share is taken out:
the client's own work and its waits, e.g. for the disk; steadier than the wall when the
server's speed drifts). The machine should be otherwise idle: the load average before each run
is printed; say how busy it was with the figures. At the defaults on a 2-core machine the
server takes about 2.5 s a page, a harvest about 4.5 minutes, the whole run about 45 minutes.
"""

import argparse
import os
import resource
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = os.path.join(ROOT, "tests", "peers")
CLIENTS = ("sickle-records", "sickle-ids", "rsmirror")
STEPS = CLIENTS + ("rs-incremental",)
LIMIT_MB = 150.0
LIMIT_RATIO = 1.2


def default_python():
    """The first Python with pyoai and Sickle: this repository's .ci/venv, CI's one."""
    for py in (os.environ.get("BENCH_OAI_PYTHON"), os.path.join(ROOT, ".ci/venv/bin/python3"),
               "/tmp/ci/.ci/venv/bin/python3"):
        if py and os.access(py, os.X_OK) and subprocess.run(
                [py, "-c", "import sickle, oaipmh"], capture_output=True).returncode == 0:
            return py
    return None


def default_rsmirror():
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    return os.path.join(target, "release", "rsmirror")


def cpu_of(pid):
    """User + system CPU seconds of a running process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def lines_of(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


def measured(argv, stdout, timeout):
    """(exit code, wall s, CPU s, peak RSS bytes, stderr) of one process, measured alone.

    The peak RSS is what /usr/bin/time reports for the command: os.wait4 on a child forked
    from this script would count this script's own RSS too (a forked child starts with its
    parent's pages resident, and Linux keeps that high-water mark across exec)."""
    with tempfile.NamedTemporaryFile("r", prefix="oai-bench-time.") as tf:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", tf.name] + argv,
                             stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.PIPE,
                             start_new_session=True)
        try:
            err = p.communicate(timeout=timeout)[1]
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            err = p.communicate()[1]
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        last = (tf.read().strip().splitlines() or ["0"])[-1]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = int(last) * 1024 if last.isdigit() else 0
    return p.returncode, wall, cpu, rss, err.decode("utf-8", "replace")


def check_sickle(out, n, deleted):
    import json
    total = dead = 0
    with open(out, encoding="utf-8") as f:
        for line in f:
            total += 1
            dead += bool(json.loads(line)["deleted"])
    if (total, dead) != (n, deleted):
        return f"Sickle printed {total} records ({dead} deleted), expected {n} ({deleted})"
    return None


def check_rsmirror(mirror, live):
    db = os.path.join(mirror, "catalog.sqlite")
    if not os.path.exists(db):
        return "no catalog.sqlite"
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        got = {uri for (uri,) in con.execute(
            "SELECT r.uri FROM resources r JOIN versions v ON v.id = r.current_version_id"
            " WHERE v.change != 'deleted'")}
    finally:
        con.close()
    if got != live:
        return (f"catalog holds {len(got)} live records, expected {len(live)}"
                f" ({len(got - live)} unexpected, {len(live - got)} missing)")
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000, help="records (default 100000)")
    ap.add_argument("--deleted-percent", type=float, default=10.0,
                    help="of them deleted (default 10)")
    ap.add_argument("--batch", type=int, default=1000, help="records a page (default 1000)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--rsmirror", default=default_rsmirror(),
                    help="binary (default $CARGO_TARGET_DIR or target, release/rsmirror)")
    ap.add_argument("--python", default=None,
                    help="a Python with pyoai 2.5.0 and Sickle 0.7.0 (default: .ci/venv, "
                         "/tmp/ci/.ci/venv, or $BENCH_OAI_PYTHON)")
    ap.add_argument("--mirror-dir", default=os.path.join(HERE, ".work", "oai", "mirrors"))
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds a run may take")
    a = ap.parse_args()

    py = a.python or default_python()
    if not py:
        sys.exit("oai_bench: no Python with sickle and oaipmh; give --python")
    rs = os.path.abspath(a.rsmirror)
    if not os.access(rs, os.X_OK):
        sys.exit(f"oai_bench: no rsmirror at {rs} (cargo build --release, or --rsmirror)")
    n = a.records
    deleted = round(n * a.deleted_percent / 100)
    work = os.path.join(HERE, ".work", "oai")
    os.makedirs(work, exist_ok=True)
    records = os.path.join(work, f"records-{n}-{deleted}.json")
    if not os.path.exists(records):
        print(f"== generating {n} records, {deleted} deleted", file=sys.stderr)
        subprocess.run([py, os.path.join(PEERS, "oai_server.py"), "--gen", str(n), "--deleted",
                        str(deleted), "--out", records], check=True)
    live = set()
    import json
    with open(records, encoding="utf-8") as f:
        for r in json.load(f):
            if not r["deleted"]:
                live.add(r["identifier"])

    log = os.path.join(work, "server.log")
    if os.path.exists(log):
        os.remove(log)
    server = subprocess.Popen([py, os.path.join(PEERS, "oai_server.py"), "--records", records,
                               "--batch", str(a.batch), "--log", log],
                              stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    runs = os.path.join(a.mirror_dir, f"run-{os.getpid()}")
    rows = []  # (round, step, wall, cpu, rss, server cpu, requests)
    try:
        first = server.stdout.readline().decode().split()
        if len(first) != 2 or first[0] != "PORT":
            sys.exit(f"oai_bench: the server said {first!r}")
        port = int(first[1])
        url = f"http://127.0.0.1:{port}/oai"
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        version = subprocess.run([rs, "--version"], capture_output=True,
                                 text=True).stdout.splitlines()[0]
        print(f"N={n} ({deleted} deleted), pages of {a.batch}, {a.rounds} rounds; {version};"
              f" {py}; server pid {server.pid} at {url}", file=sys.stderr)
        sickle = [py, os.path.join(PEERS, "sickle_harvest.py"), url]
        for rnd in range(1, a.rounds + 1):
            k = (rnd - 1) % len(CLIENTS)
            order = CLIENTS[k:] + CLIENTS[:k]
            for client in order:
                mirror = os.path.join(runs, f"m{rnd}")
                out = os.path.join(work, f"sickle-{rnd}.jsonl")
                if client == "rsmirror":
                    shutil.rmtree(mirror, ignore_errors=True)
                    os.makedirs(runs, exist_ok=True)
                    plan = [("rsmirror", [rs, "baseline", url, "--mirror", mirror, "-q"]),
                            ("rs-incremental", [rs, "incremental", "--mirror", mirror, "-q"])]
                else:
                    argv = sickle + (["--list-identifiers"] if client == "sickle-ids" else [])
                    plan = [(client, argv)]
                for step, argv in plan:
                    subprocess.run(["sync"])
                    load = os.getloadavg()[0]
                    req0, srv0 = lines_of(log), cpu_of(server.pid)
                    if step.startswith("sickle"):
                        with open(out, "wb") as f:
                            rc, wall, cpu, rss, err = measured(argv, f, a.timeout)
                    else:
                        rc, wall, cpu, rss, err = measured(argv, subprocess.DEVNULL, a.timeout)
                    srv, req = cpu_of(server.pid) - srv0, lines_of(log) - req0
                    if rc != 0:
                        wrong = f"exit {rc}: {err.strip()[-2000:]}"
                    elif step.startswith("sickle"):
                        wrong = check_sickle(out, n, deleted)
                    else:
                        wrong = check_rsmirror(mirror, live)
                    if wrong:
                        sys.exit(f"oai_bench: round {rnd} {step}: {wrong}")
                    if step.startswith("sickle"):
                        os.remove(out)
                    rows.append((rnd, step, wall, cpu, rss, srv, req))
                    print(f"round {rnd} {step:<15} {wall:8.2f} s wall {cpu:7.2f} s CPU"
                          f" {rss / 1e6:7.1f} MB RSS  server {srv:7.2f} s CPU, {req:4d} requests"
                          f"  load {load:.2f}", file=sys.stderr, flush=True)
    finally:
        server.kill()
        server.wait()
        shutil.rmtree(runs, ignore_errors=True)

    med, rss, srv, own, req, walls = {}, {}, {}, {}, {}, {}
    for s in STEPS:
        mine = [r for r in rows if r[1] == s]
        walls[s] = [r[2] for r in mine]
        med[s] = (statistics.median(r[2] for r in mine), statistics.median(r[3] for r in mine))
        rss[s] = max(r[4] for r in mine)
        srv[s] = statistics.median(r[5] for r in mine)
        own[s] = statistics.median(r[2] - r[5] for r in mine)
        req[s] = statistics.median(r[6] for r in mine)
    print(f"N={n} records ({deleted} deleted), pages of {a.batch}, {a.rounds} rounds, medians;"
          " peak RSS the largest; every run verified")
    print("| client | wall s | CPU s | peak RSS MB | server CPU s | wall - server CPU s"
          " | requests | runs (wall s) |")
    print("|---|---|---|---|---|---|---|---|")
    names = {"sickle-records": "Sickle ListRecords", "sickle-ids": "Sickle ListIdentifiers",
             "rsmirror": "rsmirror baseline", "rs-incremental": "rsmirror incremental, no change"}
    for s in STEPS:
        print(f"| {names[s]} | {med[s][0]:.2f} | {med[s][1]:.2f} | {rss[s] / 1e6:.1f} |"
              f" {srv[s]:.2f} | {own[s]:.2f} | {req[s]:.0f} |"
              f" {', '.join(f'{w:.2f}' for w in walls[s])} |")
    print()
    print("| rsmirror baseline / | wall (medians) | wall, round by round | CPU |"
          " wall - server CPU |")
    print("|---|---|---|---|---|")
    for s in ("sickle-records", "sickle-ids"):
        paired = ", ".join(f"{x / y:.3f}" for x, y in zip(walls["rsmirror"], walls[s]))
        print(f"| {names[s]} | {med['rsmirror'][0] / med[s][0]:.3f} | {paired} |"
              f" {med['rsmirror'][1] / med[s][1]:.3f} | {own['rsmirror'] / own[s]:.3f} |")
    ratio = med["rsmirror"][0] / med["sickle-records"][0]
    mb = max(rss["rsmirror"], rss["rs-incremental"]) / 1e6
    print()
    print(f"target: wall <= {LIMIT_RATIO}x Sickle ListRecords (medians): {ratio:.3f}x,"
          f" {'PASS' if ratio <= LIMIT_RATIO else 'FAIL'}; peak RSS < {LIMIT_MB:.0f} MB:"
          f" {mb:.1f} MB, {'PASS' if mb < LIMIT_MB else 'FAIL'}")

if __name__ == "__main__":
    main()
