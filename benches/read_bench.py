#!/usr/bin/env python3
"""Read-command benchmark helper for benches/read.sh (stdlib only).

  prepare   make the 1,000,000-resource mirror (benches/gen.py index) once, then add a second
            run to its catalog: 1% of the resources updated, 1,000 deleted
  restic    back up the mirror's resync copy (1,000,000 files) into a restic repository
  run       time the read-only commands (ls, cat, log, diff, status) against the sqlite3 CLI
            doing the same query, and write a Markdown table
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

STAMP = "read-bench.stamp"
RUN2_STEP = 100  # every 100th resource is updated in run 2 (i % 100 == 0)
DEL_STEP = 1000  # every 1000th + 1 is deleted in run 2 (i % 1000 == 1)
RUN2_LASTMOD = dt.datetime(2026, 2, 1, 12, tzinfo=dt.timezone.utc)
AT_B = "2026-02-02T00:00:00Z"


def w3c(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def uri_of(base, i):
    return f"{base}/idx/r/{i // 1000:04d}/{i:07d}"


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
    and base means a complete mirror. Run 2 is added in one transaction: present or absent."""
    out = os.path.abspath(a.out)
    mirror = os.path.join(out, "mirror")
    catalog = os.path.join(mirror, "catalog.sqlite")
    want = {"n": a.n, "base": a.base.rstrip("/"), "run2": {"updated_every": RUN2_STEP, "deleted_every": DEL_STEP}}
    try:
        with open(os.path.join(out, "meta.json")) as f:
            meta = json.load(f)
        have = os.path.exists(catalog) and meta.get("n") == a.n and meta.get("base") == want["base"]
    except (OSError, ValueError):
        have = False
    if have and stamp_ok(os.path.join(out, STAMP), want):
        print(f"prepare: reusing {mirror} (n = {a.n}, run 2 added)")
        return 0
    if not have:
        t0 = time.perf_counter()
        subprocess.run(["nice", "-n", "10", sys.executable, a.gen, "index", "--out", out, "--base", a.base,
                        "--n", str(a.n), "--schema", a.schema], check=True)
        print(f"prepare: gen.py index took {time.perf_counter() - t0:.0f} s")
    else:
        print(f"prepare: reusing the mirror gen.py made in {mirror}")
    t1 = time.perf_counter()
    add_run2(mirror, a.base.rstrip("/"), a.n)
    print(f"prepare: run 2 added in {time.perf_counter() - t1:.1f} s")
    with open(os.path.join(out, STAMP), "w") as f:
        json.dump(want, f)
    return 0


