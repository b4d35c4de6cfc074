#!/usr/bin/env python3
"""A source across a real link: a round trip, TLS and HTTP/2, for rsmirror against curl and
resync-sync, in one run (stdlib only; nginx and curl from the system).

    python3 benches/remote.py --rsmirror [LABEL=]target/release/rsmirror [--rsmirror ...]
        [--rtt 10,50,150]
        [--counts 2000,20000] [--size 8192] [--bandwidth BYTES_PER_S] [--resync PATH]
        [--resync-subset 200] [--rounds 1] [--changes N] [--entry capabilitylist] [--settled]

What it builds, in a temporary folder:
- COUNT files of SIZE random bytes and a Resource List of them (ResourceSync 1.1, with length
  and sha-256), served by nginx over TLS with HTTP/2 offered by ALPN (a private CA made with
  openssl; every client is given it, nothing is verified less);
- a TCP proxy in front of nginx that holds every chunk for half the round trip in each
  direction (this kernel has no netem; the delay is one-way and in order, as a long link's is),
  optionally capped at BANDWIDTH bytes a second each way.

What it runs, one after the other, for each round trip and count (every client starts cold: a
new process, no connection kept from the one before):
- rsmirror baseline of the Resource List (default --jobs), into a new mirror, checked after:
  every resource present with its SHA-256;
- curl --parallel --parallel-max 100 --http2 (multiplexed on one connection);
- curl --parallel --parallel-max 8 --http1.1 (eight connections);
- resync-sync (one resource at a time), on the first --resync-subset resources when the count
  is larger, its time scaled up to the whole count and marked so.

With --changes N (default 0: not measured), an incremental step as well, after the above in
each round: the Resource List then names a Capability List (rs:ln rel="up") that names it and
a Change List (empty and open until then). N resources spread evenly over the count get new
random bytes of the same size; the Change List is replaced by one from the Resource List's
`at` until a later time, an `updated` entry per changed resource (lastmod and datetime after
the Resource List's, sha-256 and length), and the Resource List by the source's new state.
Then, on the same source:
- rsmirror incremental of each mirror its baseline made above (same --ca-file and arguments),
  checked after: the changed resources' SHA-256 the new bytes', every other one unchanged;
- curl multiplexed and curl with eight HTTP/1.1 connections, as above, on the N changed URLs.
Rows "COUNT, incremental N", each time over curl multiplexed's of that step; rsmirror's row
also names the documents it fetched. The source is put back as it was before the next round.
With --entry capabilitylist, rsmirror's baseline (and so its incremental) starts from the
Capability List rather than the Resource List, as a Destination that subscribes to it does: the
incremental then reads the Capability List and the Change List, not the whole Resource List
again to find its `up` link. With --settled, each mirror first has an incremental with nothing
new (untimed), so that the measured one is a later run, as a cron job's mostly is: it knows the
open Change List from the run before and asks for it with the Capability List.

Prints a Markdown table (seconds, and each client's time over curl multiplexed) and the
nginx log's figures for rsmirror's run: connections opened and the HTTP versions seen.
"""

import argparse
import asyncio
import datetime
import hashlib
import os
import shutil
import statistics
import socket
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_tls(work):
    """A private CA and a server certificate for localhost and 127.0.0.1 signed by it."""
    ca_key, ca = os.path.join(work, "ca.key"), os.path.join(work, "ca.pem")
    key, csr, cert = (os.path.join(work, n) for n in ("server.key", "server.csr", "server.pem"))
    ext = os.path.join(work, "san.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    run = lambda *a: subprocess.run(a, check=True, capture_output=True)
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
        "-days", "2", "-subj", "/CN=rsmirror bench CA")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
        "-subj", "/CN=localhost")
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
        "-out", cert, "-days", "2", "-extfile", ext)
    return ca, cert, key


RS_HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n'
           '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
           'xmlns:rs="http://www.openarchives.org/rs/terms/">\n')
# The Resource List's time; with --changes, the changes come after it and the Change List
# ends at CHANGED.
AT = "2026-01-01T00:00:00Z"
CHANGED = "2026-01-02T00:00:00Z"


