#!/usr/bin/env python3
"""Resource transfers, old build against new (issue 27), over http and https (stdlib only).

Called by benches/transfer.sh, which builds (or is given) the binaries, makes the certificate
and serves the source with nginx on 127.0.0.1 (plain http and TLS). Two commands:

    transfer_bench.py gen --out DIR --n N --size S --http-base URL --https-base URL
        N resources of S pseudo-random bytes (benches/gen.py's generator: same seed, same
        bytes) once, under DIR/res/r/, and the documents twice: DIR/http/ (every URL
        http://...) and DIR/https/ (every URL https://...): Source Description, Capability
        List, Resource List with md5, sha-256 and length (an index of lists of 50,000 above
        that), an empty Change List. Plus, per scheme, manifest-SCHEME.tsv (what the mirror
        must hold) and fetch-SCHEME.curl (a curl config: every resource into /dev/null).
        Reused while DIR/generated.json matches the arguments and both generators.

    transfer_bench.py run --work DIR --src N=DIR,... --old BIN --new BIN [--old-trust BIN] ...
        The runs, alternating the binaries, then a Markdown section (--out).

Each timed run goes through benches/harness.py (`Harness.timed`: `sync`, then /usr/bin/time),
starts from the same memory state (`Harness.fresh_caches`: caches dropped, served files read
back in, a wait for idle CPUs) and writes a fresh mirror; every mirror is removed at the end,
not between runs (ext4 skips recently freed inodes, see harness.py quiet_after_removals).
"""

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402  (benches/gen.py)
import harness  # noqa: E402  (benches/harness.py)

CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- the source -----------------------------------------------------------------------------

def file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cmd_gen(a):
    out = os.path.abspath(a.out)
    key = {"n": a.n, "size": a.size, "seed": a.seed, "http": a.http_base, "https": a.https_base,
           "gen": file_digest(os.path.join(HERE, "gen.py")), "me": file_digest(os.path.abspath(__file__))}
    stamp = os.path.join(out, "generated.json")
    try:
        with open(stamp) as f:
            if json.load(f) == key:
                print(f"== reusing {out}", file=sys.stderr)
                return 0
    except (OSError, ValueError):
        pass
    regenerating = os.path.lexists(out)
    if regenerating:
        shutil.rmtree(out)
    t0 = time.perf_counter()
    res = os.path.join(out, "res")
    rng = random.Random(a.seed)
    rows = []  # (path, md5, sha256, length, lastmod)
    for i in range(a.n):
        data = rng.randbytes(a.size)
        path = gen.rel_path(i)
        file = os.path.join(res, path)
        if i % 1000 == 0:
            os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(file, "wb") as f:
            f.write(data)
        md5, sha = gen.digests(data)
        rows.append((path, md5, sha, a.size, gen.lastmod_of(i)))
    meta = {"n": a.n, "size": a.size, "seed": a.seed, "bytes": a.n * a.size, "regenerated": regenerating}
    for scheme, base in (("http", a.http_base.rstrip("/")), ("https", a.https_base.rstrip("/"))):
        site = os.path.join(out, scheme)
        cap_url = f"{base}/rs/capabilitylist.xml"
        rl = gen.write_resource_list(site, base, ((f"{base}/{p}", lm, md5, sha, n) for p, md5, sha, n, lm in rows),
                                     gen.AT_A, cap_url)
        gen.write_capability_docs(site, base, rl, with_dump=False)
        gen.write_text(os.path.join(site, "rs/changelist.xml"),
                       gen.header("urlset", "changelist", f' from="{gen.w3c(gen.AT_A)}"', up=cap_url) + "</urlset>\n")
        with open(os.path.join(out, f"manifest-{scheme}.tsv"), "w") as f:
            for p, md5, sha, n, _ in rows:
                f.write(f"{base}/{p}\t{sha}\t{md5}\t{n}\n")
        with open(os.path.join(out, f"fetch-{scheme}.curl"), "w") as f:
            for p, *_ in rows:
                f.write(f'url = "{base}/{p}"\noutput = "/dev/null"\n')
        meta[scheme] = f"{base}/{rl}"
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(stamp, "w") as f:
        json.dump(key, f)
    print(f"== generated {a.n} resources of {a.size} bytes in {time.perf_counter() - t0:.1f} s -> {out}",
          file=sys.stderr)
    return 0


