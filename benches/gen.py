#!/usr/bin/env python3
"""Deterministic synthetic ResourceSync sources for the rsmirror benchmarks (stdlib only).

    gen.py source --out DIR --base URL --n N --size S
        Two states of one source, served one at a time by nginx (DIR/A, DIR/B):
          A: N resources of S bytes under /r/, a Source Description at
             /.well-known/resourcesync, a Capability List, a Resource List (an index of lists of
             at most 50,000 when N is larger) with md5 and sha-256, a Resource Dump (ZIP packages
             with manifest.xml) and an empty Change List that starts at the list's `at`;
          B: A after changes to 1% of the resources (updates with new content, plus a few
             creates and deletes), its Resource List at the new time, and a Change List
             from A's `at` that lists those changes. B hard-links every unchanged file of A.
        Plus what the harness checks against: manifest-A.tsv / manifest-B.tsv (uri, sha256,
        md5, length), fetch-A.curl (a curl config: every resource of A into /dev/null),
        files-A.nul (the resource files of A) and meta.json.

    gen.py index --out DIR --base URL --n 1000000 --schema schema.sql
        A Resource List Index of N entries (lists of 50,000) under /idx/, and two mirrors that
        already hold exactly those resources, built directly rather than fetched: an rsmirror
        mirror (catalog.sqlite following schema.sql, rows shaped like the ones `rsmirror
        baseline` writes, plus one object file per resource) and a resync destination folder
        (hard links to the same object files, mtime = lastmod).

Same arguments, same bytes: content comes from random.Random(seed), times are fixed.
"""

import argparse
import datetime as dt
import email.utils
import hashlib
import json
import os
import random
import shutil
import sqlite3
import sys
import zipfile

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
RS_NS = "http://www.openarchives.org/rs/terms/"
MAX_PER_LIST = 50_000

# Fixed times (all in UTC, written with `Z`: resync reads numeric offsets with the wrong sign).
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)  # lastmod of resource i is T0 + i s
AT_A = dt.datetime(2026, 2, 1, tzinfo=dt.timezone.utc)  # state A snapshot (after every lastmod)
AT_B = dt.datetime(2026, 2, 2, tzinfo=dt.timezone.utc)  # state B snapshot