def add_run2(mirror, base, n):
    """Run 2, an incremental a minute after run 1: every 100th resource updated (new bytes, a new
    object), every 1000th + 1 deleted (a tombstone). One transaction."""
    con = sqlite3.connect(os.path.join(mirror, "catalog.sqlite"), isolation_level=None)
    con.execute("PRAGMA journal_mode=WAL")
    (ended1,) = con.execute("SELECT coalesce(ended_at, started_at) FROM runs WHERE id = 1").fetchone()
    if con.execute("SELECT count(*) FROM runs WHERE id = 2 AND command = 'incremental'").fetchone()[0]:
        print("prepare: the catalog has run 2 already")
        return
    t1 = dt.datetime.strptime(ended1[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc)
    started, ended = t1 + dt.timedelta(minutes=1), t1 + dt.timedelta(minutes=2)
    (source_url,) = con.execute("SELECT url FROM sources WHERE id = 1").fetchone()
    (next_vid,) = con.execute("SELECT max(id) + 1 FROM versions").fetchone()
    objects = os.path.join(mirror, "objects", "sha256")
    changelist = source_url.rsplit("/", 1)[0] + "/changelist.xml"
    updated = list(range(0, n, RUN2_STEP))
    deleted = list(range(1, n, DEL_STEP))
    assert not set(updated) & set(deleted)

    con.execute("BEGIN")
    con.execute("INSERT INTO runs (id, command, source_id, arguments, started_at, ended_at, outcome, exit_code, counts_json)"
                " VALUES (2, 'incremental', 1, ?, ?, ?, 'ok', 0, ?)",
                (f"rsmirror incremental --mirror {mirror} (added by benches/read_bench.py)", w3c(started), w3c(ended),
                 json.dumps({"created": 0, "updated": len(updated), "unchanged": 0, "failed": 0, "refused": 0,
                             "deleted": len(deleted)})))
    versions, current, events = [], [], []
    for i in updated:
        data = f"resource {i}, changed\n".encode()
        md5, sha = hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()
        d = os.path.join(objects, sha[:2])
        os.makedirs(d, exist_ok=True)
        obj = os.path.join(d, sha)
        if os.path.exists(obj):
            os.chmod(obj, 0o644)
        with open(obj, "wb") as f:
            f.write(data)
        os.chmod(obj, 0o444)
        lm = RUN2_LASTMOD + dt.timedelta(seconds=i)
        loc = uri_of(base, i)
        vid = next_vid
        next_vid += 1
        versions.append((vid, i + 1, 2, "updated", w3c(lm), w3c(lm), len(data), len(data),
                         f"md5:{md5} sha-256:{sha}", md5, sha, "text/plain", "http", loc,
                         f'"{int(lm.timestamp()):x}-{len(data):x}"', email_date(lm)))
        current.append((vid, i + 1))
        events.append((source_url, loc, "updated", w3c(lm), changelist, vid))
    for i in deleted:
        vid = next_vid
        next_vid += 1
        ev = w3c(RUN2_LASTMOD + dt.timedelta(seconds=i))
        versions.append((vid, i + 1, 2, "deleted", ev, None, None, None, None, None, None, None, "tombstone",
                         None, None, None))
        current.append((vid, i + 1))
        events.append((source_url, uri_of(base, i), "deleted", ev, changelist, vid))
    con.executemany("INSERT INTO versions (id, resource_id, run_id, change, event_time, lastmod, length_bytes,"
                    " declared_length_bytes, declared_hash, md5_hex, sha256_hex, media_type, arrived_via,"
                    " fetched_from, etag, last_modified) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    versions)
    con.executemany("UPDATE resources SET current_version_id = ? WHERE id = ?", current)
    # What a real incremental writes next to the versions: its change events and the new sync point.
    con.executemany("INSERT INTO change_events (run_id, collection, uri, change, event_time, document_url,"
                    " version_id, outcome) VALUES (2, ?, ?, ?, ?, ?, ?, 'applied')", events)
    con.execute("UPDATE sync_points SET at = ?, basis = 'Change List until', run_id = 2, updated_at = ?",
                (AT_B, w3c(ended)))
    con.execute("COMMIT")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    print(f"prepare: run 2: {len(updated)} updated, {len(deleted)} deleted")


def email_date(t):
    import email.utils
    return email.utils.format_datetime(t, usegmt=True)


# ---------------------------------------------------------------------------------------------
# restic


def cmd_restic(a):
    out = os.path.abspath(a.out)
    repo, stamp = os.path.join(out, "restic-repo"), os.path.join(out, "restic.stamp")
    tree = os.path.join(out, "resync-dst")
    want = {"n": a.n}
    if stamp_ok(stamp, want):
        print(f"restic: reusing {repo}")
        return 0
    env = dict(os.environ, RESTIC_REPOSITORY=repo, RESTIC_PASSWORD="bench")
    subprocess.run(["rm", "-rf", repo], check=True)
    t0 = time.perf_counter()
    subprocess.run(["restic", "init", "-q"], env=env, check=True)
    # Relative paths: the snapshot holds 0000/0000000 ... like the mirror's URIs.
    subprocess.run(["nice", "-n", "10", "restic", "backup", "-q", "--host", "bench", "."], env=env, cwd=tree,
                   check=True)
    print(f"restic: backup of {tree} took {time.perf_counter() - t0:.0f} s")
    with open(stamp, "w") as f:
        json.dump(want, f)
    return 0


# ---------------------------------------------------------------------------------------------
# run


def parse_time_file(path):
    with open(path) as f:
        lines = [l for l in f.read().splitlines() if l.strip()]
    e, m = lines[-1].split()
    return float(e), int(m)


def timed(cmd, cwd=None, env=None):
    """One run, stdout to /dev/null: (wall s by perf_counter, %e of /usr/bin/time, peak RSS kB, rc)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time", delete=False) as tf:
        tpath = tf.name
    try:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", tpath] + cmd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        wall = time.perf_counter() - t0
        e, m = parse_time_file(tpath)
    finally:
        os.unlink(tpath)
    return wall, e, m, p.returncode


def first_line(cmd, cwd=None, env=None):
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    line = p.stdout.readline()
    dt_ = time.perf_counter() - t0
    p.kill()
    p.wait()
    p.stdout.close()
    return dt_, line


def capture(cmd, path, cwd=None, env=None):
    """The untimed warm-up run, its stdout kept for the checks."""
    with open(path, "wb") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE, cwd=cwd, env=env)
    return p.returncode, p.stderr.decode(errors="replace")


def count_lines(path):
    n = 0
    with open(path, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            n += b.count(b"\n")
    return n


def sh(s):
    return ["sh", "-c", s]


def cmd_run(a):
    mirror = os.path.abspath(a.mirror)
    out_dir = os.path.abspath(a.out_dir)
    os.makedirs(out_dir, exist_ok=True)
    cat_db = os.path.join(mirror, "catalog.sqlite")
    with open(os.path.join(os.path.dirname(mirror), "meta.json")) as f:
        meta = json.load(f)
    base, n = meta["base"], meta["n"]
    exe = os.path.abspath(a.rsmirror)
    restic_repo = os.path.join(os.path.dirname(mirror), "restic-repo")
    use_restic = a.restic and os.path.exists(os.path.join(os.path.dirname(mirror), "restic.stamp"))
    renv = dict(os.environ, RESTIC_REPOSITORY=restic_repo, RESTIC_PASSWORD="bench")

    upd_i, same_i, del_i = 500, 12345, 1001
    assert upd_i % RUN2_STEP == 0 and same_i % RUN2_STEP and same_i % DEL_STEP != 1 and del_i % DEL_STEP == 1
    upd, same, gone = uri_of(base, upd_i), uri_of(base, same_i), uri_of(base, del_i)
    prefix = f"{base}/idx/r/0500/"
    n_upd, n_del = len(range(0, n, RUN2_STEP)), len(range(1, n, DEL_STEP))
    n_prefix = sum(1 for i in range(500_000, min(n, 501_000)) if i % DEL_STEP != 1)

    def rs(*args):
        return [exe] + list(args) + ["--mirror", mirror]

    def q(sql, *opts):
        return ["sqlite3", "-readonly"] + list(opts) + [cat_db, sql]

    CUR = "FROM resources r JOIN versions v ON v.id = r.current_version_id WHERE v.change != 'deleted'"
    AT1 = ("FROM resources r JOIN versions v ON v.id = (SELECT max(id) FROM versions WHERE resource_id = r.id"
           " AND run_id <= 1) WHERE v.change != 'deleted'")

    def obj_of(uri, run=None):
        w = f"AND run_id <= {run}" if run else ""
        return (f"f=$(sqlite3 -readonly {shlex.quote(cat_db)} \"SELECT sha256_hex FROM versions WHERE resource_id ="
                f" (SELECT id FROM resources WHERE uri = '{uri}') {w} ORDER BY id DESC LIMIT 1\");"
                f" cat {shlex.quote(mirror)}/objects/sha256/${{f%\"${{f#??}}\"}}/$f")

    DIFF12 = ("SELECT r.uri, v.change FROM versions v JOIN resources r ON r.id = v.resource_id"
              " WHERE v.run_id > 1 AND v.run_id <= 2 AND v.id = (SELECT max(id) FROM versions"
              " WHERE resource_id = v.resource_id AND run_id <= 2) ORDER BY r.uri")
    DIFF1 = ("SELECT r.uri, v.change FROM resources r JOIN versions v ON v.id = r.current_version_id"
             " WHERE v.run_id > 1 ORDER BY r.uri")
    STATUS = ("SELECT v.change, count(*), sum(v.length_bytes) FROM resources r JOIN versions v"
              " ON v.id = r.current_version_id GROUP BY v.change;"
              " SELECT * FROM runs ORDER BY id DESC LIMIT 1; SELECT * FROM sync_points;")

    # (key, label, rsmirror argv, reference label, reference argv, reference env, target)
    # target: (max seconds, max RSS MB or None) or None
    steps = [
        ("ls", "ls (all)", rs("ls"), "sqlite3", q(f"SELECT r.uri {CUR} ORDER BY r.uri"), None, (3, 50)),
        ("ls_l", "ls -l", rs("ls", "-l"), "sqlite3",
         q(f"SELECT r.uri, v.length_bytes, v.lastmod, v.sha256_hex {CUR} ORDER BY r.uri", "-separator", " "),
         None, (3, 50)),
        ("ls_json", "ls --json", rs("ls", "--json"), "sqlite3 -json",
         q(f"SELECT r.uri, v.length_bytes, v.lastmod, v.sha256_hex {CUR} ORDER BY r.uri", "-json"), None, None),
        ("ls_first", "ls: first line", rs("ls"), "sqlite3", q(f"SELECT r.uri {CUR} ORDER BY r.uri"), None,
         (0.1, None)),
        ("ls_at1", "ls --at run:1", rs("ls", "--at", "run:1"), "sqlite3", q(f"SELECT r.uri {AT1} ORDER BY r.uri"),
         None, None),
        ("ls_prefix", "ls PREFIX (1,000)", rs("ls", prefix), "sqlite3",
         q(f"SELECT r.uri {CUR} AND r.uri >= '{prefix}' AND r.uri < '{prefix[:-1]}0' ORDER BY r.uri"), None, None),
        ("cat_upd", "cat URL (updated)", rs("cat", upd), "sqlite3 + cat", sh(obj_of(upd)), None, (0.02, None)),
        ("cat_same", "cat URL (unchanged)", rs("cat", same), "sqlite3 + cat", sh(obj_of(same)), None, (0.02, None)),
        ("cat_at1", "cat URL --at run:1 (updated)", rs("cat", upd, "--at", "run:1"), "sqlite3 + cat",
         sh(obj_of(upd, 1)), None, (0.02, None)),
        ("log_url", "log URL", rs("log", upd), "sqlite3",
         q("SELECT v.id, v.run_id, v.change, v.lastmod, v.length_bytes, v.sha256_hex FROM versions v JOIN resources r"
           f" ON r.id = v.resource_id WHERE r.uri = '{upd}' ORDER BY v.id"), None, (0.02, None)),
        ("log", "log (runs)", rs("log"), "sqlite3", q("SELECT * FROM runs ORDER BY id"), None, None),
        ("status", "status", rs("status"), "sqlite3", q(STATUS), None, (1, None)),
        ("status_json", "status --json", rs("status", "--json"), "sqlite3 -json", q(STATUS, "-json"), None, (1, None)),
        ("diff12", "diff run:1 run:2", rs("diff", "run:1", "run:2"), "sqlite3", q(DIFF12), None, (2, None)),
        ("diff1", "diff run:1", rs("diff", "run:1"), "sqlite3", q(DIFF1), None, (2, None)),
    ]
    if use_restic:
        rel = f"/{upd_i // 1000:04d}/{upd_i:07d}"
        steps += [
            ("restic_ls", "(restic ls latest, 1,000,000 files)", None, "restic",
             ["restic", "ls", "--no-lock", "latest"], renv, None),
            ("restic_dump", "(restic dump latest FILE)", None, "restic",
             ["restic", "dump", "--no-lock", "latest", rel], renv, None),
        ]
    if a.steps:
        keep = set(a.steps.split(","))
        steps = [s for s in steps if s[0] in keep]

    t_settle = time.monotonic()
    while float(open("/proc/loadavg").read().split()[0]) >= 1.0 and time.monotonic() - t_settle < a.settle:
        time.sleep(5)
    load_before = open("/proc/loadavg").read().split()[:3]
    rows, notes = [], []
    for key, label, rcmd, rlabel, refcmd, renv_, target in steps:
        print(f"-- {label}", file=sys.stderr, flush=True)
        row = {"key": key, "label": label, "ref_label": rlabel, "target": target,
               "cmd": shlex.join(rcmd) if rcmd else None, "ref_cmd": shlex.join(refcmd)}
        # Warm-up (untimed), output kept for the checks.
        if rcmd:
            rc, err = capture(rcmd, os.path.join(out_dir, f"{key}.out"))
            row["rc"], row["stderr"] = rc, " | ".join(l for l in err.strip().splitlines() if l.strip())[:300]
            row["lines"] = count_lines(os.path.join(out_dir, f"{key}.out"))
        rrc, rerr = capture(refcmd, os.path.join(out_dir, f"{key}.ref.out"), env=renv_)
        row["ref_rc"], row["ref_lines"] = rrc, count_lines(os.path.join(out_dir, f"{key}.ref.out"))
        if rrc:
            notes.append(f"reference for {label} exited {rrc}: {rerr.strip()[:300]}")
        if key == "ls_first":
            if rcmd and row["rc"] == 0:
                ts = [first_line(rcmd)[0] for _ in range(a.reps)]
                row["med"], row["rss"] = statistics.median(ts), None
            rts = [first_line(refcmd, env=renv_)[0] for _ in range(a.reps)]
            row["ref_med"] = statistics.median(rts)
        else:
            if rcmd and row["rc"] == 0:
                runs = [timed(rcmd) for _ in range(a.reps)]
                row["med"] = statistics.median(r[0] for r in runs)
                row["med_e"] = statistics.median(r[1] for r in runs)
                row["rss"] = max(r[2] for r in runs) / 1024
                row["all"] = [round(r[0], 4) for r in runs]
                if any(r[3] for r in runs):
                    notes.append(f"{label}: a timed run exited non-zero")
            runs = [timed(refcmd, env=renv_) for _ in range(a.reps)]
            row["ref_med"] = statistics.median(r[0] for r in runs)
            row["ref_rss"] = max(r[2] for r in runs) / 1024
        rows.append(row)
        print(f"   {row.get('med')} s, {row.get('rss')} MB; ref {row['ref_med']:.4f} s; rc {row.get('rc')};"
              f" lines {row.get('lines')} (ref {row['ref_lines']})", file=sys.stderr, flush=True)
    load_after = open("/proc/loadavg").read().split()[:3]

    # Checks on the outputs.
    checks = []
    byk = {r["key"]: r for r in rows}

    def expect(key, what, ok, detail):
        checks.append(("ok" if ok else "WRONG", f"{byk[key]['label']}: {what}", detail))

    for r in rows:
        if r["cmd"] and r.get("rc"):
            checks.append(("WRONG", f"{r['label']}: exit {r['rc']}", r.get("stderr", "")))
    exp_lines = {"ls": n - n_del, "ls_l": n - n_del, "ls_at1": n, "ls_prefix": n_prefix, "diff12": n_upd + n_del,
                 "diff1": n_upd + n_del}
    for k, v in exp_lines.items():
        if k in byk and byk[k]["cmd"] and byk[k].get("rc") == 0:
            got = byk[k]["lines"]
            expect(k, f"{got:,} lines (expected {v:,})", got == v, "")
    if "ls" in byk and byk["ls"].get("rc") == 0:
        same_out = files_equal(os.path.join(out_dir, "ls.out"), os.path.join(out_dir, "ls.ref.out"))
        expect("ls", "output identical to sqlite3's sorted URI list", same_out, "")
    for k, want in (("cat_upd", f"resource {upd_i}, changed\n"), ("cat_same", f"resource {same_i}\n"),
                    ("cat_at1", f"resource {upd_i}\n")):
        if k in byk and byk[k].get("rc") == 0:
            got = open(os.path.join(out_dir, f"{k}.out"), "rb").read()
            expect(k, f"bytes {got[:60]!r}", got == want.encode(), f"expected {want!r}")
    # Untimed extras: a deleted resource, ls --deleted.
    if rows and rows[0]["cmd"]:
        con = sqlite3.connect(f"file:{cat_db}?mode=ro", uri=True)
        (s1,), (s2,) = con.execute("SELECT started_at FROM runs WHERE id IN (1, 2) ORDER BY id").fetchall()
        (collection,) = con.execute("SELECT name FROM collections WHERE id = 1").fetchone()
        con.close()
        t1 = dt.datetime.strptime(s1[:19], "%Y-%m-%dT%H:%M:%S")
        t2 = dt.datetime.strptime(s2[:19], "%Y-%m-%dT%H:%M:%S")
        between = (t1 + (t2 - t1) / 2).strftime("%Y-%m-%dT%H:%M:%SZ")
        extra = [("cat URL (deleted) exits non-zero", rs("cat", gone), lambda rc, out: rc != 0),
                 ("cat URL (deleted) --at run:1 gives the old bytes", rs("cat", gone, "--at", "run:1"),
                  lambda rc, out: rc == 0 and out == f"resource {del_i}\n".encode()),
                 ("log URL (deleted)", rs("log", gone), lambda rc, out: rc == 0),
                 ("ls --deleted", rs("ls", "--deleted"), lambda rc, out: rc == 0 and out.count(b"\n") == n),
                 (f"cat URL --version {upd_i + 1} (its run-1 version)", rs("cat", upd, "--version", str(upd_i + 1)),
                  lambda rc, out: rc == 0 and out == f"resource {upd_i}\n".encode()),
                 (f"cat URL -o FILE", rs("cat", upd, "-o", os.path.join(out_dir, "cat-o.bin")),
                  lambda rc, out: rc == 0 and open(os.path.join(out_dir, "cat-o.bin"), "rb").read()
                  == f"resource {upd_i}, changed\n".encode()),
                 (f"diff {between} (a time between the runs)", rs("diff", between),
                  lambda rc, out: rc == 0 and out.count(b"\n") == n_upd + n_del),
                 (f"ls --at {between} (a time between the runs)", rs("ls", "--at", between),
                  lambda rc, out: rc == 0 and out.count(b"\n") == n),
                 (f"ls --collection URL", rs("ls", "--collection", collection),
                  lambda rc, out: rc == 0 and out.count(b"\n") == n - n_del),
                 ("log --run 2", rs("log", "--run", "2"), lambda rc, out: rc == 0),
                 ("log URL --json", rs("log", upd, "--json"), lambda rc, out: rc == 0 and valid_json(out)),
                 ("log --json", rs("log", "--json"), lambda rc, out: rc == 0 and valid_json(out)),
                 ("diff run:1 run:2 --json", rs("diff", "run:1", "run:2", "--json"),
                  lambda rc, out: rc == 0 and valid_json(out)),
                 ("status --json is JSON", rs("status", "--json"), lambda rc, out: rc == 0 and valid_json(out))]
        for what, cmd, ok in extra:
            path = os.path.join(out_dir, "extra.out")
            rc, err = capture(cmd, path)
            data = open(path, "rb").read()
            nl = data.count(b"\n")
            good = ok(rc, data)
            detail = f"exit {rc}, {nl:,} lines"
            if not good:
                errs = " | ".join(l for l in err.strip().splitlines() if l.strip())[:300]
                detail += f", starts {data[:160]!r}, stderr {errs!r}"
            checks.append(("ok" if good else "WRONG", what, detail))

    write_report(a, rows, checks, notes, load_before, load_after, n, mirror, exe)
    return 0


def valid_json(data):
    """One JSON document, or JSON Lines."""
    try:
        json.loads(data)
        return True
    except ValueError:
        try:
            for line in data.splitlines():
                if line.strip():
                    json.loads(line)
            return True
        except ValueError:
            return False


def files_equal(p1, p2):
    with open(p1, "rb") as f1, open(p2, "rb") as f2:
        while True:
            b1, b2 = f1.read(1 << 20), f2.read(1 << 20)
            if b1 != b2:
                return False
            if not b1:
                return True


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


def write_report(a, rows, checks, notes, lb, la, n, mirror, exe):
    commit = a.commit or (subprocess.run(["git", "-C", a.repo, "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True).stdout.strip() + " (HEAD now)")
    L = [f"# rsmirror read commands on a {n:,}-resource mirror",
         "",
         f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC; commit {commit}"
         f"{' (binary given with --rsmirror)' if a.given else ''}; CPU {cpu_model()}, {os.cpu_count()} cores;"
         f" load average before {' '.join(lb)}, after {' '.join(la)}.",
         f"Mirror: {mirror} (run 1: baseline of {n:,}; run 2: {len(range(0, n, RUN2_STEP)):,} updated,"
         f" {len(range(1, n, DEL_STEP)):,} deleted). Median of {a.reps} warm runs (one untimed run first),"
         " stdout to /dev/null; wall time by the harness (perf_counter around `/usr/bin/time`), peak RSS"
         " by `/usr/bin/time %M` (max over the runs). Ratio = rsmirror / reference.",
         "",
         "| step | rsmirror median s | peak RSS MB | reference | reference median s | ratio | target | result |",
         "|---|---:|---:|---|---:|---:|---|---|"]
    for r in rows:
        med, ref = r.get("med"), r.get("ref_med")
        ratio = f"{med / ref:.2f}" if med is not None and ref else "–"
        t = r["target"]
        if t is None or not r["cmd"]:
            target, res = "–", "–"
        else:
            target = f"< {t[0]:g} s" + (f", < {t[1]} MB" if t[1] else "")
            if med is None:
                res = "FAIL (exit {})".format(r.get("rc"))
            else:
                ok = med < t[0] and (t[1] is None or (r.get("rss") or 0) < t[1])
                res = "PASS" if ok else "MISS"
        name = r["label"] if r["cmd"] else r["label"]
        L.append(f"| {name} | {fmt(med)} | {fmt(r.get('rss'), 1)} | {r['ref_label']} | {fmt(ref)} | {ratio} |"
                 f" {target} | {res} |")
    L += ["", "## Checks", ""]
    for st, what, detail in checks:
        L.append(f"- {st}: {what}" + (f" — {detail}" if detail else ""))
    if notes:
        L += ["", "## Notes", ""] + [f"- {x}" for x in notes]
    L += ["", "## Commands", "", "| step | rsmirror | reference |", "|---|---|---|"]
    for r in rows:
        c = (r["cmd"] or "–").replace(mirror, "$M").replace(exe, "rsmirror")
        rc = r["ref_cmd"].replace(mirror, "$M").replace("|", "\\|")
        L.append(f"| {r['label']} | `{c}` | `{rc}` |")
    L += ["", "Per-run wall times (s):", ""]
    for r in rows:
        if r.get("all"):
            L.append(f"- {r['label']}: {r['all']}")
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
    s.add_argument("--n", type=int, default=1_000_000)
    s.add_argument("--schema", required=True)
    s.add_argument("--gen", required=True)
    s = sub.add_parser("restic")
    s.add_argument("--out", required=True)
    s.add_argument("--n", type=int, default=1_000_000)
    s = sub.add_parser("run")
    s.add_argument("--rsmirror", required=True)
    s.add_argument("--given", action="store_true", help="the binary was given, not built from HEAD")
    s.add_argument("--mirror", required=True)
    s.add_argument("--reps", type=int, default=5)
    s.add_argument("--out", required=True, help="the Markdown results file")
    s.add_argument("--out-dir", required=True, help="where the outputs of the warm-up runs go")
    s.add_argument("--repo", required=True)
    s.add_argument("--restic", action="store_true")
    s.add_argument("--commit", default="", help="the commit the binary was built from")
    s.add_argument("--settle", type=float, default=90, help="seconds to wait at most for a 1-minute load under 1")
    s.add_argument("--steps", default="", help="comma-separated step keys (default: all)")
    a = p.parse_args()
    return {"prepare": cmd_prepare, "restic": cmd_restic, "run": cmd_run}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
