#!/usr/bin/env python3
"""The benchmark steps, their verification and benches/RESULTS.md (stdlib only).

Called by benches/run.sh, which builds rsmirror, installs resync and serves
benches/.work/serve/current (state A or B of the source, a symlink this script switches)
and benches/.work/index/site with nginx. Settings come from the BENCH_* environment variables
that run.sh documents. A step that fails (or a command that does not exist yet) is recorded
as a failure in the table; it never stops the harness.
"""

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_STEPS = ["limits", "baseline", "baseline-dump", "audit", "audit-refetch", "audit-offline",
             "audit-offline-sha256", "incremental", "audit-index"]
TOOLS = ["rsmirror", "resync"]
# Seconds between the last large removal of files and the first run that creates files
# (Harness.quiet_after_removals): ext4's 60 + 300 s, and a margin.
QUIET_AFTER_REMOVAL = 370
LIMITS = [
    ("fetch", "plain parallel fetch: `curl --parallel --parallel-max 8` into /dev/null"),
    ("sha256sum", "hashing: coreutils `sha256sum`, one process"),
    ("openssl", "hashing: `openssl dgst -sha256`, one process"),
]
STEP_TEXT = {
    "baseline": "baseline from the Resource List",
    "baseline-dump": "baseline from the Resource Dump (`--via dump`)",
    "audit": "audit against the source (lastmod, length, digests; re-hash)",
    "audit-refetch": "audit `--refetch=all,bytes` (every resource fetched again and its SHA-256 compared; "
                     "nothing stored)",
    "audit-offline": "audit `--offline` (local fixity: re-hash every object, md5 + sha-256)",
    "audit-offline-sha256": "audit `--offline --level sha256` (re-hash every object, sha-256 only)",
    "incremental": "incremental after the 1% change",
    "audit-index": "audit against the Resource List Index (`--level size`)",
}
# Steps resync has no counterpart for.
RESYNC_NA = {"baseline-dump": "no dump client", "audit-refetch": "no refetching audit",
             "audit-offline": "no offline audit",
             "audit-offline-sha256": "no offline audit"}


def file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def load_manifest(path):
    """uri -> (sha256, length)"""
    m = {}
    with open(path) as f:
        for line in f:
            uri, sha, _md5, n = line.rstrip("\n").split("\t")
            m[uri] = (sha, int(n))
    return m


def verify_rsmirror(mirror, expected):
    """None when the mirror's catalog lists exactly the expected resources with their SHA-256
    and length and every object file hashes to its name; else what is wrong."""
    db = os.path.join(mirror, "catalog.sqlite")
    if not os.path.exists(db):
        return "no catalog.sqlite"
    try:
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT r.uri, v.sha256_hex, v.length_bytes FROM resources r"
            " JOIN versions v ON v.id = r.current_version_id WHERE v.change != 'deleted'").fetchall()
        con.close()
    except sqlite3.Error as e:
        return f"catalog unreadable: {e}"
    got = {uri: (sha, n) for uri, sha, n in rows}
    if len(got) != len(expected):
        return f"catalog holds {len(got)} current resources, expected {len(expected)}"
    bad = [uri for uri, want in expected.items() if got.get(uri) != want]
    if bad:
        return f"{len(bad)} resources missing or with a wrong digest/length in the catalog, e.g. {bad[0]}"
    for uri, (sha, n) in expected.items():
        obj = os.path.join(mirror, "objects", "sha256", sha[:2], sha)
        try:
            if os.path.getsize(obj) != n or file_sha256(obj) != sha:
                return f"object {obj} does not hold the bytes of {uri}"
        except OSError as e:
            return f"object of {uri}: {e}"
    return None


def verify_tree(dst, prefix, expected):
    """None when the folder holds exactly the expected resources (uri = prefix/relative path)
    with the right SHA-256; else what is wrong."""
    got = {}
    for root, _dirs, files in os.walk(dst):
        for name in files:
            path = os.path.join(root, name)
            got[prefix + "/" + os.path.relpath(path, dst)] = path
    if len(got) != len(expected):
        return f"destination holds {len(got)} files, expected {len(expected)}"
    for uri, (sha, n) in expected.items():
        path = got.get(uri)
        if path is None:
            return f"{uri} missing"
        if os.path.getsize(path) != n or file_sha256(path) != sha:
            return f"{uri}: wrong bytes"
    return None