def write_resource_list(site, base, items, size, at, up):
    """resourcelist.xml of items [(url, sha256, lastmod)] at `at`; naming the Capability List
    as its `up` when `up`."""
    with open(os.path.join(site, "resourcelist.xml"), "w") as f:
        f.write(RS_HEAD)
        if up:
            f.write(f'<rs:ln rel="up" href="{base}/capabilitylist.xml"/>\n')
        f.write(f'<rs:md capability="resourcelist" at="{at}" completed="{at}"/>\n')
        f.write("\n".join(
            f'<url><loc>{url}</loc><lastmod>{lastmod}</lastmod>'
            f'<rs:md hash="sha-256:{sha}" length="{size}" type="application/octet-stream"/></url>'
            for url, sha, lastmod in items))
        f.write("\n</urlset>\n")


def write_change_list(site, base, entries, until):
    """changelist.xml from AT: `updated` entries [(url, sha256, size, datetime)]; open when
    `until` is None."""
    until = f' until="{until}"' if until else ""
    with open(os.path.join(site, "changelist.xml"), "w") as f:
        f.write(RS_HEAD)
        f.write(f'<rs:ln rel="up" href="{base}/capabilitylist.xml"/>\n'
                f'<rs:md capability="changelist" from="{AT}"{until}/>\n')
        for url, sha, size, when in entries:
            f.write(f'<url><loc>{url}</loc><lastmod>{when}</lastmod>'
                    f'<rs:md change="updated" datetime="{when}" hash="sha-256:{sha}" '
                    f'length="{size}" type="application/octet-stream"/></url>\n')
        f.write("</urlset>\n")


def make_site(site, count, size, base, changes=False):
    """COUNT files and their Resource List; returns {url: sha256}. With `changes`, a
    Capability List too, naming the Resource List and an empty open Change List."""
    os.makedirs(os.path.join(site, "r"), exist_ok=True)
    expected = {}
    for i in range(count):
        data = os.urandom(size)
        name = f"r/{i:06d}.bin"
        with open(os.path.join(site, name), "wb") as f:
            f.write(data)
        expected[f"{base}/{name}"] = hashlib.sha256(data).hexdigest()
    write_resource_list(site, base, [(u, s, AT) for u, s in expected.items()], size, AT, changes)
    if changes:
        with open(os.path.join(site, "capabilitylist.xml"), "w") as f:
            f.write(RS_HEAD)
            f.write('<rs:md capability="capabilitylist"/>\n'
                    f'<url><loc>{base}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>\n'
                    f'<url><loc>{base}/changelist.xml</loc><rs:md capability="changelist"/></url>\n'
                    '</urlset>\n')
        write_change_list(site, base, [], None)
    return expected


