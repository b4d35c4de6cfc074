#!/usr/bin/env python3
"""Generate an SCP site with one large gzip snapshot, for measuring `rsmirror baseline` on it.

    python3 benches/scp_snapshot.py --out DIR --base http://127.0.0.1:PORT [--bytes 1000000000]

Writes DIR/sitemap.xml (the scp: extension, one snapshot of section `all`) and
DIR/all-snapshot.scp.gz: about --bytes of decompressed JSON Lines (pages of ~2 KB of varied
text, so gzip compresses it about 3:1, well inside SCP's 100:1 ratio limit), with a checksum by
the reference implementation's rule (scp-notes §2.1), so the collection verifies. Stdlib only;
deterministic for given arguments. Serve DIR on BASE (e.g. `python3 -m http.server`), then:

    /usr/bin/time -v target/release/rsmirror baseline BASE/sitemap.xml --mirror M --json
"""

import argparse
import gzip
import hashlib
import json
import os
import random


def words(rng, n):
    syll = ["ka", "lo", "mi", "ren", "tus", "vi", "an", "or", "el", "qu", "sta", "ber", "ni", "po", "dex"]
    return [
        "".join(rng.choice(syll) for _ in range(rng.randint(1, 4)))
        for _ in range(n)
    ]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--base", required=True)
    p.add_argument("--bytes", type=int, default=1_000_000_000)
    p.add_argument("--level", type=int, default=6, help="gzip level")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = random.Random(6)
    vocab = words(rng, 5000)
    paragraphs = [
        " ".join(rng.choice(vocab) for _ in range(rng.randint(40, 90))).capitalize() + "."
        for _ in range(4000)
    ]
    generated = "2026-01-01T00:00:00Z"
    head = {"id": "all-snapshot-bench", "section": "all", "type": "snapshot", "generated": generated}
    without = json.dumps({"collection": {**head, "version": "0.1"}}, separators=(",", ":"))
    tmp = os.path.join(a.out, "pages.tmp")
    h = hashlib.sha256((without + "\n").encode())
    size = len(without) + 1
    n = 0
    with open(tmp, "wb") as f:
        while size < a.bytes:
            blocks = [{"type": "heading", "level": 1, "text": f"Page {n}"}]
            for _ in range(rng.randint(3, 6)):
                blocks.append({"type": "text", "text": paragraphs[rng.randrange(len(paragraphs))]})
            page = {
                "url": f"{a.base}/pages/{n}",
                "title": f"Page {n}: {rng.choice(vocab)} {rng.choice(vocab)}",
                "description": paragraphs[rng.randrange(len(paragraphs))][:150],
                "modified": f"2025-{1 + n % 12:02d}-{1 + n % 28:02d}T{n % 24:02d}:00:00Z",
                "language": "en",
                "content": blocks,
            }
            line = json.dumps(page, separators=(",", ":")).encode()
            if n:
                line = b"\n" + line
            f.write(line)
            h.update(line)
            size += len(line)
            n += 1
    line1 = json.dumps(
        {"collection": {**head, "checksum": "sha256:" + h.hexdigest(), "version": "0.1"}},
        separators=(",", ":"),
    )
    gz_path = os.path.join(a.out, "all-snapshot.scp.gz")
    with gzip.open(gz_path, "wb", compresslevel=a.level) as g, open(tmp, "rb") as f:
        g.write(line1.encode() + b"\n")
        while True:
            chunk = f.read(1 << 20)
            if not chunk:
                break
            g.write(chunk)
    os.remove(tmp)
    compressed = os.path.getsize(gz_path)
    with open(os.path.join(a.out, "sitemap.xml"), "w") as s:
        s.write(
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"\n'
            '        xmlns:scp="https://scp-protocol.org/schemas/sitemap/1.0">\n'
            "  <scp:version>0.1</scp:version>\n"
            "  <scp:compression>gzip</scp:compression>\n"
            f'  <scp:section name="all" updateFreq="daily" pages="{n}"/>\n'
            f'  <scp:collection section="all" type="snapshot" url="{a.base}/all-snapshot.scp.gz"'
            f' generated="{generated}" expires="2027-01-01T00:00:00Z" pages="{n}" size="{compressed}"/>\n'
            "</urlset>\n"
        )
    print(json.dumps({"pages": n, "decompressed_bytes": size + len(line1) - len(without),
                      "compressed_bytes": compressed}))


if __name__ == "__main__":
    main()
