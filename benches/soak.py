#!/usr/bin/env python3
"""Soak test of a busy source (issue 26): a live ResourceSync source that keeps changing while
rsmirror takes a baseline and then runs `incremental` every few seconds; once the source stands
still, a last `incremental` and an `audit` must find the mirror in sync.

The source is served from memory by this script on 127.0.0.1 (port 0): N resources under /r/,
a Capability List, a Resource List generated on every request (`at` = the moment it is made,
each entry with its current md5 and length), and one open Change List of every change since the
source started (`datetime` = the moment of the change, with the new md5 and length). A writer
thread changes RATE resources a second: mostly updates, a tenth creates, a tenth deletes. The
race the issue measured happens by itself: a resource listed at `at` can change before the
baseline fetches it.

    python3 benches/soak.py --rsmirror target/release/rsmirror [--n 2000] [--rate 100]
                            [--seconds 60] [--every 3]

Prints one line per run and a summary (runs, changes published, applied, pending in the
baseline, pending settled, failures, the final audit); exit 0 when the final audit is clean.
Stdlib only.
"""

import argparse
import hashlib
import http.server
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"'


def now():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Source:
    def __init__(self, n, seed):
        self.lock = threading.Lock()
        self.rng = random.Random(seed)
        self.started = now()
        self.files = {}  # name -> bytes
        self.changes = []  # (datetime, name, change, md5, length)
        self.next_id = n
        for i in range(n):
            self.files[f"r{i:06d}"] = self.body(f"r{i:06d}", 0)
        self.counts = {"updated": 0, "created": 0, "deleted": 0}

    def body(self, name, version):
        return (f"{name} version {version} " * 8 + "\n").encode()

    def change_one(self):
        with self.lock:
            roll = self.rng.random()
            if roll < 0.1 or not self.files:
                name, change = f"r{self.next_id:06d}", "created"
                self.next_id += 1
                self.files[name] = self.body(name, 1)
            elif roll < 0.2:
                name, change = self.rng.choice(sorted(self.files)), "deleted"
                del self.files[name]
            else:
                name, change = self.rng.choice(sorted(self.files)), "updated"
                self.files[name] = self.body(name, self.rng.randrange(1, 10**9))
            data = self.files.get(name, b"")
            self.changes.append((now(), name, change, hashlib.md5(data).hexdigest(), len(data)))
            self.counts[change] += 1

    def resource_list(self, base):
        with self.lock:
            at = now()
            rows = [(k, hashlib.md5(v).hexdigest(), len(v)) for k, v in sorted(self.files.items())]
        body = "".join(f'<url><loc>{base}/r/{k}</loc><rs:md hash="md5:{h}" length="{n}"/></url>\n'
                       for k, h, n in rows)
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n'
                f'<rs:ln rel="up" href="{base}/capabilitylist.xml"/>\n'
                f'<rs:md capability="resourcelist" at="{at}"/>\n{body}</urlset>\n')

    def change_list(self, base):
        with self.lock:
            changes = list(self.changes)
        body = []
        for t, k, change, h, n in changes:
            md = f' hash="md5:{h}" length="{n}"' if change != "deleted" else ""
            body.append(f'<url><loc>{base}/r/{k}</loc><rs:md change="{change}" datetime="{t}"{md}/></url>\n')
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n'
                f'<rs:ln rel="up" href="{base}/capabilitylist.xml"/>\n'
                f'<rs:md capability="changelist" from="{self.started}"/>\n{"".join(body)}</urlset>\n')

    def capability_list(self, base):
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>\n'
                f'<rs:md capability="capabilitylist"/>\n'
                f'<url><loc>{base}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>\n'
                f'<url><loc>{base}/changelist.xml</loc><rs:md capability="changelist"/></url>\n</urlset>\n')


