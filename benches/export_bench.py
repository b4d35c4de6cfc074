#!/usr/bin/env python3
"""Export benchmark helper for benches/export.sh (stdlib only).

  prepare   make the 100,000-resource mirror (benches/gen.py index: one run, one object per
            resource) once
  run       time `rsmirror export tree|bagit` against cp -al, cp -r and bagit.py on that mirror,
            and the peak RSS of both formats on the 1,000,000-resource mirror; check what the
            exports hold; write a Markdown table
"""
import argparse
import datetime as dt
import hashlib
import json
import os
import shlex
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

STAMP = "export-bench.stamp"
OWN = ".rsmirror-export"
TIMEOUT = 3600


def stamp_ok(path, want):
    try:
        with open(path) as f:
            return json.load(f) == want
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------
# prepare


def cmd_prepare(a):
    """gen.py writes meta.json last (it starts by deleting the folder): meta.json with the same n
    and base, and our stamp, mean a complete mirror."""
    out = os.path.abspath(a.out)
    mirror = os.path.join(out, "mirror")
    want = {"n": a.n, "base": a.base.rstrip("/")}
    try:
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
        have = (os.path.exists(os.path.join(mirror, "catalog.sqlite")) and meta.get("n") == a.n
                and meta.get("base") == want["base"])
    except (OSError, ValueError):
        have = False
    if have and stamp_ok(os.path.join(out, STAMP), want):
        print(f"prepare: reusing {mirror} (n = {a.n})")
        return 0
    t0 = time.perf_counter()
    subprocess.run(["nice", "-n", "10", sys.executable, a.gen, "index", "--out", out, "--base", a.base,
                    "--n", str(a.n), "--schema", a.schema], check=True)
    print(f"prepare: gen.py index took {time.perf_counter() - t0:.0f} s")
    with open(os.path.join(out, STAMP), "w") as f:
        json.dump(want, f)
    return 0


# ---------------------------------------------------------------------------------------------
# run


def parse_time_file(path):
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    e, m, u, s = lines[-1].split()
    return float(e), int(m), float(u), float(s)


def timed(cmd, err_path, cwd=None):
    """One run, stdout to /dev/null, stderr to err_path: dict of wall s (perf_counter around
    /usr/bin/time), %e, peak RSS kB, user and sys s, rc."""
    with tempfile.NamedTemporaryFile("r", suffix=".time", delete=False) as tf:
        tpath = tf.name
    try:
        with open(err_path, "wb") as ef:
            t0 = time.perf_counter()
            p = subprocess.run(["/usr/bin/time", "-f", "%e %M %U %S", "-o", tpath] + cmd,
                               stdout=subprocess.DEVNULL, stderr=ef, cwd=cwd, timeout=TIMEOUT)
            wall = time.perf_counter() - t0
        e, m, u, s = parse_time_file(tpath)
    finally:
        os.unlink(tpath)
    return {"wall": wall, "e": e, "rss_kb": m, "user": u, "sys": s, "rc": p.returncode}


def err_text(path, limit=300):
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return ""
    return " | ".join(lines[-5:])[:limit]


class Trash:
    """Untimed removal of what a run made. The file system here (ext4 without a journal) does not
    reuse an inode within 60 s of its deletion (300 s more while its inode table block is dirty:
    fs/ext4/ialloc.c, recently_deleted), and an allocation walks past every such inode, reading
    its block: deleting 100,000 files and then making 100,000 costs the second ~10x its time
    (cp -r: 5 s -> 40-60 s, nearly all sys). So within a step nothing is deleted: each run's
    output is renamed into a trash folder (then `sync`: no dirty pages carried into the next run,
    no cache dropped), the trash is deleted after the step, and the next step starts only once
    those deletions are more than INODE_QUIET s old."""
    INODE_QUIET = 65

    def __init__(self, root):
        self.root = root
        self.k = 0
        self.purged_at = None
        os.makedirs(root, exist_ok=True)

    def put(self, *paths):
        for p in paths:
            if os.path.lexists(p):
                self.k += 1
                os.rename(p, os.path.join(self.root, str(self.k)))
        subprocess.run(["sync"], check=True)

    def purge(self):
        if os.listdir(self.root):
            t0 = time.perf_counter()
            subprocess.run(["rm", "-rf", self.root], check=True)
            subprocess.run(["sync"], check=True)
            os.makedirs(self.root)
            self.purged_at = time.monotonic()
            print(f"   trash deleted in {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)

    def wait_quiet(self):
        if self.purged_at is not None:
            left = self.INODE_QUIET - (time.monotonic() - self.purged_at)
            if left > 0:
                print(f"   waiting {left:.0f} s for the deleted inodes to be reusable", file=sys.stderr, flush=True)
                time.sleep(left)


def count_files(root, skip_own=True):
    """Regular files under root (not following links); root/.rsmirror-export left out."""
    n = 0
    stack = [root]
    while stack:
        d = stack.pop()
        with os.scandir(d) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    if skip_own and d == root and e.name == OWN:
                        continue
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=False):
                    n += 1
    return n