def w3c(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def lastmod_of(i):
    return T0 + dt.timedelta(seconds=i)


def rel_path(i):
    """Path of resource i below the site root: 1,000 files per folder."""
    return f"r/{i // 1000:04d}/{i:07d}.bin"


def digests(data):
    return hashlib.md5(data).hexdigest(), hashlib.sha256(data).hexdigest()


def header(root, capability, attrs="", up=None, index=None):
    s = (f'<?xml version="1.0" encoding="UTF-8"?>\n'
         f'<{root} xmlns="{SITEMAP_NS}" xmlns:rs="{RS_NS}">\n')
    if up:
        s += f'<rs:ln rel="up" href="{up}"/>\n'
    if index:
        s += f'<rs:ln rel="index" href="{index}"/>\n'
    return s + f'<rs:md capability="{capability}"{attrs}/>\n'


def url_entry(loc, lastmod=None, md=""):
    lm = f"<lastmod>{w3c(lastmod)}</lastmod>" if lastmod else ""
    return f"<url><loc>{loc}</loc>{lm}<rs:md {md}/></url>\n"


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def write_resource_list(site, base, rows, at, up):
    """rows: (loc, lastmod, md5, sha256, length). One list, or an index of lists of 50,000.
    Returns the path (below the site) the Capability List should point at."""
    rows = list(rows)
    attrs = f' at="{w3c(at)}" completed="{w3c(at)}"'

    def body(part):
        return "".join(
            url_entry(loc, lm, f'hash="md5:{md5} sha-256:{sha}" length="{n}" type="application/octet-stream"')
            for loc, lm, md5, sha, n in part)

    if len(rows) <= MAX_PER_LIST:
        write_text(os.path.join(site, "rs/resourcelist.xml"),
                   header("urlset", "resourcelist", attrs, up=up) + body(rows) + "</urlset>\n")
        return "rs/resourcelist.xml"
    parts = [rows[k:k + MAX_PER_LIST] for k in range(0, len(rows), MAX_PER_LIST)]
    index_url = f"{base}/rs/resourcelist-index.xml"
    idx = header("sitemapindex", "resourcelist", attrs, up=up)
    for p, part in enumerate(parts, 1):
        name = f"rs/resourcelist-{p:04d}.xml"
        write_text(os.path.join(site, name),
                   header("urlset", "resourcelist", attrs, up=up, index=index_url) + body(part) + "</urlset>\n")
        idx += f'<sitemap><loc>{base}/{name}</loc><rs:md at="{w3c(at)}"/></sitemap>\n'
    write_text(os.path.join(site, "rs/resourcelist-index.xml"), idx + "</sitemapindex>\n")
    return "rs/resourcelist-index.xml"


def write_capability_docs(site, base, resourcelist_path, with_dump=True):
    cap_url = f"{base}/rs/capabilitylist.xml"
    write_text(os.path.join(site, ".well-known/resourcesync"),
               header("urlset", "description")
               + f'<url><loc>{cap_url}</loc><rs:md capability="capabilitylist"/></url>\n</urlset>\n')
    caps = f'<url><loc>{base}/{resourcelist_path}</loc><rs:md capability="resourcelist"/></url>\n'
    if with_dump:
        caps += f'<url><loc>{base}/rs/resourcedump.xml</loc><rs:md capability="resourcedump"/></url>\n'
    caps += f'<url><loc>{base}/rs/changelist.xml</loc><rs:md capability="changelist"/></url>\n'
    write_text(os.path.join(site, "rs/capabilitylist.xml"),
               header("urlset", "capabilitylist", up=f"{base}/.well-known/resourcesync") + caps + "</urlset>\n")


def write_dump(site, base, rows, blobs, per_package, at, up):
    """A Resource Dump of ZIP packages (stored, not deflated), manifest.xml first in each."""
    zi_time = (2026, 1, 1, 0, 0, 0)
    entries = ""
    for p, k in enumerate(range(0, len(rows), per_package), 1):
        part = rows[k:k + per_package]
        name = f"rs/dump/part-{p:04d}"
        manifest = header("urlset", "resourcedump-manifest", f' at="{w3c(at)}" completed="{w3c(at)}"', up=up)
        for (loc, lm, md5, sha, n), path in zip(part, (b[0] for b in blobs[k:k + per_package])):
            manifest += url_entry(loc, lm, f'path="/{path}" hash="md5:{md5} sha-256:{sha}" length="{n}" '
                                           f'type="application/octet-stream"')
        manifest += "</urlset>\n"
        write_text(os.path.join(site, name + "-manifest.xml"), manifest)
        zpath = os.path.join(site, name + ".zip")
        with zipfile.ZipFile(zpath, "w", zipfile.ZIP_STORED) as z:
            z.writestr(zipfile.ZipInfo("manifest.xml", zi_time), manifest)
            for path, file in blobs[k:k + per_package]:
                with open(file, "rb") as f:
                    z.writestr(zipfile.ZipInfo(path, zi_time), f.read())
        with open(zpath, "rb") as f:
            data = f.read()
        md5, sha = digests(data)
        entries += (f'<url><loc>{base}/{name}.zip</loc>'
                    f'<rs:md type="application/zip" length="{len(data)}" hash="md5:{md5} sha-256:{sha}" '
                    f'at="{w3c(at)}" completed="{w3c(at)}"/>'
                    f'<rs:ln rel="contents" type="application/xml" href="{base}/{name}-manifest.xml"/></url>\n')
    write_text(os.path.join(site, "rs/resourcedump.xml"),
               header("urlset", "resourcedump", f' at="{w3c(at)}" completed="{w3c(at)}"', up=up)
               + entries + "</urlset>\n")


def write_manifest(path, state):
    with open(path, "w") as f:
        for uri, (sha, md5, n) in sorted(state.items()):
            f.write(f"{uri}\t{sha}\t{md5}\t{n}\n")


def cmd_source(a):
    out, base, n, size = os.path.abspath(a.out), a.base.rstrip("/"), a.n, a.size
    if os.path.exists(out):
        shutil.rmtree(out)
    site_a, site_b = os.path.join(out, "A"), os.path.join(out, "B")
    cap_url = f"{base}/rs/capabilitylist.xml"
    rng = random.Random(a.seed)

    # State A: the resources.
    state_a = {}  # uri -> (sha256, md5, length)
    rows_a = []  # (loc, lastmod, md5, sha256, length)
    blobs = []  # (path below site, file)
    for i in range(n):
        data = rng.randbytes(size)
        path = rel_path(i)
        file = os.path.join(site_a, path)
        if i % 1000 == 0:
            os.makedirs(os.path.dirname(file), exist_ok=True)
        with open(file, "wb") as f:
            f.write(data)
        md5, sha = digests(data)
        loc = f"{base}/{path}"
        state_a[loc] = (sha, md5, size)
        rows_a.append((loc, lastmod_of(i), md5, sha, size))
        blobs.append((path, file))
    rl_path = write_resource_list(site_a, base, rows_a, AT_A, cap_url)
    write_capability_docs(site_a, base, rl_path)
    write_dump(site_a, base, rows_a, blobs, a.per_package, AT_A, cap_url)
    write_text(os.path.join(site_a, "rs/changelist.xml"),
               header("urlset", "changelist", f' from="{w3c(AT_A)}"', up=cap_url) + "</urlset>\n")

    # The 1% change: mostly updates, a tenth creates, a tenth deletes; spread over the ids.
    n_changes = max(3, n // 100)
    n_created = max(1, n_changes // 10)
    n_deleted = max(1, n_changes // 10)
    n_updated = n_changes - n_created - n_deleted
    touched = rng.sample(range(n), n_updated + n_deleted)
    updated, deleted = sorted(touched[:n_updated]), sorted(touched[n_updated:])
    created = list(range(n, n + n_created))
    events = ([("updated", i) for i in updated] + [("deleted", i) for i in deleted]
              + [("created", i) for i in created])
    rng.shuffle(events)

    # State B: hard links to A, then the changes.
    for root, dirs, files in os.walk(site_a):
        rel = os.path.relpath(root, site_a)
        os.makedirs(os.path.join(site_b, rel), exist_ok=True)
        for name in files:
            os.link(os.path.join(root, name), os.path.join(site_b, rel, name))
    state_b = dict(state_a)
    lastmod_b = {row[0]: row[1] for row in rows_a}
    changes = ""
    for k, (change, i) in enumerate(events):
        when = AT_A + dt.timedelta(seconds=60 + k)
        path = rel_path(i)
        loc = f"{base}/{path}"
        file = os.path.join(site_b, path)
        if change == "deleted":
            os.unlink(file)
            del state_b[loc], lastmod_b[loc]
            changes += url_entry(loc, None, f'change="deleted" datetime="{w3c(when)}"')
            continue
        data = rng.randbytes(size)
        os.makedirs(os.path.dirname(file), exist_ok=True)
        if os.path.exists(file):
            os.unlink(file)  # a new inode: never write through the hard link into A
        with open(file, "wb") as f:
            f.write(data)
        md5, sha = digests(data)
        state_b[loc], lastmod_b[loc] = (sha, md5, size), when
        changes += url_entry(loc, when, f'change="{change}" datetime="{w3c(when)}" '
                                        f'hash="md5:{md5} sha-256:{sha}" length="{size}" '
                                        f'type="application/octet-stream"')
    for name in os.listdir(os.path.join(site_b, "rs")):
        if name.startswith("resourcelist"):
            os.unlink(os.path.join(site_b, "rs", name))
    rows_b = [(loc, lastmod_b[loc], md5, sha, n_) for loc, (sha, md5, n_) in state_b.items()]
    rl_path_b = write_resource_list(site_b, base, rows_b, AT_B, cap_url)
    os.unlink(os.path.join(site_b, "rs/capabilitylist.xml"))
    os.unlink(os.path.join(site_b, ".well-known/resourcesync"))
    write_capability_docs(site_b, base, rl_path_b)
    os.unlink(os.path.join(site_b, "rs/changelist.xml"))
    write_text(os.path.join(site_b, "rs/changelist.xml"),
               header("urlset", "changelist", f' from="{w3c(AT_A)}"', up=cap_url) + changes + "</urlset>\n")

    # What the harness checks against.
    write_manifest(os.path.join(out, "manifest-A.tsv"), state_a)
    write_manifest(os.path.join(out, "manifest-B.tsv"), state_b)
    with open(os.path.join(out, "fetch-A.curl"), "w") as f:
        for loc in state_a:
            f.write(f'url = "{loc}"\noutput = "/dev/null"\n')
    with open(os.path.join(out, "files-A.nul"), "wb") as f:
        for _, file in blobs:
            f.write(file.encode() + b"\0")
    meta = {
        "n": n, "size": size, "seed": a.seed, "base": base,
        "bytes_a": n * size,
        "resources_b": len(state_b),
        "changes": {"updated": n_updated, "created": n_created, "deleted": n_deleted},
        "change_bytes": (n_updated + n_created) * size,
        "resourcelist": f"{base}/{rl_path}",
        "capabilitylist": cap_url,
        "changelist": f"{base}/rs/changelist.xml",
        "at_a": w3c(AT_A), "at_b": w3c(AT_B),
        "dump_bytes": sum(os.path.getsize(os.path.join(site_a, "rs/dump", z))
                          for z in os.listdir(os.path.join(site_a, "rs/dump")) if z.endswith(".zip")),
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"source: {n} resources of {size} bytes, {n_changes} changes -> {out}")


def cmd_index(a):
    """The 1,000,000-entry Resource List Index and mirrors that already match it."""
    out, base, n = os.path.abspath(a.out), a.base.rstrip("/"), a.n
    if os.path.exists(out):
        shutil.rmtree(out)
    site = os.path.join(out, "site", "idx")
    mirror = os.path.join(out, "mirror")
    dst = os.path.join(out, "resync-dst")
    objects = os.path.join(mirror, "objects", "sha256")
    os.makedirs(site)
    os.makedirs(dst)
    only = a.catalog_only
    index_url = f"{base}/idx/resourcelist-index.xml"
    at = w3c(AT_A)
    now = w3c(dt.datetime.now(dt.timezone.utc))

    os.makedirs(mirror)
    con = sqlite3.connect(os.path.join(mirror, "catalog.sqlite"))
    con.execute("PRAGMA journal_mode=WAL")
    with open(a.schema) as f:
        con.executescript(f.read())
    if only:  # built once at the end, in one sorted pass, as rsmirror's first load does
        con.execute("DROP INDEX IF EXISTS versions_by_object")
    con.execute("INSERT INTO sources (id, url, added_at) VALUES (1, ?, ?)", (index_url, now))
    con.execute("INSERT INTO collections (id, name) VALUES (1, ?)", (index_url,))
    con.execute("INSERT INTO runs (id, command, source_id, arguments, started_at, ended_at, outcome, exit_code, counts_json)"
                " VALUES (1, 'baseline', 1, ?, ?, ?, 'ok', 0, ?)",
                (f"rsmirror baseline {index_url} (built by benches/gen.py index)", now, now,
                 json.dumps({"created": n, "updated": 0, "unchanged": 0, "failed": 0, "refused": 0, "deleted": 0})))
    con.execute("INSERT INTO documents (source_id, url, capability, root, syntax, at, completed, entry_count, fetched_at, run_id)"
                " VALUES (1, ?, 'resourcelist', 'sitemapindex', 'v1', ?, ?, ?, ?, 1)",
                (index_url, at, at, (n + MAX_PER_LIST - 1) // MAX_PER_LIST, now))
    con.execute("INSERT INTO sync_points (collection, source_id, at, anchored, basis, run_id, updated_at)"
                " VALUES (?, 1, ?, 1, ?, 1, ?)", (index_url, at, "minimum at of the Resource List Index parts", now))

    made_dirs = set()
    idx = header("sitemapindex", "resourcelist", f' at="{at}" completed="{at}"')
    for p, k in enumerate(range(0, n, MAX_PER_LIST), 1):
        list_url = f"{base}/idx/resourcelist-{p:04d}.xml"
        body = [header("urlset", "resourcelist", f' at="{at}" completed="{at}"', index=index_url)]
        resources, versions = [], []
        for i in range(k, min(n, k + MAX_PER_LIST)):
            data = f"resource {i}\n".encode()
            md5, sha = digests(data)
            name = f"{i // 1000:04d}/{i:07d}"
            loc = f"{base}/idx/r/{name}"
            lm = lastmod_of(i)
            hash_attr = f"md5:{md5} sha-256:{sha}"
            body.append(url_entry(loc, lm, f'hash="{hash_attr}" length="{len(data)}" type="text/plain"'))
            resources.append((i + 1, loc, 1, i + 1))
            etag = f'"{int(lm.timestamp()):x}-{len(data):x}"'  # what nginx would have sent
            versions.append((i + 1, i + 1, w3c(lm), len(data), len(data), hash_attr, md5, sha, "text/plain", loc,
                             etag, email.utils.format_datetime(lm, usegmt=True)))
            if only:
                continue
            # The object (content-addressed, read-only) and resync's copy of it (a hard link).
            d = os.path.join(objects, sha[:2])
            if d not in made_dirs:
                os.makedirs(d, exist_ok=True)
                made_dirs.add(d)
            obj = os.path.join(d, sha)
            with open(obj, "wb") as f:
                f.write(data)
            os.chmod(obj, 0o444)
            rfile = os.path.join(dst, name)
            if i % 1000 == 0:
                os.makedirs(os.path.dirname(rfile), exist_ok=True)
            os.link(obj, rfile)
            if a.with_files:
                served = os.path.join(site, "r", name)
                os.makedirs(os.path.dirname(served), exist_ok=True)
                os.link(obj, served)
            t = lm.timestamp()
            os.utime(rfile, (t, t))
        body.append("</urlset>\n")
        if not only:
            write_text(os.path.join(site, f"resourcelist-{p:04d}.xml"), "".join(body))
        idx += f'<sitemap><loc>{list_url}</loc><rs:md at="{at}"/></sitemap>\n'
        con.executemany("INSERT INTO resources (id, uri, collection_id, first_run_id, current_version_id)"
                        " VALUES (?, ?, ?, 1, ?)", resources)
        con.executemany("INSERT INTO versions (id, resource_id, run_id, change, lastmod, length_bytes,"
                        " declared_length_bytes, declared_hash, md5_hex, sha256_hex, media_type, arrived_via,"
                        " fetched_from, etag, last_modified)"
                        " VALUES (?, ?, 1, 'created', ?, ?, ?, ?, ?, ?, ?, 'http', ?, ?, ?)", versions)
        con.execute("INSERT INTO documents (source_id, url, capability, root, syntax, at, completed, entry_count, fetched_at, run_id)"
                    " VALUES (1, ?, 'resourcelist', 'urlset', 'v1', ?, ?, ?, ?, 1)",
                    (list_url, at, at, len(resources), now))
        con.commit()
    write_text(os.path.join(site, "resourcelist-index.xml"), idx + "</sitemapindex>\n")
    if only:
        con.execute("CREATE INDEX IF NOT EXISTS versions_by_object ON versions(sha256_hex)")
        con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    size = sum(os.path.getsize(os.path.join(site, f)) for f in os.listdir(site))
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump({"n": n, "base": base, "index": index_url, "list_bytes": size}, f, indent=1)
    print(f"index: {n} entries in {(n + MAX_PER_LIST - 1) // MAX_PER_LIST} lists ({size / 1e6:.0f} MB) -> {out}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("source")
    s.add_argument("--out", required=True)
    s.add_argument("--base", required=True, help="http://127.0.0.1:PORT")
    s.add_argument("--n", type=int, default=10_000)
    s.add_argument("--size", type=int, default=8192)
    s.add_argument("--seed", type=int, default=7)
    s.add_argument("--per-package", type=int, default=2000, help="resources per dump package")
    i = sub.add_parser("index")
    i.add_argument("--out", required=True)
    i.add_argument("--base", required=True)
    i.add_argument("--n", type=int, default=1_000_000)
    i.add_argument("--schema", required=True, help="the crate's schema.sql")
    i.add_argument("--with-files", action="store_true",
                   help="also serve the resources (to check the built catalog against a real baseline)")
    i.add_argument("--catalog-only", action="store_true",
                   help="the catalog alone: no objects, no resync folder, no lists but the index "
                        "(benches/catalog_cost.sh: the cost of checking and copying a catalog)")
    a = p.parse_args()
    {"source": cmd_source, "index": cmd_index}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
