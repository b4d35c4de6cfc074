#!/bin/bash
# SCP baseline of one large snapshot, two rsmirror binaries side by side (issue 19: the page
# JSON inside the catalog, schema 2, against pages as objects, schema 3).
#
#   sudo bash benches/scp_snapshot.sh OLD_BINARY NEW_BINARY [BYTES] [ROUNDS]
#
# Generates the snapshot with benches/scp_snapshot.py (BYTES of decompressed pages, default
# 1 GB), serves it with python3 -m http.server on 127.0.0.1:18777, and runs
# `rsmirror baseline http://127.0.0.1:18777/sitemap.xml` ROUNDS times (default 3) per binary,
# the binaries alternating. Each run gets a freshly made ext4 file system (a 20 GB sparse image
# on a loop device; root needed), so that no run meets the inodes another one freed (ext4
# searches past recently freed inodes, which made runs after a removal of 400,000 files several
# times slower), with the page cache dropped before it. Prints, per run: wall, user and system
# CPU seconds, peak RSS, the catalog's size and the objects' bytes.
#
# With REREAD=1, each run is followed by a second baseline of the same snapshot on the same
# mirror, its file touched first so that the conditional GET is answered in full: every page is
# then looked up and found unchanged, and the pages the snapshot lacks are looked for (the
# worst case for the per-page lookups of the engine's whole-collection apply, issue 41).
set -euo pipefail
OLD=${1:?old binary}
NEW=${2:?new binary}
BYTES=${3:-1000000000}
ROUNDS=${4:-3}
WORK=$(mktemp -d /var/tmp/rsmirror-scp-bench.XXXXXX)
HERE=$(cd "$(dirname "$0")" && pwd)
python3 "$HERE/scp_snapshot.py" --out "$WORK/site" --base http://127.0.0.1:18777 --bytes "$BYTES"
python3 -m http.server 18777 --bind 127.0.0.1 --directory "$WORK/site" > "$WORK/server.log" 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null || true; umount "$WORK/fs" 2>/dev/null || true; rm -rf "$WORK"' EXIT
sleep 1
truncate -s 20G "$WORK/fs.img"
mkdir -p "$WORK/fs"
for round in $(seq "$ROUNDS"); do
  for which in old new; do
    bin=$OLD; [ "$which" = new ] && bin=$NEW
    mkfs.ext4 -q -F "$WORK/fs.img"
    mount -o loop "$WORK/fs.img" "$WORK/fs"
    sync; echo 3 > /proc/sys/vm/drop_caches
    /usr/bin/time -v "$bin" baseline http://127.0.0.1:18777/sitemap.xml --mirror "$WORK/fs/m" -q 2> "$WORK/time.txt" || echo "exit $?"
    t() { grep "$1" "$WORK/time.txt" | awk '{print $NF}'; }
    echo "round $round $which: $(t Elapsed) wall, $(t 'User time') user, $(t 'System time') sys, $(t 'Maximum resident') KB RSS, catalog $(stat -c %s "$WORK/fs/m/catalog.sqlite") B, objects $(du -sb "$WORK/fs/m/objects" | cut -f1) B"
    if [ "${REREAD:-0}" = 1 ]; then
      touch "$WORK/site/all-snapshot.scp.gz"
      sync; echo 3 > /proc/sys/vm/drop_caches
      /usr/bin/time -v "$bin" baseline http://127.0.0.1:18777/sitemap.xml --mirror "$WORK/fs/m" -q 2> "$WORK/time.txt" || echo "exit $?"
      echo "round $round $which re-read: $(t Elapsed) wall, $(t 'User time') user, $(t 'System time') sys, $(t 'Maximum resident') KB RSS, catalog $(stat -c %s "$WORK/fs/m/catalog.sqlite") B"
    fi
    umount "$WORK/fs"
  done
done