def serve(source):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            base = f"http://{self.headers['Host']}"
            path = self.path.split("?")[0]
            if path == "/capabilitylist.xml":
                data = source.capability_list(base).encode()
            elif path == "/resourcelist.xml":
                data = source.resource_list(base).encode()
            elif path == "/changelist.xml":
                data = source.change_list(base).encode()
            elif path.startswith("/r/"):
                with source.lock:
                    data = source.files.get(path[3:])
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # a client closing a kept-alive connection is not news

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run(cmd):
    t = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    took = time.monotonic() - t
    try:
        summary = json.loads(p.stdout) if p.stdout.strip() else {}
    except json.JSONDecodeError:
        summary = {}
    return p.returncode, summary, p.stderr, took


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rsmirror", default="target/release/rsmirror")
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rate", type=float, default=100.0, help="changes a second")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--every", type=float, default=3.0, help="seconds between incremental runs")
    ap.add_argument("--seed", type=int, default=26)
    a = ap.parse_args()

    source = Source(a.n, a.seed)
    server = serve(source)
    root = f"http://127.0.0.1:{server.server_address[1]}/capabilitylist.xml"
    stop = threading.Event()

    def writer():
        while not stop.is_set():
            source.change_one()
            time.sleep(1.0 / a.rate)

    changing = threading.Thread(target=writer, daemon=True)
    changing.start()
    work = tempfile.mkdtemp(prefix="rsmirror-soak-")
    mirror = os.path.join(work, "mirror")
    totals = {"runs": 0, "created": 0, "updated": 0, "deleted": 0, "unchanged": 0, "failed": 0,
              "pending": 0, "exit_codes": {}}

    def note(label, code, s, took):
        totals["runs"] += 1
        totals["exit_codes"][str(code)] = totals["exit_codes"].get(str(code), 0) + 1
        for k in ("created", "updated", "deleted", "unchanged", "failed", "pending"):
            totals[k] += int(s.get(k, 0) or 0)
        print(f"{label:12} exit {code}  {took:5.2f} s  created {s.get('created', '-')} updated "
              f"{s.get('updated', '-')} deleted {s.get('deleted', '-')} failed {s.get('failed', '-')} "
              f"pending {s.get('pending', '-')} sync point {s.get('sync_point', '-')}", flush=True)

    time.sleep(1.0)
    code, s, err, took = run([a.rsmirror, "baseline", root, "--mirror", mirror, "--json", "-q"])
    note("baseline", code, s, took)
    pending_at_baseline = int(s.get("pending", 0) or 0)
    if code not in (0, 3):
        print(err, file=sys.stderr)
        return 1
    deadline = time.monotonic() + a.seconds
    while time.monotonic() < deadline:
        time.sleep(a.every)
        code, s, err, took = run([a.rsmirror, "incremental", "--mirror", mirror, "--json", "-q"])
        note("incremental", code, s, took)
    stop.set()
    changing.join()
    time.sleep(1.0)
    code, s, err, took = run([a.rsmirror, "incremental", "--mirror", mirror, "--json", "-q"])
    note("incremental", code, s, took)
    final_incremental = code
    p = subprocess.run([a.rsmirror, "audit", "--mirror", mirror, "-q"], capture_output=True, text=True)
    published = sum(source.counts.values())
    print(json.dumps({
        "source": {"resources_at_start": a.n, "changes_published": published, **source.counts,
                   "resources_at_end": len(source.files)},
        "runs": totals["runs"], "exit_codes": totals["exit_codes"],
        "applied": {k: totals[k] for k in ("created", "updated", "deleted")},
        "pending_at_baseline": pending_at_baseline,
        "failures_reported": totals["failed"],
        "final_incremental_exit": final_incremental,
        "final_audit_exit": p.returncode,
        "final_audit_output": (p.stdout + p.stderr).strip()[:2000],
        "mirror": mirror,
    }, indent=2))
    server.shutdown()
    return 0 if p.returncode == 0 and final_incremental == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
