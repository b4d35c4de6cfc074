#!/usr/bin/env python3
"""Scale benchmark (issues 24 and 48): rsmirror at 100,000, 1,000,000 and 10,000,000 resources.

Commands called by benches/scale.sh (and benches/limits.sh):

  scale_bench.py gen --out DIR --base URL --n N [--distinct] [--dump-packages P1,P2,...]
      Two states of one source in DIR: A (N resources) and B (A after a 1% change: 1% of the
      resources updated, 0.1% deleted, 0.1% created, a Change List from A's `at`).
      Resources are /r/<i // 1000>/<i>, 256 bytes each. Without --distinct every resource is
      the same 256 bytes (DIR/blob, served for every URL by nginx `try_files`), so a
      10,000,000-resource source costs its lists only; with --distinct each resource has its
      own bytes (a file each, for the comparison with `tar -x`). Updated resources always have
      their own new bytes (DIR/B/changed/...). Lists: a Resource List Index of 50,000-entry
      lists with md5, sha-256 and length on every entry.
      --dump-packages: for each P, a Resource Dump of state A in ZIP packages of P resources
      each (stored, not compressed): A/rs/resourcedump-P.xml lists A/rs/dump-P/part-NNNNN.zip
      (with their lengths); each package holds manifest.xml first (a Resource Dump Manifest:
      md5, sha-256, length and path="/resources/<i // 1000>/<i>" on every entry, ResourceSync
      1.1 section 9), then the bitstreams at resources/<i // 1000>/<i>. Written as a stream,
      one package at a time. The dumps are not in A's Capability List (the steps that read the
      lists see the same source as without them): the dump steps name the dump document.
      DIR/dumps lists the P values made (one a line; empty without the option).

  scale_bench.py nginx-conf --root DIR --work DIR --port P --out FILE
      The nginx configuration that serves DIR/current (a symlink to A or B).

  scale_bench.py hold-memory
      Free page reporting off and the free memory touched once (see cmd_hold_memory); prints
      the setting for the caller to restore.

  scale_bench.py run --rsmirror BIN --src DIR --base URL --n N --work DIR --out FILE.json
      The steps on one source, once each, in order: baseline (a new mirror), the same baseline
      again with nothing changed, incremental after the switch to B (1% changed), audit
      against the source (default level), audit --offline, audit --refetch=all (every resource
      fetched again and its bytes compared), audit --sample 1/10; with --distinct sources also
      `tar -x` + `sync` of the same files into an empty folder (the file-system limit); then,
      for each P in DIR/dumps, `baseline --via dump` of A's Resource Dump in packages of P into
      a new mirror of its own (step "dump baseline (packages of P)"). Each
      step: wall, user and system time and peak RSS (GNU time), catalog size after it. Page
      cache dropped before every step; for the steps that fetch, and for tar, the source's
      files (the tarball; for a dump step, that dump's document and packages) are then read
      into it (the source is another machine in real life). The dumps' packages are left out
      of the other steps' reading.

  scale_bench.py report --commit C --load L --out FILE [--memory NOTE] RUN.json...
      The markdown table of the runs, then the issue 48 acceptance: for each step at 1,000,000
      (when the runs hold 100,000 too), its wall time over the one at 100,000 (PASS at most 11)
      and its peak RSS at both (PASS under 150 MiB).

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
import zipfile

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


# The date of every entry in a dump package (ZIP keeps local times to 2 s; fixed for the same
# bytes on every generation).
ZIP_TIME = (2026, 6, 1, 0, 0, 0)


def package_path(i):
    return f"resources/{i // 1000}/{i}"


def zip_info(name):
    zi = zipfile.ZipInfo(name, date_time=ZIP_TIME)
    zi.compress_type = zipfile.ZIP_STORED
    zi.external_attr = 0o644 << 16
    return zi


def write_package(path, ids, base, manifest_head, data_of, md):
    """One dump package at `path`: manifest.xml (streamed, so that a manifest of 200,000
    entries is never one string), then the bitstream of every resource in `ids`."""
    with zipfile.ZipFile(path, "w") as z:
        # The manifest's size is not known before it is written: ZIP64 from the start.
        with z.open(zip_info("manifest.xml"), "w", force_zip64=True) as m:
            m.write(manifest_head.encode())
            chunk = []
            for i in ids:
                chunk.append(f"<url><loc>{base}/{path_of(i)}</loc><lastmod>{lastmod(i)}</lastmod>"
                             f'<rs:md {md(i)} path="/{package_path(i)}"/></url>\n')
                if len(chunk) == 1000:
                    m.write("".join(chunk).encode())
                    chunk.clear()
            chunk.append("</urlset>\n")
            m.write("".join(chunk).encode())
        for i in ids:
            z.writestr(zip_info(package_path(i)), data_of(i))


def write_dumps(state_dir, base, n, packages, data_of, md, cap_url):
    """For each P in `packages`: a Resource Dump of resources 0..n in packages of P
    (rs/resourcedump-P.xml, rs/dump-P/part-NNNNN.zip below `state_dir`), one package at a
    time; nothing is added to the Capability List."""
    attrs = f' at="{w3c(AT_A)}" completed="{w3c(AT_A)}"'
    manifest_head = head("urlset", "resourcedump-manifest", attrs, up=cap_url)
    for p in packages:
        os.makedirs(os.path.join(state_dir, f"rs/dump-{p}"))
        with open(os.path.join(state_dir, f"rs/resourcedump-{p}.xml"), "w", encoding="utf-8") as doc:
            doc.write(head("urlset", "resourcedump", attrs, up=cap_url))
            for part, start in enumerate(range(0, n, p), 1):
                rel = f"rs/dump-{p}/part-{part:05d}.zip"
                path = os.path.join(state_dir, rel)
                write_package(path, range(start, min(n, start + p)), base, manifest_head, data_of, md)
                doc.write(f'<url><loc>{base}/{rel}</loc>'
                          f'<rs:md length="{os.path.getsize(path)}" type="application/zip"/></url>\n')
            doc.write("</urlset>\n")


def dump_md(distinct):
    """A dump manifest entry's metadata: sha-256 and length."""
    def md(i):
        data = content(i) if distinct else SHARED
        return f'hash="sha-256:{hashlib.sha256(data).hexdigest()}" length="{len(data)}"'
    return md


