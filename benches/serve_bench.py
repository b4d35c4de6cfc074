#!/usr/bin/env python3
"""`rsmirror serve` under load (stdlib only): TimeGate and memento requests from C clients at
once over keep-alive connections, against a mirror given or made by `gen.py index`.

    serve_bench.py --rsmirror target/release/rsmirror --mirror DIR [--clients 64]
                   [--requests 20000] [--uris 10000]
    serve_bench.py --rsmirror BIN --make N --work benches/.work/serve   # gen.py index first

Each client takes URIs from `rsmirror ls` in turn and sends a TimeGate HEAD with an
Accept-Datetime, then GETs the memento it was sent to (each counts as a request). Prints the
requests per second, the p50 / p99 latency of each kind and the server's peak RSS (VmHWM).
"""
import argparse, http.client, os, re, subprocess, sys, threading, time

def main():
    a = argparse.ArgumentParser()
    a.add_argument("--rsmirror", required=True)
    a.add_argument("--mirror")
    a.add_argument("--make", type=int)
    a.add_argument("--work", default=os.path.join(os.path.dirname(__file__), ".work", "serve"))
    a.add_argument("--clients", type=int, default=64)
    a.add_argument("--requests", type=int, default=20000)
    a.add_argument("--uris", type=int, default=10000)
    o = a.parse_args()
    mirror = o.mirror
    if o.make:
        out = os.path.join(o.work, f"index-{o.make}")
        mirror = os.path.join(out, "mirror")
        if not os.path.isdir(mirror):
            schema = os.path.join(os.path.dirname(__file__), "..", "schema.sql")
            subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "gen.py"), "index",
                            "--out", out, "--base", "http://127.0.0.1:1", "--n", str(o.make),
                            "--schema", schema], check=True)
            mirror = next(os.path.join(r, d) for r, ds, _ in os.walk(out) for d in ds
                          if os.path.exists(os.path.join(r, d, "catalog.sqlite")))
    ls = subprocess.run([o.rsmirror, "ls", "--mirror", mirror], capture_output=True, text=True, check=True)
    uris = ls.stdout.split("\n")[: o.uris]
    uris = [u for u in uris if u]
    srv = subprocess.Popen([o.rsmirror, "serve", "-q", "--listen", "127.0.0.1:0", "--mirror", mirror,
                            "--max-connections", str(o.clients * 2)], stderr=subprocess.PIPE, text=True)
    port = int(re.search(r"127\.0\.0\.1:(\d+)/", srv.stderr.readline()).group(1))
    lat = {"timegate": [], "memento": []}
    lock = threading.Lock()
    per = o.requests // (2 * o.clients)

    def client(k):
        c = http.client.HTTPConnection("127.0.0.1", port)
        mine = {"timegate": [], "memento": []}
        for i in range(per):
            uri = uris[(k * per + i) % len(uris)]
            t = time.perf_counter()
            c.request("HEAD", "/timegate/" + uri, headers={"Accept-Datetime": "Tue, 03 Feb 2032 00:00:00 GMT"})
            r = c.getresponse(); r.read()
            mine["timegate"].append(time.perf_counter() - t)
            loc = r.getheader("Location")
            assert r.status == 302 and loc, (r.status, uri)
            t = time.perf_counter()
            c.request("GET", loc.split(f"127.0.0.1:{port}", 1)[1])
            r = c.getresponse(); r.read()
            mine["memento"].append(time.perf_counter() - t)
            assert r.status == 200, (r.status, loc)
        with lock:
            for k2 in lat:
                lat[k2].extend(mine[k2])

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(o.clients)]
    for t in threads: t.start()
    for t in threads: t.join()
    wall = time.perf_counter() - start
    hwm = [l for l in open(f"/proc/{srv.pid}/status") if l.startswith("VmHWM")][0].split()[1]
    srv.terminate(); srv.wait()
    n = sum(len(v) for v in lat.values())
    print(f"{n} requests from {o.clients} clients in {wall:.2f} s: {n / wall:.0f} requests/s; "
          f"server peak RSS {int(hwm) / 1024:.1f} MiB")
    for k, v in lat.items():
        v.sort()
        print(f"  {k}: p50 {v[len(v) // 2] * 1000:.2f} ms, p99 {v[int(len(v) * 0.99)] * 1000:.2f} ms")

if __name__ == "__main__":
    main()
