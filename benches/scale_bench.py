#!/usr/bin/env python3
"""Scale benchmark (issue 24): rsmirror at 100,000, 1,000,000 and 10,000,000 resources.

Commands called by benches/scale.sh (and benches/limits.sh):

  scale_bench.py gen --out DIR --base URL --n N [--distinct]
      Two states of one source in DIR: A (N resources) and B (A after a 1% change: 1% of the
      resources updated, 0.1% deleted, 0.1% created, a Change List from A's `at`).
      Resources are /r/<i // 1000>/<i>, 256 bytes each. Without --distinct every resource is
      the same 256 bytes (DIR/blob, served for every URL by nginx `try_files`), so a
      10,000,000-resource source costs its lists only; with --distinct each resource has its
      own bytes (a file each, for the comparison with `tar -x`). Updated resources always have
      their own new bytes (DIR/B/changed/...). Lists: a Resource List Index of 50,000-entry
      lists with md5, sha-256 and length on every entry.

  scale_bench.py nginx-conf --root DIR --work DIR --port P --out FILE
      The nginx configuration that serves DIR/current (a symlink to A or B).

  scale_bench.py hold-memory
      Free page reporting off and the free memory touched once (see cmd_hold_memory); prints
      the setting for the caller to restore.

  scale_bench.py run --rsmirror BIN --src DIR --base URL --n N --work DIR --out FILE.json
      The steps on one source, once each, in order: baseline (a new mirror), the same baseline
      again with nothing changed, incremental after the switch to B (1% changed), audit
      against the source (default level), audit --offline, audit --sample 1/10; with
      --distinct sources also `tar -x` + `sync` of the same files into an empty folder (the
      file-system limit). Each
      step: wall, user and system time and peak RSS (GNU time), catalog size after it. Page
      cache dropped before every step; for the steps that fetch, and for tar, the source's
      files (the tarball) are then read into it (the source is another machine in real life).

Only the standard library.
"""
import argparse
import datetime as dt
import hashlib
import itertools
import json
import os
import shutil
import subprocess
import sys

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
RS_NS = "http://www.openarchives.org/rs/terms/"
PER_LIST = 50_000
SIZE = 256
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
AT_A = dt.datetime(2026, 6, 1, tzinfo=dt.timezone.utc)
AT_B = dt.datetime(2026, 6, 2, tzinfo=dt.timezone.utc)