def cmd_out(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# Free page reporting (virtio-balloon): the smallest block order the guest reports to the host.
PAGE_REPORTING = "/sys/module/page_reporting/parameters/page_reporting_order"


class Harness:
    def __init__(self, a):
        self.a = a
        self.work = a.work
        self.base = a.base.rstrip("/")
        self.ns = [int(x) for x in os.environ.get("BENCH_N", "10000").replace(" ", ",").split(",") if x]
        self.size = int(os.environ.get("BENCH_SIZE", "8192"))
        self.reps = max(1, int(os.environ.get("BENCH_REPS", "3")))
        steps = os.environ.get("BENCH_STEPS", ",".join(ALL_STEPS)).split(",")
        unknown = [s for s in steps if s and s not in ALL_STEPS]
        if unknown:
            sys.exit(f"harness: unknown step(s) {unknown}; known: {ALL_STEPS}")
        self.steps = [s for s in ALL_STEPS if s in steps]
        self.index_n = int(os.environ.get("BENCH_INDEX_N", "1000000"))
        tools = os.environ.get("BENCH_TOOLS", "rsmirror,resync").split(",")
        self.tools = [t for t in TOOLS if t in tools and (t != "resync" or a.resync)]
        self.out = os.environ.get("BENCH_OUT", os.path.join(HERE, "RESULTS.md"))
        self.label = os.environ.get("BENCH_LABEL", "")
        self.timeout = float(os.environ.get("BENCH_TIMEOUT", "3600"))
        self.cache_note = None
        self.memory_note = "not checked"
        self.removal_note = None
        self.removed_stamp = os.path.join(self.work, "removed.stamp")
        self.page_reporting_was = None
        self.runs = []
        self.sections = []  # (key, title, meta)
        self.logs = os.path.join(self.work, "logs")
        shutil.rmtree(self.logs, ignore_errors=True)
        os.makedirs(self.logs)
        self.load_before = os.getloadavg()
        self.current = None
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self.interrupted)

    def interrupted(self, signum, _frame):
        if self.current is not None:
            try:
                os.killpg(self.current.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        print(f"harness: stopped by signal {signum}; {self.out} not written", file=sys.stderr)
        sys.exit(130)

    # -- plumbing --------------------------------------------------------------------------

    def serve(self, tree):
        link = os.path.join(self.work, "serve", "current")
        tmp = link + ".tmp"
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(tree, tmp)
        os.replace(tmp, link)

    def timed(self, label, argv, cwd=None):
        """Run argv under /usr/bin/time; (exit code or 'timeout', wall seconds, peak RSS KiB,
        CPU seconds: user + system)."""
        base = os.path.join(self.logs, label)
        tfile = base + ".time"
        # Write back what earlier steps left dirty (mirrors written, folders deleted), so that
        # no run pays for another's writeback (rsmirror's syncfs would).
        os.sync()
        with open(base + ".out", "wb") as out, open(base + ".err", "wb") as err:
            t0 = time.perf_counter()
            # In its own process group, so that a timeout or a signal to the harness ends the
            # whole run (time and the command under it).
            p = subprocess.Popen(["/usr/bin/time", "-f", "%e %M %U %S", "-o", tfile] + argv, cwd=cwd,
                                 stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True)
            self.current = p
            try:
                rc = p.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                rc = "timeout"
            finally:
                self.current = None
            wall = time.perf_counter() - t0
        rss = cpu = None
        try:
            with open(tfile) as f:
                last = f.read().strip().splitlines()[-1].split()
            rss = int(last[1])
            cpu = float(last[2]) + float(last[3])
        except (OSError, IndexError, ValueError):
            pass
        return rc, wall, rss, cpu

    def log_text(self, label):
        text = ""
        for ext in (".err", ".out"):
            try:
                with open(os.path.join(self.logs, label + ext), errors="replace") as f:
                    text += f.read()
            except OSError:
                pass
        return text

    def first_error(self, label):
        for line in self.log_text(label).splitlines():
            line = line.strip()
            if line and not line.startswith("Ignoring file"):
                return line[:200]
        return ""

    def record(self, section, step, tool, rep, rc, wall, rss, cpu, problem):
        ok = problem is None
        self.runs.append({"section": section, "step": step, "tool": tool, "rep": rep, "ok": ok,
                          "exit": rc, "wall_s": round(wall, 4), "rss_kib": rss, "cpu_s": cpu,
                          "problem": problem})
        state = "verified" if ok else f"FAILED: {problem}"
        rss_s = f"{rss / 1024:.0f} MiB" if rss else "? MiB"
        print(f"[{section} rep {rep}/{self.reps}] {step:<14} {tool:<9} {wall:8.2f} s {rss_s:>9}  {state}",
              file=sys.stderr, flush=True)

    def fresh_caches(self, state_dir):
        """Start a fetching run from the same memory state as every other one: dirty data
        written back, the page, dentry and inode caches dropped, then the served files read
        back in (the server reads them from memory, as in every run). Without this each run paid
        for what the runs before it left cached: with millions of inodes in the cache, creating
        a file costs about three times as much here (long inode hash chains, slab reclaim), so a
        baseline got slower over a section while the fetch limit, measured first and writing
        nothing, did not. Needs root; without it the table says so."""
        if self.drop_caches():
            self.warm(state_dir)
        self.settle()

    def removed(self, path):
        """shutil.rmtree(path), remembered in a stamp file that outlives this harness when it
        removed anything (see quiet_after_removals)."""
        if os.path.lexists(path):
            shutil.rmtree(path, ignore_errors=True)
            self.mark_removed()

    def mark_removed(self):
        """Remember that files were removed just now (see quiet_after_removals)."""
        with open(self.removed_stamp, "w") as f:
            f.write(f"{time.time()}\n")

    def quiet_after_removals(self):
        """Before the first run that creates files, wait (untimed) until the last large removal
        (this harness's cleanup of an interrupted run, the end of a previous harness, a
        regenerated source) is QUIET_AFTER_REMOVAL seconds old. ext4 without a journal (the
        root file system of the machine the committed results come from) will not hand out an
        inode freed in the last 60 s, or 360 s while its inode-table block is dirty, which it is
        while files are created beside it: every new file first walks past each such inode of
        its block group (`recently_deleted`). A 10k baseline of either tool started a minute
        after a previous harness removed its million files spent a third of its time there,
        and took up to 40% longer than the same run ten minutes later."""
        try:
            with open(self.removed_stamp) as f:
                age = time.time() - float(f.read())
        except (OSError, ValueError):
            return
        wait = QUIET_AFTER_REMOVAL - age
        if wait <= 0:
            return
        print(f"== waiting {wait:.0f} s: files were removed {age:.0f} s ago (ext4 skips recently freed inodes)",
              file=sys.stderr, flush=True)
        os.sync()
        time.sleep(wait)
        self.removal_note = (f"the first fetching run waited {wait:.0f} s (untimed) so that the last removal of "
                             f"files was {QUIET_AFTER_REMOVAL} s old (ext4 skips inodes freed more recently)")

    @staticmethod
    def settle(idle=0.95, window=0.5, longest=30.0):
        """Wait (untimed) until the machine is idle: the CPUs at least `idle` idle over a
        `window` of seconds, for at most `longest` seconds. Dropping the caches and reading a
        mirror back in leave the kernel busy for seconds after (freeing a million dentries and
        inodes, writing back), and a run started at once shared the CPUs with it: the 1M index
        audit took 2.75-3.39 s straight after the warm-up and 2.55-2.66 s fifteen seconds later,
        run for run."""
        def busy_idle():
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
            return sum(v), v[3] + v[4]  # idle + iowait
        deadline = time.monotonic() + longest
        while time.monotonic() < deadline:
            t0, i0 = busy_idle()
            time.sleep(window)
            t1, i1 = busy_idle()
            if t1 > t0 and (i1 - i0) / (t1 - t0) >= idle:
                return

    def drop_caches(self):
        """sync, then drop the page, dentry and inode caches; False (and noted) without root."""
        os.sync()
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
        except OSError as e:
            self.cache_note = f"caches were not dropped before fetching runs and index audits ({e.strerror})"
            return False
        return True

    @staticmethod
    def warm(folder):
        """Read every file under folder into the page cache (not timed). Audits run warm: the
        mirror they check was written by the baseline, but a later run's cache drop evicted it."""
        subprocess.run(["sh", "-c", 'find "$1" -type f -print0 | xargs -0 cat >/dev/null', "sh", folder],
                       stdin=subprocess.DEVNULL, check=False)

    def run_step(self, section, step, tool, rep, argv, check, cwd=None):
        """Time argv, then check() -> None or a problem. True when the run counts."""
        label = f"{section}-r{rep}-{step}-{tool}"
        rc, wall, rss, cpu = self.timed(label, argv, cwd)
        if rc != 0:
            problem = f"exit {rc}: {self.first_error(label)}"
        else:
            problem = check(self.log_text(label))
        self.record(section, step, tool, rep, rc, wall, rss, cpu, problem)
        return problem is None

    # -- the synthetic source ---------------------------------------------------------------

    def generate(self, kind, out, extra):
        """Run gen.py unless `out` already holds the same generation (same arguments, same
        generator)."""
        with open(os.path.join(HERE, "gen.py"), "rb") as f:
            key = {"args": [kind, self.base] + extra, "gen": hashlib.sha256(f.read()).hexdigest()}
        if kind == "index":
            with open(os.path.join(self.a.crate, "schema.sql"), "rb") as f:
                key["schema"] = hashlib.sha256(f.read()).hexdigest()
        stamp = os.path.join(out, "generated.json")
        try:
            with open(stamp) as f:
                if json.load(f) == key:
                    print(f"== reusing {out}", file=sys.stderr)
                    return True
        except (OSError, ValueError):
            pass
        argv = [sys.executable, os.path.join(HERE, "gen.py"), kind, "--out", out, "--base", self.base] + extra
        t0 = time.perf_counter()
        regenerating = os.path.lexists(out)
        if subprocess.run(argv, stdin=subprocess.DEVNULL).returncode != 0:
            return False
        if regenerating:  # gen.py removed the old generation first
            self.mark_removed()
        print(f"== generated in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        with open(stamp, "w") as f:
            json.dump(key, f)
        return True

    # -- one source size --------------------------------------------------------------------

    def section_n(self, n):
        key = f"N{n}"
        src = os.path.join(self.work, f"src-{n}")
        if not self.generate("source", src, ["--n", str(n), "--size", str(self.size)]):
            sys.exit("harness: gen.py source failed")
        with open(os.path.join(src, "meta.json")) as f:
            meta = json.load(f)
        self.sections.append((key, n, meta))
        man_a = load_manifest(os.path.join(src, "manifest-A.tsv"))
        man_b = load_manifest(os.path.join(src, "manifest-B.tsv"))
        # Every run writes into a fresh folder, and all of them are removed only when the
        # harness ends: ext4 skips inodes freed in the last minute(s) when it allocates new
        # ones (`recently_deleted`), so deleting a 100,000-file mirror just before the next
        # baseline made that baseline (of either tool) pay for the deletion — up to 2x slower.
        runs_root = os.path.join(self.work, "runs")
        root = self.base + "/"
        rs = self.a.rsmirror
        y = self.a.resync

        def mapping(d):
            """resync's `uri=path` argument: the resources below /r/ go to the folder d."""
            return f"{self.base}/r={d}"

        steps = self.steps
        need_base = any(s in steps for s in ("audit", "audit-refetch", "audit-offline", "audit-offline-sha256",
                                              "incremental"))

        self.quiet_after_removals()
        for rep in range(1, self.reps + 1):
            order = self.tools if rep % 2 else list(reversed(self.tools))
            runs_dir = os.path.join(runs_root, f"{key}-{rep}")
            shutil.rmtree(runs_dir, ignore_errors=True)
            os.makedirs(runs_dir)
            mirror = {t: os.path.join(runs_dir, t) for t in TOOLS}  # the rsmirror mirror / resync workdir
            dst = os.path.join(mirror["resync"], "dst")
            have = {}
            self.serve(os.path.join(src, "A"))

            if "limits" in steps:
                files = os.path.join(src, "files-A.nul")
                self.fresh_caches(os.path.join(src, "A"))
                self.run_step(key, "limits", "fetch", rep,
                              ["curl", "-s", "--fail", "--parallel", "--parallel-max", "8", "-K",
                               os.path.join(src, "fetch-A.curl")], lambda _: None)
                self.run_step(key, "limits", "sha256sum", rep,
                              ["sh", "-c", 'xargs -0 -a "$1" sha256sum >/dev/null', "sh", files], lambda _: None)
                self.run_step(key, "limits", "openssl", rep,
                              ["sh", "-c", 'xargs -0 -a "$1" openssl dgst -sha256 >/dev/null', "sh", files],
                              lambda _: None)

            if "baseline" in steps or need_base:
                step = "baseline" if "baseline" in steps else "setup-baseline"
                for tool in order:
                    self.fresh_caches(os.path.join(src, "A"))
                    if tool == "rsmirror":
                        have[tool] = self.run_step(key, step, tool, rep,
                                                   [rs, "baseline", root, "--via", "list",
                                                    "--mirror", mirror[tool], "-q"],
                                                   lambda _: verify_rsmirror(mirror["rsmirror"], man_a))
                    else:
                        os.makedirs(mirror[tool], exist_ok=True)
                        have[tool] = self.run_step(
                            key, step, tool, rep,
                            [y, "--baseline", "--hash", "md5", "--hash", "sha-256", mapping(dst)],
                            lambda log: (None if re.search(r"Status:\s+SYNCED", log) else "no 'Status: SYNCED'")
                            or verify_tree(dst, f"{self.base}/r", man_a),
                            cwd=mirror[tool])

            if "baseline-dump" in steps and "rsmirror" in self.tools:
                m = os.path.join(runs_dir, "rsmirror-dump")
                self.fresh_caches(os.path.join(src, "A"))
                self.run_step(key, "baseline-dump", "rsmirror", rep,
                              [rs, "baseline", root, "--via", "dump", "--mirror", m, "-q"],
                              lambda _: verify_rsmirror(m, man_a))

            if "audit" in steps:
                for tool in order:
                    if not have.get(tool):
                        self.record(key, "audit", tool, rep, "-", 0, None, None, "no baseline mirror to audit")
                    elif tool == "rsmirror":
                        self.warm(mirror[tool])
                        self.run_step(key, "audit", tool, rep, [rs, "audit", root, "--mirror", mirror[tool], "-q"],
                                      lambda _: verify_rsmirror(mirror["rsmirror"], man_a))
                    else:
                        self.warm(dst)
                        self.run_step(
                            key, "audit", tool, rep,
                            [y, "--audit", "--hash", "md5", "--hash", "sha-256", mapping(dst)],
                            lambda log: (None if re.search(r"Status:\s+IN SYNC", log) else "no 'Status: IN SYNC'")
                            or verify_tree(dst, f"{self.base}/r", man_a),
                            cwd=mirror[tool])

            if "audit-refetch" in steps and "rsmirror" in self.tools:
                if not have.get("rsmirror"):
                    self.record(key, "audit-refetch", "rsmirror", rep, "-", 0, None, None,
                                "no baseline mirror to audit")
                else:
                    # The same transfers as the baseline, and no writes: every resource is fetched
                    # again and hashed, the bytes dropped. Caches as for the baseline.
                    self.fresh_caches(os.path.join(src, "A"))
                    self.run_step(key, "audit-refetch", "rsmirror", rep,
                                  [rs, "audit", root, "--refetch=all,bytes", "--level", "presence",
                                   "--mirror", mirror["rsmirror"], "-q"],
                                  lambda _: verify_rsmirror(mirror["rsmirror"], man_a))

            for step, level in (("audit-offline", []), ("audit-offline-sha256", ["--level", "sha256"])):
                if step not in steps or "rsmirror" not in self.tools:
                    continue
                if not have.get("rsmirror"):
                    self.record(key, step, "rsmirror", rep, "-", 0, None, None, "no baseline mirror to audit")
                else:
                    self.warm(mirror["rsmirror"])
                    self.run_step(key, step, "rsmirror", rep,
                                  [rs, "audit", "--offline"] + level + ["--mirror", mirror["rsmirror"], "-q"],
                                  lambda _: verify_rsmirror(mirror["rsmirror"], man_a))

            if "incremental" in steps:
                self.serve(os.path.join(src, "B"))
                for tool in order:
                    if not have.get(tool):
                        self.record(key, "incremental", tool, rep, "-", 0, None, None, "no baseline mirror to update")
                    elif tool == "rsmirror":
                        self.warm(mirror[tool])
                        self.run_step(key, "incremental", tool, rep,
                                      [rs, "incremental", root, "--mirror", mirror[tool], "-q"],
                                      lambda _: verify_rsmirror(mirror["rsmirror"], man_b))
                    else:
                        self.warm(dst)
                        # No --hash here: resync 2.0.1 --incremental with --hash crashes
                        # ('ChangeList' object has no attribute 'hashes').
                        self.run_step(
                            key, "incremental", tool, rep,
                            [y, "--incremental", "--delete", "--changelist-uri", meta["changelist"], mapping(dst)],
                            lambda log: (None if re.search(r"Status:\s+CHANGES APPLIED", log)
                                         else "no 'Status: CHANGES APPLIED'")
                            or verify_tree(dst, f"{self.base}/r", man_b),
                            cwd=mirror[tool])
                self.serve(os.path.join(src, "A"))

    # -- the 1,000,000-entry Resource List Index --------------------------------------------

    def section_index(self):
        n = self.index_n
        out = os.path.join(self.work, "index")
        if not self.generate("index", out, ["--n", str(n), "--schema", os.path.join(self.a.crate, "schema.sql")]):
            sys.exit("harness: gen.py index failed")
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
        self.sections.append(("index", n, meta))
        mirror = os.path.join(out, "mirror")
        catalog = os.path.join(mirror, "catalog.sqlite")
        pristine = os.path.join(out, "catalog.pristine.sqlite")
        if not os.path.exists(pristine):
            shutil.copyfile(catalog, pristine)
        dst = os.path.join(out, "resync-dst")
        resync_cwd = os.path.join(out, "resync-cwd")
        os.makedirs(resync_cwd, exist_ok=True)

        def count_current(_log):
            con = sqlite3.connect(catalog)
            k = con.execute("SELECT count(*) FROM resources r JOIN versions v ON v.id = r.current_version_id"
                            " WHERE v.change != 'deleted'").fetchone()[0]
            con.close()
            return None if k == n else f"catalog holds {k} resources, expected {n}"

        def resync_in_sync(log):
            m = re.search(r"Status:\s+IN SYNC \(same=(\d+)", log)
            return None if m and int(m.group(1)) == n else "no 'Status: IN SYNC (same=N'"

        def fresh_index_caches(tool):
            """Each run audits a warm mirror from the same memory state: the caches dropped
            (what the other tool's run left there, a million more dentries and inodes, made the
            next run slower), then the lists and this tool's 1,000,000 object files (inodes;
            rsmirror: and its catalog) read in, untimed; then a wait for the machine to settle."""
            if tool == "rsmirror":
                # Every run starts from the same catalog (an audit records its findings),
                # restored before the caches are dropped, so that its 678 MB are written back
                # by then rather than during the run.
                for extra in ("-wal", "-shm"):
                    if os.path.exists(catalog + extra):
                        os.unlink(catalog + extra)
                shutil.copyfile(pristine, catalog)
            self.drop_caches()
            objects, more = ((os.path.join(mirror, "objects"), catalog) if tool == "rsmirror"
                             else (dst, os.devnull))
            subprocess.run(["sh", "-c", 'du -s "$1" >/dev/null; cat "$2"/*.xml "$3" >/dev/null',
                            "sh", objects, os.path.join(out, "site", "idx"), more],
                           stdin=subprocess.DEVNULL, check=False)
            self.settle()

        for rep in range(1, self.reps + 1):
            order = self.tools if rep % 2 else list(reversed(self.tools))
            for tool in order:
                fresh_index_caches(tool)
                if tool == "rsmirror":
                    self.run_step("index", "audit-index", tool, rep,
                                  [self.a.rsmirror, "audit", meta["index"], "--level", "size", "--mirror", mirror, "-q"],
                                  count_current)
                else:
                    self.run_step("index", "audit-index", tool, rep,
                                  [self.a.resync, "--audit", "--sitemap", meta["index"], f"{self.base}/idx/r={dst}"],
                                  resync_in_sync, cwd=resync_cwd)

    # -- RESULTS.md -------------------------------------------------------------------------

    def machine(self):
        def read(path):
            try:
                with open(path) as f:
                    return f.read()
            except OSError:
                return ""
        cpu = re.search(r"^model name\s*:\s*(.*)$", read("/proc/cpuinfo"), re.M)
        mem = re.search(r"^MemTotal:\s*(\d+)", read("/proc/meminfo"), re.M)
        osname = re.search(r'^PRETTY_NAME="?([^"\n]*)', read("/etc/os-release"), re.M)
        crate = self.a.crate
        commit = cmd_out(["git", "-C", crate, "rev-parse", "--short=12", "HEAD"]) or "unknown"
        # The results file itself (left modified by an earlier run) is not a change to what is
        # measured.
        if cmd_out(["git", "--no-optional-locks", "-C", crate, "status", "--porcelain", "--untracked-files=no",
                    "--", ".", ":(exclude)benches/RESULTS.md"]):
            commit += " + uncommitted changes"
        resync = (f"resync {cmd_out([os.path.join(os.path.dirname(self.a.resync), 'pip'), 'show', 'resync']).split('Version: ')[-1].splitlines()[0]}"
                  f" ({cmd_out([os.path.join(os.path.dirname(self.a.resync), 'python'), '--version'])})"
                  if self.a.resync else self.a.resync_note or "not run")
        load_after = os.getloadavg()
        return [
            ("date (UTC)", dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M")),
            ("CPU", f"{cpu.group(1) if cpu else platform.processor()} × {os.cpu_count()} (nproc {cmd_out(['nproc'])})"),
            ("memory", f"{int(mem.group(1)) / 1048576:.1f} GiB" if mem else "?"),
            ("kernel", platform.release()),
            ("OS", osname.group(1) if osname else platform.platform()),
            ("rsmirror", f"commit {commit}; {cmd_out([self.a.rsmirror, '--version'])}; {cmd_out(['rustc', '--version'])}"),
            ("reference client", resync),
            ("server", f"{self.a.nginx_version.replace('nginx version: ', '')} on 127.0.0.1 (sendfile, keep-alive)"),
            ("limits", f"{cmd_out(['curl', '--version']).splitlines()[0].split(' (')[0] if cmd_out(['curl', '--version']) else 'curl ?'}; "
                       f"{cmd_out(['openssl', 'version'])}; "
                       f"{cmd_out(['sha256sum', '--version']).splitlines()[0] if cmd_out(['sha256sum', '--version']) else ''}"),
            ("load average (1/5/15 min)", f"before {'/'.join(f'{x:.2f}' for x in self.load_before)}, "
                                          f"after {'/'.join(f'{x:.2f}' for x in load_after)}"),
            ("settings", f"BENCH_N={','.join(map(str, self.ns))} BENCH_SIZE={self.size} BENCH_REPS={self.reps} "
                         f"BENCH_INDEX_N={self.index_n} BENCH_STEPS={','.join(self.steps)} "
                         f"BENCH_TOOLS={os.environ.get('BENCH_TOOLS', 'rsmirror,resync')}"),
            ("caches", self.cache_note or "dropped before every fetching run (the fetch limit and both baselines), "
                                          "then the served files read back in; and before every index audit, "
                                          "then the lists and that tool's mirror read back in; after each read-back, "
                                          "a wait for both CPUs to be 95% idle"),
            ("host memory", self.memory_note),
            ("file removals", self.removal_note or f"none in the {QUIET_AFTER_REMOVAL} s before the first fetching run "
                                                   "(ext4 skips inodes freed more recently)"),
        ]

    def stats(self, section, step, tool):
        """(median wall s, max peak RSS KiB, 'ok/total', all walls, median CPU s) over the
        counted runs."""
        rs = [r for r in self.runs if (r["section"], r["step"], r["tool"]) == (section, step, tool)]
        ok = [r for r in rs if r["ok"]]
        walls = [r["wall_s"] for r in ok]
        med = statistics.median(walls) if walls else None
        rss = max((r["rss_kib"] or 0 for r in ok), default=None)
        cpus = [r["cpu_s"] for r in ok if r.get("cpu_s") is not None]
        cpu = statistics.median(cpus) if cpus else None
        return med, rss, f"{len(ok)}/{len(rs)}", walls, cpu

    def write(self):
        L = []
        L.append("# rsmirror benchmarks: rsmirror vs resync 2.0.1, and the machine's limits\n")
        if self.label:
            L.append(f"> **{self.label}**\n")
        L.append("Written by `benches/run.sh` (see `benches/README.md`). Each time is the median of the "
                 f"runs that counted ({self.reps} per step and tool, the tools alternating); a run counts only "
                 "when the command succeeded and the harness then verified the mirror: every resource of the "
                 "source state present, with the right SHA-256 (rsmirror: catalog and object files; resync: the "
                 "files it wrote). Peak RSS is the largest of the counted runs. `CPU s` is the median of user + "
                 "system CPU seconds of the command (its threads and children; on this machine the server, nginx, "
                 "uses CPU too, not counted). MB = 10^6 bytes. "
                 "`runs` lists every counted wall time; `ok` is counted runs / runs.\n")
        L.append("## Machine\n")
        L.append("| | |")
        L.append("|---|---|")
        for k, v in self.machine():
            L.append(f"| {k} | {v} |")
        L.append("")

        def fmt(x, spec):
            return "–" if x is None else format(x, spec)

        failures = []
        for r in self.runs:
            if not r["ok"]:
                failures.append(f"- {r['section']} run {r['rep']}, {r['step']}, {r['tool']}: {r['problem']}")

        for key, n, meta in self.sections:
            if key == "index":
                continue
            total = meta["bytes_a"]
            ch = meta["changes"]
            n_changes = ch["updated"] + ch["created"] + ch["deleted"]
            work = {s: (n, total) for s in ("baseline", "baseline-dump", "audit", "audit-refetch",
                                            "audit-offline", "audit-offline-sha256")}
            work["incremental"] = (n_changes, meta["change_bytes"])
            L.append(f"## N = {n:,} resources × {self.size:,} bytes ({total / 1e6:.1f} MB)\n")
            lim = {}
            if "limits" in self.steps:
                L.append("Limits, measured in the same run over the same bytes (state A):\n")
                L.append("| limit | median s | CPU s | resources/s | MB/s | peak RSS MiB | ok | runs (s) |")
                L.append("|---|---:|---:|---:|---:|---:|---:|---|")
                for name, text in LIMITS:
                    med, rss, okc, walls, cpu = self.stats(key, "limits", name)
                    lim[name] = med
                    L.append(f"| {text} | {fmt(med, '.3f')} | {fmt(cpu, '.2f')} | "
                             f"{fmt(n / med if med else None, ',.0f')} | "
                             f"{fmt(total / 1e6 / med if med else None, ',.1f')} | "
                             f"{fmt(rss / 1024 if rss else None, '.0f')} | {okc} | "
                             f"{' '.join(f'{w:.3f}' for w in walls)} |")
                L.append("")
            L.append(f"Changes between state A and B: {ch['updated']} updated, {ch['created']} created, "
                     f"{ch['deleted']} deleted ({n_changes} resources, {meta['change_bytes'] / 1e6:.2f} MB to fetch). "
                     "`rsmirror × fetch` (steps that fetch resources) and `rsmirror × openssl` are rsmirror's time "
                     "over the time the limit needs for the same bytes (the limit's MB/s applied to the step's "
                     "bytes): 1.0 = as fast as the limit. `resync / rsmirror` > 1: rsmirror is faster.\n")
            L.append("| step | resources | rsmirror s | CPU s | res/s | MB/s | RSS MiB | ok | resync s | CPU s | "
                     "res/s | MB/s | RSS MiB | ok | resync / rsmirror | rsmirror × fetch | rsmirror × openssl | "
                     "rsmirror runs (s) | resync runs (s) |")
            L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
            for step in self.steps:
                if step in ("limits", "audit-index"):
                    continue
                res, nbytes = work[step]
                cells = [STEP_TEXT[step], f"{res:,}"]
                meds = {}
                walls_of = {}
                for tool in TOOLS:
                    med, rss, okc, walls, cpu = self.stats(key, step, tool)
                    meds[tool] = med
                    walls_of[tool] = " ".join(f"{w:.3f}" for w in walls)
                    if tool == "resync" and step in RESYNC_NA:
                        cells += ["n/a", "", "", "", "", RESYNC_NA[step]]
                        continue
                    if tool not in self.tools:
                        cells += ["not run", "", "", "", "", ""]
                        continue
                    cells += [fmt(med, ".3f") if med else "FAIL", fmt(cpu, ".2f"),
                              fmt(res / med if med else None, ",.0f"),
                              fmt(nbytes / 1e6 / med if med else None, ",.1f"),
                              fmt(rss / 1024 if rss else None, ".0f"), okc]
                r = meds["rsmirror"]
                ratio = meds["resync"] / r if r and meds["resync"] else None
                fetches = step in ("baseline", "baseline-dump", "incremental")
                x_fetch = r * (total / lim["fetch"]) / nbytes if fetches and r and lim.get("fetch") else None
                x_ossl = r * (total / lim["openssl"]) / nbytes if r and lim.get("openssl") else None
                cells += [fmt(ratio, ".1f"), fmt(x_fetch, ".2f"), fmt(x_ossl, ".2f"),
                          walls_of["rsmirror"], walls_of["resync"]]
                L.append("| " + " | ".join(cells) + " |")
            L.append("")

        for key, n, meta in self.sections:
            if key != "index":
                continue
            L.append(f"## Audit against a {n:,}-entry Resource List Index\n")
            L.append(f"`{meta['index']}`: {(n + 49_999) // 50_000} Resource Lists of at most 50,000 entries "
                     f"({meta['list_bytes'] / 1e6:.0f} MB of XML, md5 and sha-256 on every entry). The mirrors were "
                     "built directly by `benches/gen.py index` (catalog rows shaped like `rsmirror baseline`'s, one "
                     "object file per resource; resync's destination hard-links the same files, mtime = lastmod), not "
                     "fetched. rsmirror runs `audit --level size` (lastmod, length and digests against the list; "
                     "each object present with its length); resync runs `--audit` without `--hash` (lastmod and "
                     "size of each file). MB/s counts the list bytes. Counted runs: rsmirror exit 0 (in sync) and "
                     f"{n:,} current resources in the catalog; resync `Status: IN SYNC (same={n})`.\n")
            L.append("| step | entries | rsmirror s | CPU s | entries/s | MB/s | RSS MiB | ok | resync s | CPU s | "
                     "entries/s | MB/s | RSS MiB | ok | resync / rsmirror | rsmirror runs (s) | resync runs (s) |")
            L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
            cells = [STEP_TEXT["audit-index"], f"{n:,}"]
            meds, walls_of = {}, {}
            for tool in TOOLS:
                med, rss, okc, walls, cpu = self.stats("index", "audit-index", tool)
                meds[tool] = med
                walls_of[tool] = " ".join(f"{w:.3f}" for w in walls)
                if tool not in self.tools:
                    cells += ["not run", "", "", "", "", ""]
                    continue
                cells += [fmt(med, ".3f") if med else "FAIL", fmt(cpu, ".2f"),
                          fmt(n / med if med else None, ",.0f"),
                          fmt(meta["list_bytes"] / 1e6 / med if med else None, ",.1f"),
                          fmt(rss / 1024 if rss else None, ".0f"), okc]
            ratio = meds["resync"] / meds["rsmirror"] if meds["rsmirror"] and meds["resync"] else None
            cells += [fmt(ratio, ".1f"), walls_of["rsmirror"], walls_of["resync"]]
            L.append("| " + " | ".join(cells) + " |")
            L.append("")

        L.append("## Failures\n")
        if self.a.resync_note:
            L.append(f"- {self.a.resync_note}")
        L += failures or ["- none"]
        L.append("")
        L.append("Logs of every run: `benches/.work/logs/`; every run as JSON: `benches/.work/results.json`.\n")
        tmp = self.out + ".tmp"
        with open(tmp, "w") as f:
            f.write("\n".join(L))
        os.replace(tmp, self.out)
        with open(os.path.join(self.work, "results.json"), "w") as f:
            json.dump({"sections": self.sections, "runs": self.runs}, f, indent=1)

    def hold_free_memory(self):
        """Keep the guest's free memory backed by the host for the run: disable free page
        reporting (a virtio-balloon guest hands free memory back to the host a moment after it
        is freed), then touch the free memory once. The setting to restore goes into
        `self.page_reporting_was` as soon as it is changed: main's `finally` restores it, also
        when the touch is interrupted.

        On the benchmark VM (Firecracker) a page handed back costs about 14 µs the next time the
        guest touches it (11 GB written to tmpfs: 39 s). The harness drops the caches before
        every fetching run, so without this every page a run then wrote came back from the host
        that way: a 100,000-resource baseline spent 30 µs per 8 KiB resource (a sixth of its
        CPU) in `copy_folio_from_iter_atomic`, its writes' copy into the page cache, and
        nothing of the kind at 10,000 resources (over before the 2 s reporting delay). curl
        into /dev/null and the hashing limits write no pages and never paid it. A machine in
        steady state takes new page cache from old page cache, not from the host."""
        if os.environ.get("BENCH_PAGE_REPORTING") == "keep":
            self.memory_note = "free page reporting left as it was (BENCH_PAGE_REPORTING=keep)"
            return
        try:
            with open(PAGE_REPORTING) as f:
                old = f.read().strip()
        except OSError:
            self.memory_note = "no free page reporting to turn off"
            return
        try:
            # Only free blocks of at least this order are reported; the allocator's largest
            # is 10, so 11 reports nothing.
            with open(PAGE_REPORTING, "w") as f:
                f.write("11\n")
        except OSError as e:
            self.memory_note = f"free page reporting (order {old}) could not be turned off ({e.strerror})"
            return
        self.page_reporting_was = old
        with open("/proc/meminfo") as f:
            free_kib = int(re.search(r"^MemFree:\s*(\d+)", f.read(), re.M).group(1))
        chunk = 256 << 20
        count = max(0, (free_kib * 1024 - (2 << 30)) // chunk)
        print(f"== free page reporting off; touching {count * chunk / 1e9:.1f} GB of free memory once",
              file=sys.stderr, flush=True)
        started = time.monotonic()
        held = [bytearray(chunk) for _ in range(count)]  # zero-filled: every page written
        del held
        self.memory_note = (f"free page reporting to the host (page_reporting_order {old}) turned off for the "
                            f"run and restored after; {count * chunk / 1e9:.1f} GB of free memory touched once "
                            f"beforehand ({time.monotonic() - started:.0f} s)")

    def main(self):
        print(f"== steps {self.steps}, tools {self.tools}, N {self.ns}, reps {self.reps}", file=sys.stderr)
        runs_root = os.path.join(self.work, "runs")
        # Leftovers of an interrupted harness; removed before the source is generated, which
        # gives the file system time before the first timed run (see quiet_after_removals).
        self.removed(runs_root)
        try:
            self.hold_free_memory()
            for n in self.ns:
                if any(s != "audit-index" for s in self.steps):
                    self.section_n(n)
            if "audit-index" in self.steps and self.index_n > 0:
                self.section_index()
            self.write()
        finally:
            if self.page_reporting_was is not None:
                with open(PAGE_REPORTING, "w") as f:
                    f.write(self.page_reporting_was + "\n")
            self.removed(runs_root)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--work", required=True)
    p.add_argument("--crate", required=True)
    p.add_argument("--base", required=True, help="http://127.0.0.1:PORT, served by run.sh's nginx")
    p.add_argument("--rsmirror", required=True)
    p.add_argument("--resync", default="", help="resync-sync, or empty when it could not be installed")
    p.add_argument("--resync-note", default="")
    p.add_argument("--nginx-version", default="nginx")
    Harness(p.parse_args()).main()


if __name__ == "__main__":
    main()
