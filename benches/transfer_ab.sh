#!/usr/bin/env bash
# benches/transfer_ab.sh: a quick side-by-side of rsmirror builds on one source, for changes to
# the transfer path (issue 27): each build's `baseline` into a fresh mirror on tmpfs (so no
# file-system allocation cost is in the figures, only the client's CPU), the builds
# alternating, then each one's median wall and CPU (user + system) seconds.
#
#   benches/transfer_ab.sh [--reps R] [--mirror-dir DIR] LIST_URL BIN [BIN...]
#
# LIST_URL: a Resource List (or index) served already, e.g. by benches/transfer.sh's nginx:
#   nginx -c "$PWD/benches/.work/transfer/nginx/nginx.conf"     # after one transfer.sh run
#   benches/transfer_ab.sh http://127.0.0.1:18093/n10000/rs/resourcelist.xml old/rsmirror new/rsmirror
# Options: --reps R (default 8), --mirror-dir DIR (default /dev/shm; the mirror is removed
# after each run). The machine should be otherwise idle: the runs are CPU-bound.
set -euo pipefail
REPS=8
DIR=/dev/shm
while [ $# -gt 0 ]; do
    case $1 in
        --reps) REPS=$2; shift 2 ;;
        --mirror-dir) DIR=$2; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) break ;;
    esac
done
[ $# -ge 2 ] || { echo "transfer_ab.sh: give LIST_URL and at least one binary" >&2; exit 2; }
URL=$1; shift
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
M=$DIR/rsmirror-transfer-ab.$$
trap 'rm -rf "$M"' EXIT
OUT=$(mktemp)
for r in $(seq "$REPS"); do
    for b in "$@"; do
        rm -rf "$M"
        if ! /usr/bin/time -f "$b %e %U %S" -a -o "$OUT" "$b" baseline "$URL" --mirror "$M" -q; then
            echo "transfer_ab.sh: $b run $r failed" >&2
            exit 1
        fi
    done
done
python3 - "$OUT" "$@" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
print(f"{'build':<50} {'wall s':>8} {'CPU s':>8}  runs (wall)")
for b in sys.argv[2:]:
    mine = [r for r in rows if r[0] == b]
    wall = [float(r[1]) for r in mine]
    cpu = [float(r[2]) + float(r[3]) for r in mine]
    print(f"{b:<50} {statistics.median(wall):8.3f} {statistics.median(cpu):8.3f}  {' '.join(f'{w:.2f}' for w in wall)}")
PY
rm -f "$OUT"