def find_named(root, prefix):
    """Paths under root whose name starts with prefix (left-over temporary files)."""
    found = []
    for d, dirs, files in os.walk(root):
        found += [os.path.join(d, f) for f in files if f.startswith(prefix)]
    return found


def count_lines(path):
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            n += b.count(b"\n")
    return n


def catalog_facts(mirror):
    con = sqlite3.connect(f"file:{os.path.join(mirror, 'catalog.sqlite')}?mode=ro", uri=True)
    (current,) = con.execute("SELECT count(*) FROM resources r JOIN versions v ON v.id = r.current_version_id"
                             " WHERE v.change != 'deleted'").fetchone()
    (total,) = con.execute("SELECT count(*) FROM resources").fetchone()
    con.close()
    return {"current": current, "resources": total}


def lastmod_of(mirror, uri):
    con = sqlite3.connect(f"file:{os.path.join(mirror, 'catalog.sqlite')}?mode=ro", uri=True)
    row = con.execute("SELECT v.lastmod FROM resources r JOIN versions v ON v.id = r.current_version_id"
                      " WHERE r.uri = ?", (uri,)).fetchone()
    con.close()
    return row[0] if row else None


def object_path(mirror, sha):
    return os.path.join(mirror, "objects", "sha256", sha[:2], sha)