def w3c(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def lastmod(i):
    # T0 + i seconds: 10,000,000 seconds is under four months, all before AT_A.
    return w3c(T0 + dt.timedelta(seconds=i))


def path_of(i):
    return f"r/{i // 1000}/{i}"


def content(i, tag=b""):
    seed = hashlib.sha256(tag + str(i).encode()).digest()
    return (seed * (SIZE // len(seed) + 1))[:SIZE]


SHARED = content(0, b"shared")


def md_of(data):
    return f'hash="md5:{hashlib.md5(data).hexdigest()} sha-256:{hashlib.sha256(data).hexdigest()}" length="{len(data)}"'


SHARED_MD = md_of(SHARED)


def head(root, capability, attrs="", up=None, index=None):
    s = f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} xmlns="{SITEMAP_NS}" xmlns:rs="{RS_NS}">\n'
    if up:
        s += f'<rs:ln rel="up" href="{up}"/>\n'
    if index:
        s += f'<rs:ln rel="index" href="{index}"/>\n'
    return s + f'<rs:md capability="{capability}"{attrs}/>\n'


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_index(state_dir, base, name, capability, entries, attrs, up):
    """`entries`: an iterator of <url> lines. Lists of PER_LIST under an index. Returns the
    index's path below the state."""
    index_url = f"{base}/rs/{name}-index.xml"
    parts = []
    part, count, f = 0, 0, None
    # An empty collection is one empty list, not an index of none.
    for line in itertools.chain([None], entries):
        if f is None or count == PER_LIST:
            if f is not None:
                f.write("</urlset>\n")
                f.close()
            part += 1
            count = 0
            rel = f"rs/{name}-{part:05d}.xml"
            parts.append(rel)
            os.makedirs(os.path.join(state_dir, "rs"), exist_ok=True)
            f = open(os.path.join(state_dir, rel), "w", encoding="utf-8", buffering=1 << 20)
            f.write(head("urlset", capability, attrs, up=up, index=index_url))
        if line is None:
            continue
        f.write(line)
        count += 1
    if f is not None:
        f.write("</urlset>\n")
        f.close()
    idx = head("sitemapindex", capability, attrs, up=up)
    idx += "".join(f"<sitemap><loc>{base}/{p}</loc></sitemap>\n" for p in parts)
    write(os.path.join(state_dir, f"rs/{name}-index.xml"), idx + "</sitemapindex>\n")
    return f"rs/{name}-index.xml"


def updated(i):
    return i % 100 == 7


def deleted(i):
    return i % 1000 == 3


def cmd_gen(a):
    out, base, n = os.path.abspath(a.out), a.base.rstrip("/"), a.n
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(out, "blob"), "wb") as f:
        f.write(SHARED)
    created = range(n, n + max(1, n // 1000))
    cap_url = f"{base}/rs/capabilitylist.xml"
    for state in ("A", "B"):
        d = os.path.join(out, state)
        os.makedirs(d)
        os.link(os.path.join(out, "blob"), os.path.join(d, "blob"))
        if a.distinct:
            os.symlink("../distinct", os.path.join(d, "distinct"))
    if a.distinct:
        for i in list(range(n)) + list(created):
            p = os.path.join(out, "distinct", path_of(i))
            if i % 1000 == 0 or i == n:
                os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(content(i))

    def md(i):
        return md_of(content(i)) if a.distinct else SHARED_MD

    def entry(i, lm, m):
        return f"<url><loc>{base}/{path_of(i)}</loc><lastmod>{lm}</lastmod><rs:md {m}/></url>\n"

    # A: every resource as it was.
    attrs_a = f' at="{w3c(AT_A)}" completed="{w3c(AT_A)}"'
    rl_a = write_index(os.path.join(out, "A"), base, "resourcelist", "resourcelist",
                       (entry(i, lastmod(i), md(i)) for i in range(n)), attrs_a, cap_url)
    # B: updates (new bytes, a later lastmod), deletes gone, creates added.
    changed_dir = os.path.join(out, "B", "changed")
    upd_time = w3c(AT_A + dt.timedelta(hours=1))

    def b_entries():
        for i in range(n):
            if deleted(i):
                continue
            if updated(i):
                yield entry(i, upd_time, md_of(content(i, b"B")))
            else:
                yield entry(i, lastmod(i), md(i))
        for i in created:
            yield entry(i, upd_time, md(i))

    for i in range(n):
        if updated(i) and not deleted(i):
            p = os.path.join(changed_dir, path_of(i))
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(content(i, b"B"))
    attrs_b = f' at="{w3c(AT_B)}" completed="{w3c(AT_B)}"'
    rl_b = write_index(os.path.join(out, "B"), base, "resourcelist", "resourcelist", b_entries(), attrs_b, cap_url)

    def changes():
        for i in range(n):
            if deleted(i):
                yield (f"<url><loc>{base}/{path_of(i)}</loc>"
                       f'<rs:md change="deleted" datetime="{upd_time}"/></url>\n')
            elif updated(i):
                yield (f"<url><loc>{base}/{path_of(i)}</loc><lastmod>{upd_time}</lastmod>"
                       f'<rs:md change="updated" datetime="{upd_time}" {md_of(content(i, b"B"))}/></url>\n')
        for i in created:
            yield (f"<url><loc>{base}/{path_of(i)}</loc><lastmod>{upd_time}</lastmod>"
                   f'<rs:md change="created" datetime="{upd_time}" {md(i)}/></url>\n')

    cl_a = write_index(os.path.join(out, "A"), base, "changelist", "changelist", iter(()),
                       f' from="{w3c(AT_A)}"', cap_url)
    cl_b = write_index(os.path.join(out, "B"), base, "changelist", "changelist", changes(),
                       f' from="{w3c(AT_A)}" until="{w3c(AT_B)}"', cap_url)
    for state, rl, cl in (("A", rl_a, cl_a), ("B", rl_b, cl_b)):
        d = os.path.join(out, state)
        write(os.path.join(d, ".well-known/resourcesync"),
              head("urlset", "description")
              + f'<url><loc>{cap_url}</loc><rs:md capability="capabilitylist"/></url>\n</urlset>\n')
        write(os.path.join(d, "rs/capabilitylist.xml"),
              head("urlset", "capabilitylist", up=f"{base}/.well-known/resourcesync")
              + f'<url><loc>{base}/{rl}</loc><rs:md capability="resourcelist"/></url>\n'
              + f'<url><loc>{base}/{cl}</loc><rs:md capability="changelist"/></url>\n</urlset>\n')
    if os.path.lexists(os.path.join(out, "current")):
        os.unlink(os.path.join(out, "current"))
    os.symlink("A", os.path.join(out, "current"))
    with open(os.path.join(out, "expected"), "w") as f:
        f.write(f"A {n}\nB {n - len([i for i in range(0, n, 1) if deleted(i)]) + len(created)}\n")


def cmd_nginx_conf(a):
    root = os.path.abspath(a.root)
    w = os.path.abspath(a.work)
    conf = f"""worker_processes 1;
daemon on;
pid {w}/nginx.pid;
error_log {w}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    sendfile on;
    keepalive_requests 1000000;
    types {{ application/xml xml; }}
    default_type application/octet-stream;
    server {{
        listen 127.0.0.1:{a.port};
        root {root}/current;
        location /r/ {{ try_files /changed$uri /distinct$uri /blob =404; }}
    }}
}}
"""
    write(a.out, conf)


def timed(argv, log):
    """Run argv under GNU time; (exit code, wall s, user s, sys s, peak RSS KiB)."""
    tf = log + ".time"
    with open(log, "w") as out:
        rc = subprocess.call(["/usr/bin/time", "-o", tf, "-f", "%e %U %S %M"] + argv,
                             stdout=out, stderr=subprocess.STDOUT)
    wall, user, sys_, rss = open(tf).read().split()[-4:]
    return rc, float(wall), float(user), float(sys_), int(rss)


def drop_caches():
    subprocess.call(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


def cmd_run(a):
    src, work = os.path.abspath(a.src), os.path.abspath(a.work)
    if os.path.exists(work):
        sys.exit(f"scale_bench.py run: {work} exists (scale.sh moves old runs to the trash first)")
    os.makedirs(work)
    # Nothing is deleted while steps are timed: on ext4 a tree of a million files deleted
    # within the last minutes slows every file creation after it (`recently_deleted`, up to
    # 5 minutes on a dirty inode table block), which would be measured as the next step's.
    mirror = os.path.join(work, "mirror")
    results = []

    def step(name, argv, switch_to=None, ok=(0,), warm=False, warm_file=None):
        if switch_to:
            cur = os.path.join(src, "current")
            os.unlink(cur)
            os.symlink(switch_to, cur)
        drop_caches()
        if warm:
            # The source is another machine in real life: its files are read into the page
            # cache first, so that the step pays for the mirror's side only.
            subprocess.call(["sh", "-c", f"find -L {src}/current/ -type f -print0 | xargs -0 cat > /dev/null"])
        if warm_file:
            subprocess.call(["sh", "-c", f"cat {warm_file} > /dev/null"])
        log = os.path.join(work, "".join(c if c.isalnum() else "-" for c in name) + ".log")
        rc, wall, user, sys_, rss = timed(argv, log)
        cat = os.path.join(mirror, "catalog.sqlite")
        size = os.path.getsize(cat) if os.path.exists(cat) else 0
        for extra in ("-wal",):
            if os.path.exists(cat + extra):
                size += os.path.getsize(cat + extra)
        r = {"step": name, "n": a.n, "exit": rc, "ok": rc in ok, "wall_s": wall, "user_s": user,
             "sys_s": sys_, "rss_kib": rss, "catalog_bytes": size}
        print(f"  {a.n:>10,} {name:<16} exit {rc}  {wall:8.2f} s  user {user:7.2f}  sys {sys_:7.2f}  "
              f"{rss / 1024:7.0f} MiB  catalog {size / 1e6:8.1f} MB", flush=True)
        results.append(r)

    rs = a.rsmirror
    step("baseline", [rs, "baseline", a.base + "/", "--mirror", mirror, "-q"], switch_to="A", warm=True)
    step("re-run", [rs, "baseline", a.base + "/", "--mirror", mirror, "-q"], warm=True)
    step("incremental", [rs, "incremental", "--mirror", mirror, "-q"], switch_to="B", warm=True)
    step("audit", [rs, "audit", "--mirror", mirror, "--report", os.path.join(work, "audit.txt")])
    step("audit-offline", [rs, "audit", "--offline", "--mirror", mirror,
                           "--report", os.path.join(work, "audit-offline.txt")])
    # A tenth of the mirror a night: what --sample loads is that tenth's states.
    step("audit --sample 1/10", [rs, "audit", "--sample", "1/10", "--mirror", mirror,
                                 "--report", os.path.join(work, "audit-sample.txt")])
    if a.distinct:
        tarball = os.path.join(src, "distinct.tar")
        if not os.path.exists(tarball):
            subprocess.check_call(["tar", "-cf", tarball, "-C", src, "distinct"])
        dest = os.path.join(work, "untar")
        os.makedirs(dest)
        step("tar -x + sync", ["sh", "-c", f"tar -xf {tarball} -C {dest} && sync"], warm_file=tarball)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)


PAGE_REPORTING = "/sys/module/page_reporting/parameters/page_reporting_order"


def cmd_hold_memory(a):
    """Keep the guest's free memory backed by the host for the run (as harness.py's
    hold_free_memory does for the transfer benchmark): turn free page reporting off, then
    touch the free memory once. On the benchmark VM a page handed back to the host costs
    about 14 µs when the guest next touches it, and every step here starts from dropped
    caches: without this a baseline of 1,000,000 resources spent 12% of its samples in the
    kernel's zeroing of each new file's page (`zero_user_segments`, 15 µs a file), and a
    run of 100,000 less. Prints the setting to restore (empty: nothing was changed) on
    stdout and what was done on stderr."""
    if os.environ.get("BENCH_PAGE_REPORTING") == "keep":
        print("free page reporting left as it was (BENCH_PAGE_REPORTING=keep)", file=sys.stderr)
        return
    try:
        with open(PAGE_REPORTING) as f:
            old = f.read().strip()
        # Only free blocks of at least this order are reported; the largest is 10.
        with open(PAGE_REPORTING, "w") as f:
            f.write("11\n")
    except OSError as e:
        print(f"free page reporting not turned off ({e.strerror})", file=sys.stderr)
        return
    print(old, flush=True)
    with open("/proc/meminfo") as f:
        free_kib = next(int(l.split()[1]) for l in f if l.startswith("MemFree:"))
    chunk = 256 << 20
    count = max(0, (free_kib * 1024 - (2 << 30)) // chunk)
    held = [bytearray(chunk) for _ in range(count)]  # zero-filled: every page written
    del held
    print(f"free page reporting to the host (page_reporting_order {old}) turned off for the run "
          f"and restored after; {count * chunk / 1e9:.1f} GB of free memory touched once beforehand",
          file=sys.stderr)


def cmd_report(a):
    runs = [json.load(open(f)) for f in a.files]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
    L = [f"## Scale (issue 24): 100,000 to 10,000,000 resources, "
         f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, at {a.commit}", "",
         "`benches/scale.sh` (its own Python, `benches/scale_bench.py`): a Resource List Index of "
         "50,000-entry lists (md5, sha-256 and length on every entry), resources of 256 bytes, served by "
         "nginx on 127.0.0.1; sources up to 1,000,000 have a file per resource, larger ones one blob "
         "served for every URL (`try_files`). One run per step, in order, page cache dropped before each (then the source's files read "
         "into it again for the steps that fetch: the source is another machine in real life): "
         "`baseline` into a new mirror, the same `baseline` again (nothing changed), `incremental` after "
         "the source changed 1% (1% updated, 0.1% deleted, 0.1% created; a Change List), `audit` (default "
         "level, against the source), `audit --offline`, `audit --sample 1/10` (against the source, a tenth "
         "of the resources). `tar -x + sync`: the same files out of a tar "
         "into an empty folder, then `sync` (the file-system limit for a baseline).",
         "",
         f"Machine: {cpu}, {os.cpu_count()} cores, {int(mem) // 1024 // 1024} GiB; load average "
         f"(1, 5, 15 min) before / after: {a.load}; {a.memory or 'free page reporting as it was'}. "
         "CPU s = user + system.", "",
         "| N | step | exit | wall s | user s | system s | peak RSS MiB | catalog MB | × at N/10 |",
         "|---|---|---|---|---|---|---|---|---|"]
    by = {(r["n"], r["step"]): r for run in runs for r in run}
    for run in runs:
        for r in run:
            prev = by.get((r["n"] // 10, r["step"]))
            ratio = f"{r['wall_s'] / prev['wall_s']:.1f}" if prev and prev["wall_s"] > 0 else "–"
            L.append(f"| {r['n']:,} | {r['step']} | {r['exit']} | {r['wall_s']:.2f} | {r['user_s']:.2f} | "
                     f"{r['sys_s']:.2f} | {r['rss_kib'] / 1024:.0f} | {r['catalog_bytes'] / 1e6:.0f} | {ratio} |")
    L.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(L))
    print("\n".join(L))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--out", required=True)
    g.add_argument("--base", required=True)
    g.add_argument("--n", type=int, required=True)
    g.add_argument("--distinct", action="store_true")
    c = sub.add_parser("nginx-conf")
    c.add_argument("--root", required=True)
    c.add_argument("--work", required=True)
    c.add_argument("--port", type=int, required=True)
    c.add_argument("--out", required=True)
    r = sub.add_parser("run")
    r.add_argument("--rsmirror", required=True)
    r.add_argument("--src", required=True)
    r.add_argument("--base", required=True)
    r.add_argument("--n", type=int, required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--distinct", action="store_true")
    t = sub.add_parser("report")
    t.add_argument("--commit", required=True)
    t.add_argument("--load", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--memory", default="")
    t.add_argument("files", nargs="+")
    sub.add_parser("hold-memory")
    a = p.parse_args()
    {"gen": cmd_gen, "nginx-conf": cmd_nginx_conf, "run": cmd_run, "report": cmd_report,
     "hold-memory": cmd_hold_memory}[a.cmd](a)


if __name__ == "__main__":
    main()