def dump_sizes(value):
    """`--dump-packages P1,P2,...`: the package sizes, each once, in the order given."""
    sizes = []
    for word in (value or "").split(","):
        if not word.strip():
            continue
        p = int(word)
        if p <= 0:
            raise ValueError(f"--dump-packages: {p} is not a package size")
        if p not in sizes:
            sizes.append(p)
    return sizes


def updated(i):
    return i % 100 == 7


def deleted(i):
    return i % 1000 == 3


def cmd_gen(a):
    out, base, n = os.path.abspath(a.out), a.base.rstrip("/"), a.n
    try:
        dumps = dump_sizes(a.dump_packages)
    except ValueError as e:
        sys.exit(f"scale_bench.py gen: {e}")
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
    # A's Resource Dumps (--dump-packages), outside its Capability List. Their manifests
    # declare sha-256 and length only: with md5 too, a manifest of 200,000 entries is over the
    # 50 MB a Sitemap may be (and rsmirror refuses it as such).
    write_dumps(os.path.join(out, "A"), base, n, dumps,
                lambda i: content(i) if a.distinct else SHARED, dump_md(a.distinct), cap_url)
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
    with open(os.path.join(out, "dumps"), "w") as f:
        f.write("".join(f"{p}\n" for p in dumps))
    # Written last: a source without it is incomplete (scale.sh makes it again).
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
    # Nothing is deleted while steps are timed: on ext4 without a journal a tree of a million
    # files deleted within the last minutes slows every file creation after it
    # (`recently_deleted` in fs/ext4/ialloc.c passes over inodes freed in the last 60 s, 360 s
    # when their inode table block is dirty), which would be measured as the next step's.
    # scale.sh waits that long after the last run's deletion before it starts.
    mirror = os.path.join(work, "mirror")
    results = []

    def step(name, argv, switch_to=None, ok=(0,), warm=False, warm_file=None, catalog_of=mirror):
        if switch_to:
            cur = os.path.join(src, "current")
            os.unlink(cur)
            os.symlink(switch_to, cur)
        drop_caches()
        if warm:
            # The source is another machine in real life: its files are read into the page
            # cache first, so that the step pays for the mirror's side only. The dumps'
            # packages are not (they are not in the Capability List; a dump step reads its own).
            subprocess.call(["sh", "-c", f"find -L {src}/current/ -type f -not -path '*/rs/dump-*' -print0 "
                                         "| xargs -0 cat > /dev/null"])
        if warm_file:
            subprocess.call(["sh", "-c", f"cat {warm_file} > /dev/null"])
        log = os.path.join(work, "".join(c if c.isalnum() else "-" for c in name) + ".log")
        rc, wall, user, sys_, rss = timed(argv, log)
        cat = os.path.join(catalog_of, "catalog.sqlite")
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
    # Every resource fetched again and compared (`--refetch` takes its modes after `=` only).
    step("audit --refetch all", [rs, "audit", "--refetch=all", "--mirror", mirror,
                                 "--report", os.path.join(work, "audit-refetch.txt")], warm=True)
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
    # Last, so that the steps above run as they did without dumps: a baseline of state A from
    # each Resource Dump the source has (scale_bench.py gen --dump-packages), each into a new
    # mirror; that dump's document and packages read into the page cache first.
    dumps_file = os.path.join(src, "dumps")
    dumps = [int(w) for w in open(dumps_file).read().split()] if os.path.exists(dumps_file) else []
    for p in dumps:
        dump_mirror = os.path.join(work, f"mirror-dump-{p}")
        step(f"dump baseline (packages of {p})",
             [rs, "baseline", f"{a.base.rstrip('/')}/rs/resourcedump-{p}.xml", "--via", "dump",
              "--mirror", dump_mirror, "-q"],
             switch_to="A", catalog_of=dump_mirror,
             warm_file=f"{src}/A/rs/resourcedump-{p}.xml {src}/A/rs/dump-{p}/*.zip")
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