def change_site(site, base, expected, n, size):
    """N resources spread evenly over the site get new random bytes; the Change List and the
    Resource List say so. Returns ({url: sha256} after, [changed urls], a function that puts
    the site back as it was)."""
    urls = sorted(expected)
    picked = [urls[i * len(urls) // n] for i in range(n)]
    originals = {}
    after = dict(expected)
    entries, lastmods = [], {}
    t0 = datetime.datetime(2026, 1, 1, 1, tzinfo=datetime.timezone.utc)
    for k, url in enumerate(picked):
        path = os.path.join(site, url[len(base) + 1:])
        with open(path, "rb") as f:
            originals[path] = f.read()
        data = os.urandom(size)
        with open(path, "wb") as f:
            f.write(data)
        after[url] = hashlib.sha256(data).hexdigest()
        lastmods[url] = (t0 + datetime.timedelta(seconds=k)).strftime("%Y-%m-%dT%H:%M:%SZ")
        entries.append((url, after[url], size, lastmods[url]))
    write_change_list(site, base, entries, CHANGED)
    write_resource_list(site, base, [(u, after[u], lastmods.get(u, AT)) for u in urls], size,
                        CHANGED, True)

    def restore():
        for path, data in originals.items():
            with open(path, "wb") as f:
                f.write(data)
        write_change_list(site, base, [], None)
        write_resource_list(site, base, [(u, expected[u], AT) for u in urls], size, AT, True)

    return after, picked, restore


def start_nginx(work, site, port, cert, key):
    conf = os.path.join(work, "nginx.conf")
    log = os.path.join(work, "access.log")
    with open(conf, "w") as f:
        f.write(f"""
worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 1024; }}
http {{
    log_format combined_conn '$connection $server_protocol $status $body_bytes_sent $request_uri';
    access_log {log} combined_conn;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    keepalive_requests 100000;
    http2_max_concurrent_streams 128;
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {site};
    }}
}}
""")
    p = subprocess.Popen(["nginx", "-c", conf, "-p", work], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return p, log
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nginx did not start: {open(os.path.join(work, 'error.log')).read()}")


class DelayProxy:
    """Forwards 127.0.0.1:listen to 127.0.0.1:target, each chunk held `one_way` seconds in
    each direction (in order), at most `bandwidth` bytes a second each way when given."""

    def __init__(self, target, one_way, bandwidth=None):
        self.target, self.one_way, self.bandwidth = target, one_way, bandwidth
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self.ready.wait()

    def _run(self):
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", self.port))
        self.ready.set()
        self.loop.run_until_complete(server.serve_forever())

    async def _pipe(self, reader, writer):
        queue = asyncio.Queue()

        async def send():
            budget_at = time.monotonic()
            while True:
                due, data = await queue.get()
                if data is None:
                    break
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if self.bandwidth:
                    budget_at = max(budget_at, time.monotonic()) + len(data) / self.bandwidth
                    wait = budget_at - time.monotonic()
                    if wait > 0:
                        await asyncio.sleep(wait)
                writer.write(data)
                await writer.drain()
            try:
                writer.write_eof()
            except OSError:
                pass

        sender = asyncio.ensure_future(send())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((time.monotonic() + self.one_way, data))
        except OSError:
            pass
        queue.put_nowait((0, None))
        try:
            await sender
        except OSError:
            pass

    async def _client(self, reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.close()
            return
        sock = up_writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer),
                             return_exceptions=True)
        for w in (writer, up_writer):
            w.close()


def timed(cmd, **kw):
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return time.monotonic() - t, p


def check_rsmirror(mirror, expected):
    import sqlite3
    con = sqlite3.connect(os.path.join(mirror, "catalog.sqlite"))
    got = dict(con.execute(
        "SELECT r.uri, v.sha256_hex FROM resources r JOIN versions v ON v.id = r.current_version_id"))
    missing = [u for u, s in expected.items() if got.get(u) != s]
    return f"{len(missing)} resources missing or wrong" if missing else None


def check_folder(folder, count):
    n = sum(len(files) for _, _, files in os.walk(folder))
    return None if n >= count else f"{n} of {count} files"


def nginx_figures(log, since):
    """Connections and protocols of the requests logged after byte offset `since`."""
    with open(log) as f:
        f.seek(since)
        lines = f.read().splitlines()
    conns = {l.split()[0] for l in lines if l.split()}
    protocols = sorted({l.split()[1] for l in lines if len(l.split()) > 1})
    return f"{len(lines)} requests on {len(conns)} connection(s), {'/'.join(protocols)}"


def nginx_documents(log, since):
    """The requests logged after `since` that were not for a resource: 'URI STATUS, ...'."""
    with open(log) as f:
        f.seek(since)
        lines = [l.split() for l in f.read().splitlines()]
    docs = [f"{l[4]} {l[2]}" for l in lines if len(l) > 4 and not l[4].startswith("/r/")]
    return ", ".join(docs) or "no document"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rsmirror", required=True, action="append",
                    help="an rsmirror binary, LABEL=PATH or PATH; repeat to compare builds in one run")
    ap.add_argument("--rtt", default="10,50,150", help="round trips in ms, comma-separated")
    ap.add_argument("--counts", default="2000,20000")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--bandwidth", type=int, default=None, help="bytes/s each way (default: none)")
    ap.add_argument("--resync", default=shutil.which("resync-sync"))
    ap.add_argument("--resync-subset", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--rsmirror-args", default="", help="more arguments for rsmirror baseline")
    ap.add_argument("--changes", type=int, default=0,
                    help="an incremental of N changed resources after the baseline (default 0: none)")
    ap.add_argument("--entry", choices=("resourcelist", "capabilitylist"), default="resourcelist",
                    help="the document rsmirror's baseline is given (capabilitylist needs --changes);"
                         " the incremental starts from it too")
    ap.add_argument("--settled", action="store_true",
                    help="with --changes: one incremental with nothing new before the measured one"
                         " (untimed), so that the measured run is not the first after the baseline")
    a = ap.parse_args()
    if a.changes < 0 or any(a.changes > int(c) for c in a.counts.split(",")):
        ap.error("--changes must be between 0 and the smallest count")
    if a.entry == "capabilitylist" and not a.changes:
        ap.error("--entry capabilitylist needs --changes (only then is there a Capability List)")
    work = tempfile.mkdtemp(prefix="rsmirror-remote-")
    os.chmod(work, 0o755)  # nginx's workers read the site as another user
    for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        os.makedirs(os.path.join(work, d))
    ca, cert, key = make_tls(work)
    nginx_port = free_port()
    rows = []
    try:
        for count in (int(c) for c in a.counts.split(",")):
            site = os.path.join(work, f"site-{count}")
            for rtt in (int(r) for r in a.rtt.split(",")):
                proxy = DelayProxy(nginx_port, rtt / 2000, a.bandwidth)
                base = f"https://localhost:{proxy.port}"
                if os.path.exists(site):
                    shutil.rmtree(site)
                expected = make_site(site, count, a.size, base, a.changes > 0)
                nginx, log = start_nginx(work, site, nginx_port, cert, key)
                try:
                    rows += run_clients(a, work, base, expected, count, rtt, ca, log)
                finally:
                    nginx.terminate()
                    nginx.wait()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("| resources | RTT | client | seconds | / curl multiplexed | checked | what nginx saw |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    if a.rounds > 1:
        # Each round's ratio is to curl multiplexed of the same round; the medians of both.
        print()
        print(f"Medians over {a.rounds} rounds:")
        print()
        print("| resources | RTT | client | median seconds | median / curl multiplexed | rounds ok |")
        print("| --- | --- | --- | --- | --- | --- |")
        groups = {}
        for r in rows:
            groups.setdefault(r[:3], []).append(r)
        for (count, rtt, name), rs in groups.items():
            secs = statistics.median(float(r[3]) for r in rs)
            ratio = statistics.median(float(r[4].rstrip("x")) for r in rs)
            ok = sum(r[5] == "ok" for r in rs)
            print(f"| {count} | {rtt} | {name} | {secs:.2f} | {ratio:.2f}x | {ok}/{len(rs)} |")


def run_curls(work, urls, ca, log, results):
    """curl multiplexed, then curl with eight HTTP/1.1 connections, on `urls`; into results."""
    # curl, multiplexed
    out = os.path.join(work, "curl-h2")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cfg = os.path.join(work, "curl.cfg")
    with open(cfg, "w") as f:
        for i, u in enumerate(urls):
            f.write(f'url = "{u}"\noutput = "{out}/{i}"\n')
    for name, extra in (("curl --http2 --parallel-max 100", ["--http2", "--parallel-max", "100"]),
                        ("curl --http1.1 --parallel-max 8", ["--http1.1", "--parallel-max", "8"])):
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        since = os.path.getsize(log)
        secs, p = timed(["curl", "-sS", "--no-progress-meter", "--fail", "--cacert", ca, "--parallel", *extra, "-K", cfg])
        bad = (p.stderr.strip()[:200] or None) if p.returncode else check_folder(out, len(urls))
        results[name] = (secs, bad or "ok", nginx_figures(log, since))


def run_clients(a, work, base, expected, count, rtt, ca, log):
    urls = sorted(expected)
    rows = []
    for round_ in range(a.rounds):
        results = {}
        run_curls(work, urls, ca, log, results)
        # rsmirror, each build given (with --changes, each into a mirror of its own, kept for
        # the incremental)
        mirrors = []
        for i, given in enumerate(a.rsmirror):
            label, _, binary = given.rpartition("=")
            mirror = os.path.join(work, f"mirror-{i}" if a.changes else "mirror")
            mirrors.append((label, binary, mirror))
            shutil.rmtree(mirror, ignore_errors=True)
            since = os.path.getsize(log)
            secs, p = timed([binary, "baseline", f"{base}/{a.entry}.xml", "--mirror", mirror,
                             "--ca-file", ca, "-q", *a.rsmirror_args.split()])
            bad = f"exit {p.returncode}: {p.stderr.strip()[:200]}" if p.returncode else check_rsmirror(mirror, expected)
            name = f"rsmirror baseline ({label})" if label else "rsmirror baseline"
            results[name] = (secs, bad or "ok", nginx_figures(log, since))
        # resync-sync, one at a time: a subset when the count is larger
        if a.resync:
            n = min(count, a.resync_subset)
            sub = os.path.join(work, "resync-list.xml")
            body = open(os.path.join(work, f"site-{count}", "resourcelist.xml")).read()
            head, _, rest = body.partition("<url>")
            kept = ("<url>" + rest).split("\n")[:n]
            with open(os.path.join(work, f"site-{count}", "subset.xml"), "w") as f:
                f.write(head + "\n".join(kept) + "\n</urlset>\n")
            dest = os.path.join(work, "resync-dest")
            shutil.rmtree(dest, ignore_errors=True)
            since = os.path.getsize(log)
            env = dict(os.environ, REQUESTS_CA_BUNDLE=ca, SSL_CERT_FILE=ca)
            secs, p = timed([a.resync, "--baseline", "--sitemap", f"{base}/subset.xml",
                             f"{base}/={dest}/"], env=env)
            bad = f"exit {p.returncode}: {p.stderr.strip()[-200:]}" if p.returncode else check_folder(dest, n)
            label = "resync-sync" if n == count else f"resync-sync (x{count / n:g} of {n})"
            results[label] = (secs * count / n, bad or "ok", nginx_figures(log, since))
        best = results["curl --http2 --parallel-max 100"][0]
        for name, (secs, ok, seen) in results.items():
            rows.append((count, f"{rtt} ms", name, f"{secs:.2f}", f"{secs / best:.2f}x", ok, seen))
            print(rows[-1], flush=True)
        if a.changes:
            rows += run_incremental(a, work, base, expected, count, rtt, ca, log, mirrors)
    return rows


def run_incremental(a, work, base, expected, count, rtt, ca, log, mirrors):
    """--changes N: change N resources, then rsmirror incremental of each baseline's mirror and
    both curls on the changed URLs; the site put back after."""
    site = os.path.join(work, f"site-{count}")
    if a.settled:
        # An incremental with nothing new first, untimed: the measured one is then a later
        # run, as a cron job's mostly is (it has read the open Change List before).
        for label, binary, mirror in mirrors:
            p = subprocess.run([binary, "incremental", "--mirror", mirror, "--ca-file", ca, "-q",
                                *a.rsmirror_args.split()], capture_output=True, text=True)
            if p.returncode:
                raise SystemExit(f"settling incremental of {label}: exit {p.returncode}: {p.stderr}")
    after, changed, restore = change_site(site, base, expected, a.changes, a.size)
    rows = []
    try:
        rsmirror = {}
        for label, binary, mirror in mirrors:
            since = os.path.getsize(log)
            secs, p = timed([binary, "incremental", "--mirror", mirror, "--ca-file", ca, "-q",
                             *a.rsmirror_args.split()])
            bad = f"exit {p.returncode}: {p.stderr.strip()[:200]}" if p.returncode else check_rsmirror(mirror, after)
            name = f"rsmirror incremental ({label})" if label else "rsmirror incremental"
            rsmirror[name] = (secs, bad or "ok",
                              f"{nginx_figures(log, since)}; {nginx_documents(log, since)}")
        results = {}
        run_curls(work, changed, ca, log, results)
        results.update(rsmirror)
    finally:
        restore()
    best = results["curl --http2 --parallel-max 100"][0]
    for name, (secs, ok, seen) in results.items():
        rows.append((f"{count}, incremental {a.changes}", f"{rtt} ms", name, f"{secs:.2f}",
                     f"{secs / best:.2f}x", ok, seen))
        print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    main()