# -- the runs -------------------------------------------------------------------------------

def proc_busy():
    """Busy jiffies of the whole machine (everything but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4]


def nginx_jiffies(master):
    """utime + stime of the nginx master and its workers."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                s = f.read()
        except OSError:
            continue
        fields = s[s.rindex(")") + 2:].split()
        # fields[1] is ppid; utime and stime are the 14th and 15th fields of the whole line
        if int(pid) == master or int(fields[1]) == master:
            total += int(fields[11]) + int(fields[12])
    return total


STEPS = [  # (key, scheme, tool, text)
    ("curl-http", "http", "curl", "limit: `curl --parallel --parallel-max 8` into /dev/null"),
    ("old-http", "http", "old", "old: `baseline` (hand-written client, net/multi.rs)"),
    ("new-http", "http", "new", "new: `baseline` (libcurl multi, net/transfer.rs)"),
    ("curl-https", "https", "curl", "limit: `curl --parallel --parallel-max 8 --cacert` into /dev/null"),
    ("old-https", "https", "old", "old: `baseline` (ureq, a thread per transfer)"),
    ("oldtrust-https", "https", "oldtrust", "old + trust patch: `baseline` (ureq, a thread per transfer)"),
    ("new-https", "https", "new", "new: `baseline --ca-file` (libcurl multi)"),
]