# Issue 48: at 1,000,000 each step within 11 times its wall time at 100,000 and under 150 MiB
# of peak RSS; a dump's baselines under 150 MiB at 1,000,000.
SMALL, LARGE, MAX_RATIO, MAX_RSS_MIB = 100_000, 1_000_000, 11, 150
# Shown beside the steps the issue asks about, not asked to be within MAX_RATIO (nor are the
# dump baselines, asked only for memory).
NOT_ASKED = ("audit --sample 1/10", "tar -x + sync")


def acceptance(by, steps):
    """The issue 48 lines of the report: for each step run at LARGE, its wall time over the
    one at SMALL and its peak RSS at both sizes, each marked PASS or FAIL (a step that did not
    exit as expected fails both)."""
    names = [s for s in dict.fromkeys(steps) if (LARGE, s) in by]
    if not names:
        return []
    L = [f"Issue 48 acceptance, {LARGE:,} against {SMALL:,} resources: wall time at most "
         f"{MAX_RATIO}× the one at {SMALL:,}, peak RSS under {MAX_RSS_MIB} MiB at both sizes "
         f"(asked of every rsmirror step but `audit --sample 1/10`, which is shown for reference "
         f"as `tar -x + sync` is; the dump baselines are asked only to stay under the memory "
         f"bound).", "",
         f"| step | wall s {SMALL:,} | wall s {LARGE:,} | ratio | ratio ≤ {MAX_RATIO} | "
         f"peak RSS MiB {SMALL:,} | peak RSS MiB {LARGE:,} | RSS < {MAX_RSS_MIB} MiB |",
         "|---|---|---|---|---|---|---|---|"]
    for name in names:
        small, big = by.get((SMALL, name)), by[(LARGE, name)]
        runs = [r for r in (small, big) if r]
        exits = "" if all(r["ok"] for r in runs) else " (exit " + ", ".join(str(r["exit"]) for r in runs) + ")"

        def verdict(good):
            return ("PASS" if good and not exits else "FAIL") + exits

        if small and small["wall_s"] > 0:
            ratio = big["wall_s"] / small["wall_s"]
            # Two decimals: near the line, 11.04 shown as 11.0 would read as a pass.
            ratio_s = f"{ratio:.2f}"
            ratio_v = verdict(ratio <= MAX_RATIO) if name not in NOT_ASKED and not name.startswith("dump ") \
                else "not asked"
        else:
            ratio_s, ratio_v = "–", "–"
        rss = [r["rss_kib"] / 1024 for r in runs]
        small_wall = f"{small['wall_s']:.2f}" if small else "–"
        small_rss = f"{small['rss_kib'] / 1024:.0f}" if small else "–"
        L.append(f"| {name} | {small_wall} | {big['wall_s']:.2f} | {ratio_s} | {ratio_v} | "
                 f"{small_rss} | {big['rss_kib'] / 1024:.0f} | {verdict(max(rss) < MAX_RSS_MIB)} |")
    L.append("")
    return L


def cmd_report(a):
    runs = [json.load(open(f)) for f in a.files]
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "0")
    L = [f"## Scale (issues 24, 48): 100,000 to 10,000,000 resources, "
         f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, at {a.commit}", "",
         "`benches/scale.sh` (its own Python, `benches/scale_bench.py`): a Resource List Index of "
         "50,000-entry lists (md5, sha-256 and length on every entry), resources of 256 bytes, served by "
         "nginx on 127.0.0.1; sources up to 1,000,000 have a file per resource, larger ones one blob "
         "served for every URL (`try_files`). One run per step, in order, page cache dropped before each (then the source's files read "
         "into it again for the steps that fetch: the source is another machine in real life): "
         "`baseline` into a new mirror, the same `baseline` again (nothing changed), `incremental` after "
         "the source changed 1% (1% updated, 0.1% deleted, 0.1% created; a Change List), `audit` (default "
         "level, against the source), `audit --offline`, `audit --refetch all` (`--refetch=all`: every "
         "resource fetched again and its bytes compared), `audit --sample 1/10` (against the source, a tenth "
         "of the resources). `tar -x + sync`: the same files out of a tar "
         "into an empty folder, then `sync` (the file-system limit for a baseline). `dump baseline "
         "(packages of P)`: `baseline --via dump` of the first state from a Resource Dump in ZIP packages "
         "of P resources (stored; each with its manifest), into a new mirror, the dump's packages read "
         "into the page cache first.",
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
    L += acceptance(by, [r["step"] for run in runs for r in run])
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
    g.add_argument("--dump-packages", default="", metavar="P1,P2,...",
                   help="a Resource Dump of state A in packages of each P resources")
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