def check_tree(mirror, dest, root, want, link, checks, label):
    """An rsmirror export: file count, map.tsv, export.json, no INCOMPLETE or temporaries, and a
    sample of files against their objects (bytes; hard: the same inode; copy: lastmod as mtime)."""
    def add(ok, what, detail=""):
        checks.append(("ok" if ok else "WRONG", f"{label}: {what}", detail))

    own = os.path.join(dest, OWN)
    got = count_files(root)
    add(got == want, f"{got:,} files exported (expected {want:,}, the current resources)")
    map_lines = count_lines(os.path.join(own, "map.tsv"))
    add(map_lines == want, f"map.tsv has {map_lines:,} lines")
    try:
        rec = json.load(open(os.path.join(own, "export.json")))
    except (OSError, ValueError) as e:
        rec = {"error": str(e)}
    add(rec.get("complete") is True and not os.path.exists(os.path.join(own, "INCOMPLETE")),
        "export.json says complete, no INCOMPLETE", "" if rec.get("complete") else json.dumps(rec)[:200])
    tmps = find_named(root, ".rsmirror-tmp-")
    add(not tmps, f"{len(tmps)} left-over .rsmirror-tmp- files", ", ".join(tmps[:3]))
    bad, sampled = [], 0
    with open(os.path.join(own, "map.tsv")) as f:
        for k, line in enumerate(f):
            if k % max(1, want // 200):
                continue
            sampled += 1
            path, uri, sha, length = line.rstrip("\n").split("\t")[:4]
            fp = os.path.join(root, path)
            try:
                data = open(fp, "rb").read()
                st = os.stat(fp)
            except OSError as e:
                bad.append(f"{path}: {e}")
                continue
            if hashlib.sha256(data).hexdigest() != sha or len(data) != int(length):
                bad.append(f"{path}: bytes differ from the catalog")
            ost = os.stat(object_path(mirror, sha))
            if link == "hard" and (st.st_ino != ost.st_ino or st.st_dev != ost.st_dev):
                bad.append(f"{path}: not a hard link of its object")
            if link == "copy":
                if st.st_ino == ost.st_ino:
                    bad.append(f"{path}: a link, not a copy")
                lm = lastmod_of(mirror, uri)
                if lm:
                    t = dt.datetime.strptime(lm[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
                    if int(st.st_mtime) != int(t.timestamp()):
                        bad.append(f"{path}: mtime {st.st_mtime} is not lastmod {lm}")
    add(not bad, f"a sample of {sampled} files checked against their objects"
        f" ({'same inode' if link == 'hard' else 'bytes, mtime = lastmod'})", "; ".join(bad[:3]))


def check_bag(mirror, dest, want, bagit, checks, label, full, notes, link="copy"):
    def add(ok, what, detail=""):
        checks.append(("ok" if ok else "WRONG", f"{label}: {what}", detail))

    check_tree(mirror, dest, os.path.join(dest, "data"), want, link, checks, label)
    for name in ("bagit.txt", "bag-info.txt", "manifest-sha256.txt", "manifest-md5.txt", "tagmanifest-sha256.txt"):
        p = os.path.join(dest, name)
        if not os.path.exists(p):
            add(False, f"{name} missing")
        elif name.startswith("manifest-"):
            nl = count_lines(p)
            add(nl == want, f"{name} has {nl:,} lines")
    for mode in (["--fast"], []) if full else (["--fast"],):
        t0 = time.perf_counter()
        p = subprocess.run([bagit, "--validate"] + mode + [dest], capture_output=True, text=True, timeout=TIMEOUT)
        took = time.perf_counter() - t0
        tail = " | ".join(l for l in p.stderr.strip().splitlines()[-2:])[:300]
        add(p.returncode == 0, f"bagit.py --validate {' '.join(mode)} exit {p.returncode} ({took:.1f} s)".replace("  ", " "),
            tail)


def sh(s):
    return ["sh", "-c", s]


def load1():
    return float(open("/proc/loadavg").read().split()[0])


def cmd_run(a):
    mirror = os.path.abspath(a.mirror)
    big = os.path.abspath(a.big_mirror) if a.big_mirror else None
    out_dir = os.path.abspath(a.out_dir)
    exe = os.path.abspath(a.rsmirror)
    bagit = os.path.abspath(a.bagit)
    if os.path.exists(out_dir):
        subprocess.run(["rm", "-rf", out_dir], check=True)
        subprocess.run(["sync"], check=True)
    os.makedirs(out_dir)
    notes = []
    trash = Trash(os.path.join(out_dir, "trash"))
    trash.purged_at = time.monotonic()
    logs = os.path.join(out_dir, "logs")
    os.makedirs(logs)
    D, R = os.path.join(out_dir, "d"), os.path.join(out_dir, "ref")
    tree_src = os.path.join(out_dir, "tree-src")  # an exported tree, for bagit.py to bag copies of

    facts = catalog_facts(mirror)
    n_cur = facts["current"]
    n_obj = count_files(os.path.join(mirror, "objects"), skip_own=False)
    big_facts = catalog_facts(big) if big else None

    def rs(fmt, link, dest, m=mirror, *more):
        return [exe, "export", fmt, dest, "--link", link, "--mirror", m, "-q", *more]

    # The nightly audit a cron mirror runs (untimed): links are placed on its word (doc/manual/
    # exports.md, `--link`); `--verify` rows read every object anyway.
    for m in [mirror] + ([big] if big else []):
        r = subprocess.run([exe, "audit", "--offline", "--mirror", m, "-q"])
        if r.returncode:
            notes.append(f"audit --offline of {m} exited {r.returncode}: links are verified by reading")

    def check_warc(dest, want, c, label):
        # warcio from the same venv as bagit.py: every resource record read back.
        py = os.path.join(os.path.dirname(bagit), "python")
        code = ("import sys, os\n"
                "from warcio.archiveiterator import ArchiveIterator\n"
                "d = sys.argv[1]; n = 0\n"
                "for f in sorted(x for x in os.listdir(d) if x.endswith('.warc.gz')):\n"
                "    with open(os.path.join(d, f), 'rb') as fh:\n"
                "        n += sum(1 for r in ArchiveIterator(fh) if r.rec_type == 'resource')\n"
                "print(n)\n")
        r = subprocess.run([py, "-c", code, dest], capture_output=True, text=True)
        n = int(r.stdout.strip() or -1) if r.returncode == 0 else -1
        c.append(("ok" if n == want else "WRONG",
                  f"{label}: {n:,} resource records read back by warcio (want {want:,})",
                  r.stderr.strip()[-300:]))

    def prep_tree_src():
        if not os.path.exists(tree_src):
            subprocess.run(rs("tree", "copy", tree_src), check=True)
            subprocess.run(["rm", "-rf", os.path.join(tree_src, OWN)], check=True)

    def prep_bagit_py():
        prep_tree_src()
        subprocess.run(["cp", "-a", tree_src, R], check=True)

    # (key, label, rsmirror argv, its check, reference label, reference argv, untimed setup before
    #  each reference run, the reference's check, target, reps, warm-up)
    # target: ("ratio", max rsmirror/reference) or ("rss", max MB)
    steps = [
        ("tree_hard", "export tree --link hard", rs("tree", "hard", D),
         lambda c: check_tree(mirror, D, D, n_cur, "hard", c, "export tree --link hard"),
         "cp -al objects", ["cp", "-al", os.path.join(mirror, "objects"), R], None,
         lambda c: c.append(("ok" if count_files(R, False) == n_obj else "WRONG",
                             f"cp -al objects: {count_files(R, False):,} files (objects: {n_obj:,})", "")),
         ("ratio", 1.5), a.reps, True),
        ("tree_hard_verify", "export tree --link hard --verify", rs("tree", "hard", D, mirror, "--verify"),
         lambda c: check_tree(mirror, D, D, n_cur, "hard", c, "export tree --link hard --verify"),
         "cp -al objects", ["cp", "-al", os.path.join(mirror, "objects"), R], None, None,
         ("ratio", 1.5), a.reps, True),
        ("tree_copy", "export tree --link copy", rs("tree", "copy", D),
         lambda c: check_tree(mirror, D, D, n_cur, "copy", c, "export tree --link copy"),
         "cp -r objects", ["cp", "-r", os.path.join(mirror, "objects"), R], None,
         lambda c: c.append(("ok" if count_files(R, False) == n_obj else "WRONG",
                             f"cp -r objects: {count_files(R, False):,} files (objects: {n_obj:,})", "")),
         ("ratio", 1.5), a.reps, True),
        ("bagit_tree", "export bagit --link copy", rs("bagit", "copy", D),
         lambda c: check_bag(mirror, D, n_cur, bagit, c, "export bagit --link copy", True, None),
         "export tree --link copy", rs("tree", "copy", R), None, None,
         ("ratio", 1.2), a.reps, True),
        ("bagit_py", "export bagit --link copy", rs("bagit", "copy", D), None,
         "bagit.py --processes 2 (copy of the tree)", [bagit, "--processes", "2", R], prep_bagit_py,
         lambda c: c.append(("ok" if count_files(os.path.join(R, "data"), False) == n_cur else "WRONG",
                             f"bagit.py bag: {count_files(os.path.join(R, 'data'), False):,} payload files", "")),
         ("ratio", 0.1), a.reps, True),
        ("bagit_py_hard", "export bagit --link hard", rs("bagit", "hard", D),
         lambda c: check_bag(mirror, D, n_cur, bagit, c, "export bagit --link hard", True, None, "hard"),
         "bagit.py --processes 2 (copy of the tree)", [bagit, "--processes", "2", R], prep_bagit_py,
         None, ("ratio", 0.1), a.reps, True),
        # bagit.py as its users run it: one process (the default), sha256 and sha512.
        ("bagit_py1", "export bagit --link copy", rs("bagit", "copy", D), None,
         "bagit.py (default: one process)", [bagit, R], prep_bagit_py,
         None, ("ratio", 0.1), a.reps, True),
        # The bag with --link auto (hard links here: the same file system, no reflinks);
        # bagit.py too bags files already there (it moves them under data/).
        ("bagit_auto", "export bagit --link auto", rs("bagit", "auto", D),
         lambda c: check_bag(mirror, D, n_cur, bagit, c, "export bagit --link auto", True, None, "hard"),
         "bagit.py --processes 2 (copy of the tree)", [bagit, "--processes", "2", R], prep_bagit_py,
         None, ("ratio", 0.1), a.reps, True),
        # A bag of copies, the mirror left as it was: bagit.py bags a folder in place, so its
        # user copies the tree first (timed here).
        ("bagit_py_cp", "export bagit --link copy", rs("bagit", "copy", D), None,
         "cp -r tree, then bagit.py --processes 2",
         ["sh", "-c", f"cp -r {shlex.quote(tree_src)} {shlex.quote(R)} && {shlex.quote(bagit)} --processes 2 {shlex.quote(R)}"],
         prep_tree_src, None, ("ratio", 0.1), a.reps, True),
        ("warc_tar", "export warc", [exe, "export", "warc", D, "--mirror", mirror, "-q"],
         lambda c: check_warc(D, n_cur, c, "export warc"),
         "tar -c objects | gzip -6", ["sh", "-c", f"mkdir -p {shlex.quote(R)} && tar -C {shlex.quote(mirror)} -c objects | gzip -6 > {shlex.quote(R)}/objects.tar.gz"],
         None, None, ("ratio", 2.0), a.reps, True),
    ]
    if big:
        bn = big_facts["current"]
        steps += [
            ("big_hard", f"1M: export tree --link hard", rs("tree", "hard", D, big),
             lambda c: check_tree(big, D, D, bn, "hard", c, "1M: export tree --link hard"),
             "cp -al objects (1 run)", ["cp", "-al", os.path.join(big, "objects"), R], None, None,
             ("rss", 100), 1, False),
            ("big_bagit", f"1M: export bagit --link copy", rs("bagit", "copy", D, big),
             lambda c: check_bag(big, D, bn, bagit, c, "1M: export bagit --link copy", False, None),
             None, None, None, None, ("rss", 100), 1, False),
            ("big_warc", "1M: export warc", [exe, "export", "warc", D, "--mirror", big, "-q"],
             lambda c: check_warc(D, bn, c, "1M: export warc"),
             None, None, None, None, ("rss", 100), 1, False),
            # Six folders and five files an object: 43 GB on this ext4 (4 KiB blocks); with
            # --ocfl-dest on a file system of small blocks and inline data (export.sh
            # --ocfl-small-fs), about 4 GB, and copies instead of links (another file system).
            (("big_ocfl", "1M: export ocfl --link auto (copies: DEST on another file system)",
              rs("ocfl", "auto", os.path.join(a.ocfl_dest, "ocfl"), big), None,
              None, None, None, None, ("rss", 100), 1, False) if a.ocfl_dest else
             ("big_ocfl", "1M: export ocfl --link hard", rs("ocfl", "hard", D, big), None,
              None, None, None, None, ("rss", 100), 1, False)),
            ("big_resourcesync", "1M: export resourcesync --link hard",
             rs("resourcesync", "hard", D, big, "--base-url", "http://127.0.0.1:8000/"), None,
             None, None, None, None, ("rss", 100), 1, False),
        ]
    if a.steps:
        keep = set(a.steps.split(","))
        steps = [s for s in steps if s[0] in keep]
    else:
        # OCFL at 1M: six folders and five files per object, 43 GB on ext4; only when asked.
        steps = [s for s in steps if s[0] != "big_ocfl"]

    trash.wait_quiet()
    t_settle = time.monotonic()
    while load1() >= 1.0 and time.monotonic() - t_settle < a.settle:
        time.sleep(5)
    load_before = open("/proc/loadavg").read().split()[:3]
    rows, checks = [], []
    for key, label, rcmd, rcheck, rlabel, refcmd, refprep, refcheck, target, reps, warm in steps:
        trash.wait_quiet()
        print(f"-- {key}: {label} vs {rlabel}", file=sys.stderr, flush=True)
        row = {"key": key, "label": label, "ref_label": rlabel, "target": target, "reps": reps,
               "cmd": shlex.join(rcmd), "ref_cmd": shlex.join(refcmd) if refcmd else None,
               "load_at_start": load1()}
        trash.put(D, R)
        # Warm-up (untimed unless it is the only run): the outputs are checked, then removed.
        if warm:
            r = timed(rcmd, os.path.join(logs, f"{key}.warm.err"))
            if r["rc"]:
                checks.append(("WRONG", f"{label}: exit {r['rc']}", err_text(os.path.join(logs, f"{key}.warm.err"))))
            elif rcheck:
                rcheck(checks)
            trash.put(D)
            if refcmd:
                if refprep:
                    refprep()
                r = timed(refcmd, os.path.join(logs, f"{key}.ref.warm.err"))
                if r["rc"]:
                    notes.append(f"reference {rlabel} exited {r['rc']}: "
                                 + err_text(os.path.join(logs, f"{key}.ref.warm.err")))
                elif refcheck:
                    refcheck(checks)
                trash.put(R)
        runs, rruns = [], []
        for i in range(reps):
            # rsmirror and the reference alternate, so both see the same machine.
            r = timed(rcmd, os.path.join(logs, f"{key}.{i}.err"))
            runs.append(r)
            if r["rc"]:
                notes.append(f"{label} run {i + 1} exited {r['rc']}: " + err_text(os.path.join(logs, f"{key}.{i}.err")))
            if not warm and i == 0 and r["rc"] == 0 and rcheck:
                rcheck(checks)
            trash.put(D)
            if refcmd:
                if refprep:
                    refprep()
                    subprocess.run(["sync"], check=True)
                rr = timed(refcmd, os.path.join(logs, f"{key}.ref.{i}.err"))
                rruns.append(rr)
                if rr["rc"]:
                    notes.append(f"reference {rlabel} run {i + 1} exited {rr['rc']}: "
                                 + err_text(os.path.join(logs, f"{key}.ref.{i}.err")))
                if not warm and i == 0 and rr["rc"] == 0 and refcheck:
                    refcheck(checks)
                trash.put(R)
        ok_runs = [r for r in runs if r["rc"] == 0]
        if ok_runs:
            row["med"] = statistics.median(r["wall"] for r in ok_runs)
            row["rss"] = max(r["rss_kb"] for r in ok_runs) / 1024
            row["user"] = statistics.median(r["user"] for r in ok_runs)
            row["sys"] = statistics.median(r["sys"] for r in ok_runs)
        row["all"] = [round(r["wall"], 3) for r in runs]
        ok_ref = [r for r in rruns if r["rc"] == 0]
        if ok_ref:
            row["ref_med"] = statistics.median(r["wall"] for r in ok_ref)
            row["ref_rss"] = max(r["rss_kb"] for r in ok_ref) / 1024
            row["ref_user"] = statistics.median(r["user"] for r in ok_ref)
            row["ref_sys"] = statistics.median(r["sys"] for r in ok_ref)
        row["ref_all"] = [round(r["wall"], 3) for r in rruns]
        rows.append(row)
        trash.purge()
        print(f"   {fmt(row.get('med'))} s ({row['all']}), {fmt(row.get('rss'), 1)} MB;"
              f" ref {fmt(row.get('ref_med'))} s ({row['ref_all']})", file=sys.stderr, flush=True)
    load_after = open("/proc/loadavg").read().split()[:3]
    trash.put(D, R, tree_src)
    trash.purge()
    write_report(a, rows, checks, notes, load_before, load_after, facts, n_obj, big_facts, mirror, big, exe, bagit)
    return 0


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def fmt(x, d=3):
    return "–" if x is None else f"{x:.{d}f}"


def verdict(r):
    t = r["target"]
    med, ref, rss = r.get("med"), r.get("ref_med"), r.get("rss")
    if med is None:
        return t_text(t), "FAIL (exit)"
    if t[0] == "ratio":
        if not ref:
            return t_text(t), "–"
        return t_text(t), "PASS" if med / ref <= t[1] else "MISS"
    return t_text(t), "PASS" if rss < t[1] else "MISS"


def t_text(t):
    if t[0] == "ratio":
        return f"ratio ≤ {t[1]:g}" + (" (≥ 10x faster)" if t[1] == 0.1 else "")
    return f"RSS < {t[1]} MB"


def write_report(a, rows, checks, notes, lb, la, facts, n_obj, big_facts, mirror, big, exe, bagit):
    commit = a.commit or (subprocess.run(["git", "-C", a.repo, "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True).stdout.strip() + " (HEAD now)")
    L = [f"# rsmirror export on a {facts['current']:,}-resource mirror"
         + (f" (and RSS on {big_facts['current']:,})" if big_facts else ""),
         "",
         f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; commit {commit}"
         f"{' (binary given with --rsmirror)' if a.given else ''}; CPU {cpu_model()}, {os.cpu_count()} cores;"
         f" load average before {' '.join(lb)}, after {' '.join(la)}.",
         f"Mirror: {mirror} ({facts['current']:,} current resources, {n_obj:,} object files, objects ~20 bytes)"
         + (f"; 1M mirror: {big} ({big_facts['current']:,} current of {big_facts['resources']:,} resources)"
            if big_facts else "") + ".",
         f"Median of {a.reps} warm runs after one untimed run (1M rows: one run, no warm-up), rsmirror and the"
         " reference alternating; DEST fresh every run (the previous one renamed away untimed, then `sync`: no"
         " dirty pages carried over, no cache dropped; deleted only after the step, and the next step starts"
         f" {Trash.INODE_QUIET} s after, as ext4 without a journal makes a new file walk past every inode freed in"
         " the last 60 s). Wall time by the harness (perf_counter around `/usr/bin/time`),"
         " peak RSS by `/usr/bin/time %M`. Ratio = rsmirror / reference.",
         "",
         "| step | rsmirror median s | peak RSS MB | reference | reference median s | ratio | target | result |",
         "|---|---:|---:|---|---:|---:|---|---|"]
    for r in rows:
        med, ref = r.get("med"), r.get("ref_med")
        ratio = f"{med / ref:.2f}" if med is not None and ref else "–"
        target, res = verdict(r)
        L.append(f"| {r['label']} | {fmt(med)} | {fmt(r.get('rss'), 1)} | {r['ref_label'] or '–'} | {fmt(ref)} |"
                 f" {ratio} | {target} | {res} |")
    L += ["", "## Checks", ""]
    for st, what, detail in checks:
        L.append(f"- {st}: {what}" + (f" — {detail}" if detail else ""))
    if notes:
        L += ["", "## Notes", ""] + [f"- {x}" for x in notes]
    L += ["", "## Commands", "", "| step | rsmirror | reference |", "|---|---|---|"]
    for r in rows:
        def short(c):
            c = c.replace(a.out_dir, "$OUT").replace(os.path.abspath(a.out_dir), "$OUT")
            if big:
                c = c.replace(big, "$BIG")
            return c.replace(mirror, "$M").replace(exe, "rsmirror").replace(bagit, "bagit.py").replace("|", "\\|")
        L.append(f"| {r['key']} | `{short(r['cmd'])}` | {'`' + short(r['ref_cmd']) + '`' if r['ref_cmd'] else '–'} |")
    L += ["", "Per-run wall times (s); median user / sys CPU s; 1-minute load at the step's start:", ""]
    for r in rows:
        L.append(f"- {r['key']}: rsmirror {r['all']} (user {fmt(r.get('user'), 2)}, sys {fmt(r.get('sys'), 2)});"
                 f" reference {r['ref_all']} (user {fmt(r.get('ref_user'), 2)}, sys {fmt(r.get('ref_sys'), 2)},"
                 f" RSS {fmt(r.get('ref_rss'), 1)} MB); load {r['load_at_start']:.2f}")
    text = "\n".join(L) + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump({"rows": rows, "checks": checks, "notes": notes}, f, indent=1, default=str)
    print(text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("prepare")
    s.add_argument("--out", required=True)
    s.add_argument("--base", default="http://127.0.0.1:9")
    s.add_argument("--n", type=int, default=100_000)
    s.add_argument("--schema", required=True)
    s.add_argument("--gen", required=True)
    s = sub.add_parser("run")
    s.add_argument("--rsmirror", required=True)
    s.add_argument("--given", action="store_true", help="the binary was given, not built from HEAD")
    s.add_argument("--mirror", required=True, help="the 100,000-resource mirror")
    s.add_argument("--big-mirror", default="", help="the 1,000,000-resource mirror (RSS rows)")
    s.add_argument("--bagit", required=True, help="bagit.py")
    s.add_argument("--reps", type=int, default=5)
    s.add_argument("--out", required=True, help="the Markdown results file")
    s.add_argument("--out-dir", required=True, help="where the exports go (emptied first)")
    s.add_argument("--ocfl-dest", help="big_ocfl exports into this folder (another file system)")
    s.add_argument("--repo", required=True)
    s.add_argument("--commit", default="", help="the commit the binary was built from")
    s.add_argument("--settle", type=float, default=90, help="seconds to wait at most for a 1-minute load under 1")
    s.add_argument("--steps", default="", help="comma-separated step keys (default: all)")
    a = p.parse_args()
    return {"prepare": cmd_prepare, "run": cmd_run}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