class Bench:
    def __init__(self, a):
        self.a = a
        self.work = a.work
        os.makedirs(self.work, exist_ok=True)
        # harness.Harness for its plumbing: timed runs, cache drops, settling, the removal stamp.
        os.environ.setdefault("BENCH_N", a.ns)
        os.environ["BENCH_REPS"] = str(a.reps)
        os.environ["BENCH_STEPS"] = "baseline"
        h = harness.Harness(types.SimpleNamespace(work=self.work, base="http://127.0.0.1", crate=a.repo,
                                                  rsmirror=a.new, resync="", resync_note="", nginx_version=""))
        h.removed_stamp = a.removed_stamp  # the stamp every bench script shares
        h.timeout = a.timeout
        self.h = h
        self.runs = []
        self.load_before = os.getloadavg()
        self.srcs = {}
        for item in a.src.split(","):
            n, d = item.split("=", 1)
            with open(os.path.join(d, "meta.json")) as f:
                self.srcs[int(n)] = (d, json.load(f))
        self.tools = {"old": a.old, "new": a.new}
        if a.old_trust:
            self.tools["oldtrust"] = a.old_trust

    def argv(self, tool, scheme, n, mirror):
        d, meta = self.srcs[n]
        if tool == "curl":
            extra = ["--cacert", self.a.ca] if scheme == "https" else []
            return ["curl", "-s", "--no-progress-meter", "--fail", "--parallel", "--parallel-max", "8"] + extra + \
                ["-K", os.path.join(d, f"fetch-{scheme}.curl")], {}
        argv = [self.tools[tool], "baseline", meta[scheme], "--mirror", mirror, "-q"]
        env = {}
        if scheme == "https":
            if tool == "new":
                argv[3:3] = ["--ca-file", self.a.ca]
            elif tool == "old":
                # The old build has no --ca-file; ureq with rustls trusts its compiled-in
                # webpki roots only, but try what a user would: SSL_CERT_FILE.
                env = {"SSL_CERT_FILE": self.a.ca}
            else:  # oldtrust: the patch reads the variable below
                env = {"RSMIRROR_BENCH_CA_FILE": self.a.ca}
        return argv, env

    def quiet(self, idle=0.90, window=2.0, longest=900.0):
        """Wait (untimed) until the machine is idle, at most `longest` seconds: both CPUs at
        least `idle` idle over `window` seconds. Other work on the machine (a build, a test
        suite) would otherwise share the two CPUs with the run. Returns the seconds waited."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < longest:
            b0, w0 = proc_busy(), time.monotonic()
            time.sleep(window)
            busy = (proc_busy() - b0) / CLK_TCK / (time.monotonic() - w0) / os.cpu_count()
            if busy <= 1 - idle:
                break
        return time.monotonic() - t0 - window

    def one(self, n, rep, step, scheme, tool, mirror):
        d, meta = self.srcs[n]
        argv, env = self.argv(tool, scheme, n, mirror)
        waited = self.quiet()
        if waited > 1:
            print(f"== waited {waited:.0f} s for the machine to be idle", file=sys.stderr, flush=True)
        self.h.fresh_caches(d)
        load1 = os.getloadavg()[0]
        busy0, ngx0 = proc_busy(), nginx_jiffies(self.a.nginx_pid)
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        label = f"N{n}-r{rep}-{step}"
        try:
            rc, wall, rss, cpu = self.h.timed(label, argv)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        busy = (proc_busy() - busy0) / CLK_TCK
        ngx = (nginx_jiffies(self.a.nginx_pid) - ngx0) / CLK_TCK
        others = busy - ngx - (cpu or 0)
        err = self.h.log_text(label).strip()
        if rc != 0:
            problem = f"exit {rc}: {err.splitlines()[0][:200] if err else ''}"
        elif tool == "curl":
            problem = None
        else:
            man = harness.load_manifest(os.path.join(d, f"manifest-{scheme}.tsv"))
            problem = harness.verify_rsmirror(mirror, man)
        rec = {"n": n, "rep": rep, "step": step, "tool": tool, "scheme": scheme, "ok": problem is None,
               "exit": rc, "wall_s": round(wall, 4), "rss_kib": rss, "cpu_s": cpu, "nginx_cpu_s": round(ngx, 2),
               "others_cpu_s": round(others, 2), "load1": load1, "waited_s": round(waited, 1), "problem": problem,
               "stderr": err[:500] if (err and rc == 0) else "", "argv": argv, "env": env}
        self.runs.append(rec)
        state = "verified" if problem is None else f"FAILED: {problem}"
        print(f"[N={n} rep {rep}/{self.a.reps}] {step:<15} {wall:8.3f} s  cpu {cpu or 0:6.2f}  "
              f"nginx {ngx:5.2f}  others {others:5.2f}  {rss / 1024 if rss else 0:5.0f} MiB  {state}",
              file=sys.stderr, flush=True)
        with open(os.path.join(self.work, "runs.json"), "w") as f:
            json.dump(self.runs, f, indent=1)

    def main(self):
        runs_root = os.path.join(self.work, "runs")
        self.h.removed(runs_root)  # leftovers of an interrupted run
        try:
            self.h.hold_free_memory()
            self.h.quiet_after_removals()
            for n in sorted(self.srcs):
                for rep in range(1, self.a.reps + 1):
                    rdir = os.path.join(runs_root, f"N{n}-{rep}")
                    os.makedirs(rdir)
                    for scheme in ("http", "https"):
                        rs_tools = ["old"] + (["oldtrust"] if scheme == "https" and "oldtrust" in self.tools else []) + ["new"]
                        order = ["curl"] + (rs_tools if rep % 2 else list(reversed(rs_tools)))
                        for tool in order:
                            step = f"{tool}-{scheme}"
                            self.one(n, rep, step, scheme, tool, os.path.join(rdir, step))
            self.write()
        finally:
            if self.h.page_reporting_was is not None:
                with open(harness.PAGE_REPORTING, "w") as f:
                    f.write(self.h.page_reporting_was + "\n")
            print("== removing the mirrors", file=sys.stderr, flush=True)
            self.h.removed(runs_root)

    # -- the section ------------------------------------------------------------------------

    def stats(self, n, step):
        rs = [r for r in self.runs if r["n"] == n and r["step"] == step]
        ok = [r for r in rs if r["ok"]]
        walls = [r["wall_s"] for r in ok]
        med = statistics.median(walls) if walls else None
        cpu = statistics.median([r["cpu_s"] for r in ok]) if ok else None
        ngx = statistics.median([r["nginx_cpu_s"] for r in ok]) if ok else None
        rss = max((r["rss_kib"] or 0 for r in ok), default=None)
        others = max((r["others_cpu_s"] for r in ok), default=None)
        return {"med": med, "cpu": cpu, "ngx": ngx, "rss": rss, "ok": f"{len(ok)}/{len(rs)}", "walls": walls,
                "others": others, "runs": rs}

    def write(self):
        a = self.a

        def f(x, spec=".3f"):
            return "–" if x is None else format(x, spec)

        load_after = os.getloadavg()
        cpu = re.search(r"^model name\s*:\s*(.*)$", open("/proc/cpuinfo").read(), re.M)
        mem = int(re.search(r"^MemTotal:\s*(\d+)", open("/proc/meminfo").read(), re.M).group(1))
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
        L = [f"## Resource transfers on libcurl (issue 27): old and new baseline over http and https, {now} UTC\n"]
        L.append(f"`{a.command}` (`benches/transfer.sh` with `benches/transfer_bench.py`; "
                 f"{a.reps} runs per step, in one run). **old** = `{a.old_commit}` ({a.old_note}), "
                 f"**new** = `{a.new_commit}` ({a.new_note})"
                 + (f", **old + trust patch** = {a.old_trust_note}" if a.old_trust else "") + ". "
                 f"Each source: N resources × {a.size:,} bytes, a Resource List with md5, sha-256 and length "
                 "(an index of lists of 50,000 at 100,000), served by nginx on 127.0.0.1 twice: plain http, and "
                 "TLS (`ssl_protocols TLSv1.2 TLSv1.3`, a self-signed certificate for 127.0.0.1/localhost from "
                 "`openssl req -x509`, HTTP/1.1, keep-alive), where every document and resource URL is https. "
                 "Each step is `rsmirror baseline LIST --mirror FRESH -q` (default `--jobs 8`; new over https: "
                 "`--ca-file cert.pem`), or the limit, curl fetching the same URLs into /dev/null. Per run and N: "
                 "curl, then the binaries, alternating (odd runs old first), http then https; before every run "
                 "the caches are dropped, the served files read back in, and the CPUs left to go idle (harness.py "
                 "`fresh_caches`); every mirror is fresh and removed only at the end. A run counts when it exits 0 "
                 "and `harness.py verify_rsmirror` finds exactly the N resources in the catalog with their SHA-256 "
                 "and length and every object file hashing to its name.\n")
        L.append("| | |")
        L.append("|---|---|")
        facts = [
            ("machine", f"{cpu.group(1) if cpu else platform.processor()} × {os.cpu_count()}, {mem / 1048576:.1f} GiB, "
                        f"kernel {platform.release()}"),
            ("server", f"{a.nginx_version}, {a.tls_note}"),
            ("limits", f"{harness.cmd_out(['curl', '--version']).splitlines()[0]}"),
            ("load average (1/5/15 min)", f"before {'/'.join(f'{x:.2f}' for x in self.load_before)}, "
                                          f"after {'/'.join(f'{x:.2f}' for x in load_after)}"),
            ("other work", f"before every run a wait (untimed) until both CPUs were 90% idle over 2 s: "
                           f"{sum(1 for r in self.runs if r.get('waited_s', 0) > 1)} of {len(self.runs)} runs "
                           f"waited, {sum(r.get('waited_s', 0) for r in self.runs):.0f} s in all "
                           "(another engineer's builds and tests share this machine)"),
            ("host memory", self.h.memory_note),
            ("file removals", self.h.removal_note or f"none in the {harness.QUIET_AFTER_REMOVAL} s before the "
                                                      "first run"),
        ]
        for k, v in facts:
            L.append(f"| {k} | {v} |")
        L.append("")
        L.append("`× curl`: the step's median over curl's median for the same scheme and N (1.0 = as fast as "
                 "the limit). `new / old`: the new build's median over the old one's (< 1: new is faster). "
                 "`nginx CPU s`: the server's CPU during the step (median), not in `CPU s`. `others' CPU s`: the "
                 "largest CPU time, over the step's runs, of everything else on the machine during the run "
                 "(kernel threads included): the noise.\n")
        L.append("| N | step | median s | CPU s | nginx CPU s | peak RSS MiB | res/s | MB/s | × curl | new / old | "
                 "ok | others' CPU s | runs (s) |")
        L.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        failures, notes = [], []
        for n in sorted(self.srcs):
            steps = [s for s in STEPS if s[2] != "oldtrust" or a.old_trust]
            for key, scheme, tool, text in steps:
                s = self.stats(n, key)
                lim = self.stats(n, f"curl-{scheme}")["med"]
                x_curl = s["med"] / lim if s["med"] and lim and tool != "curl" else None
                ratio = None
                if tool == "new":
                    olds = [self.stats(n, f"{t}-{scheme}")["med"] for t in ("old", "oldtrust")]
                    old = next((o for o in olds if o), None)
                    ratio = s["med"] / old if s["med"] and old else None
                med_txt = f(s["med"]) if s["med"] else "FAIL"
                L.append(f"| {n:,} | {scheme}: {text} | {med_txt} | {f(s['cpu'], '.2f')} | {f(s['ngx'], '.2f')} | "
                         f"{f(s['rss'] / 1024 if s['rss'] else None, '.0f')} | "
                         f"{f(n / s['med'] if s['med'] else None, ',.0f')} | "
                         f"{f(n * a.size / 1e6 / s['med'] if s['med'] else None, ',.1f')} | {f(x_curl, '.2f')} | "
                         f"{f(ratio, '.2f')} | {s['ok']} | {f(s['others'], '.2f')} | "
                         f"{' '.join(f'{w:.3f}' for w in s['walls'])} |")
                for r in s["runs"]:
                    if not r["ok"]:
                        failures.append(f"- N={n:,} run {r['rep']}, {key}: {r['problem']}")
                    elif r["stderr"]:
                        notes.append(f"- N={n:,} run {r['rep']}, {key} printed: `{r['stderr'].splitlines()[0][:160]}`")
        L.append("")
        L.append("Failed runs:\n")
        L += failures or ["- none"]
        L.append("")
        if notes:
            L.append("Counted runs that printed something on stderr:\n")
            L += notes
            L.append("")
        with open(a.out, "w") as fo:
            fo.write("\n".join(L) + "\n")
        print(f"== wrote {a.out}", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--out", required=True)
    g.add_argument("--n", type=int, required=True)
    g.add_argument("--size", type=int, default=8192)
    g.add_argument("--seed", type=int, default=27)
    g.add_argument("--http-base", required=True)
    g.add_argument("--https-base", required=True)
    r = sub.add_parser("run")
    r.add_argument("--work", required=True)
    r.add_argument("--repo", required=True)
    r.add_argument("--src", required=True, help="N=DIR,N=DIR (made by gen)")
    r.add_argument("--ns", default="")
    r.add_argument("--size", type=int, default=8192)
    r.add_argument("--reps", type=int, default=3)
    r.add_argument("--old", required=True)
    r.add_argument("--new", required=True)
    r.add_argument("--old-trust", default="")
    r.add_argument("--old-commit", default="?")
    r.add_argument("--new-commit", default="?")
    r.add_argument("--old-note", default="")
    r.add_argument("--new-note", default="")
    r.add_argument("--old-trust-note", default="")
    r.add_argument("--ca", required=True)
    r.add_argument("--nginx-pid", type=int, required=True)
    r.add_argument("--nginx-version", default="nginx")
    r.add_argument("--tls-note", default="")
    r.add_argument("--removed-stamp", required=True)
    r.add_argument("--timeout", type=float, default=1800)
    r.add_argument("--command", default="benches/transfer.sh")
    r.add_argument("--out", required=True)
    a = p.parse_args()
    if a.cmd == "gen":
        sys.exit(cmd_gen(a))
    Bench(a).main()


if __name__ == "__main__":
    main()
