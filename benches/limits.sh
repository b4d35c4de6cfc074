#!/usr/bin/env bash
# benches/limits.sh: where a baseline's time goes next to the limits (issue 24's "within 1.5x
# of tar -x + sync"). On the 100,000-resource source of benches/scale.sh (a file per resource,
# 256 bytes, served by nginx on 127.0.0.1), alternating, page cache dropped before each step
# and the source's files read back in:
#
#   tar -x + sync          the same files out of a tar into an empty folder (the file system)
#   curl /dev/null         `curl --parallel --parallel-max 8` of every resource into /dev/null
#                          (the HTTP limit: eight connections, as `baseline --jobs 8`)
#   curl files + sync      the same, each into its own file under a fresh folder, then `sync`
#                          (what any HTTP mirroring tool must at least do)
#   baseline (ext4)        `rsmirror baseline` into a fresh mirror beside the others
#   baseline (tmpfs)       the same into a fresh mirror on /dev/shm (no disk file system cost)
#
#   benches/limits.sh [--rsmirror BIN] [--n 100000] [--reps 3] [--out FILE]
#
# Needs the source benches/scale.sh made (benches/.work/scale/src-N-distinct; made here if
# missing). Nothing is deleted between timed steps (on ext4 files deleted in the last minutes
# slow every creation); the runs go at the end. Runs as root (drops the page cache). Free
# page reporting is off for the run, as in scale.sh (BENCH_PAGE_REPORTING=keep leaves it).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
WORK=$HERE/.work/limits
N=100000
REPS=3
RSMIRROR=""
OUT=$WORK/results.md
PORT=${BENCH_SCALE_PORT:-18095}

while [ $# -gt 0 ]; do
    case "$1" in
        --rsmirror) RSMIRROR=$(realpath "$2"); shift 2 ;;
        --n) N=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "limits.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

for tool in nginx curl /usr/bin/time tar; do
    command -v "$tool" >/dev/null || { echo "limits.sh: $tool is needed" >&2; exit 2; }
done
if [ -z "$RSMIRROR" ]; then
    (cd "$ROOT" && nice -n 19 cargo build --release -q)
    RSMIRROR=$ROOT/target/release/rsmirror
fi
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- src || echo "+changes")
BASE=http://127.0.0.1:$PORT
SRC=$HERE/.work/scale/src-$N-distinct
if [ ! -f "$SRC/expected" ] || [ "$(cat "$SRC/.base" 2>/dev/null)" != "$BASE" ]; then
    python3 "$HERE/scale_bench.py" gen --out "$SRC" --base "$BASE" --n "$N" --distinct
    echo "$BASE" > "$SRC/.base"
fi
ln -sfn A "$SRC/current"
[ -f "$SRC/distinct.tar" ] || tar -cf "$SRC/distinct.tar" -C "$SRC" distinct

mkdir -p "$WORK/nginx"
TRASH=$WORK/trash-$$
mkdir -p "$TRASH"
for old in "$WORK"/run-*; do [ -e "$old" ] && mv "$old" "$TRASH"/; done
RUN=$WORK/run-$$
SHM=/dev/shm/rsmirror-limits-$$
mkdir -p "$RUN" "$SHM"
python3 "$HERE/scale_bench.py" nginx-conf --root "$SRC" --work "$WORK/nginx" --port "$PORT" \
    --out "$WORK/nginx/nginx.conf"
stop_nginx() { [ -f "$WORK/nginx/nginx.pid" ] && kill "$(cat "$WORK/nginx/nginx.pid")" 2>/dev/null || true; }
REPORTING_WAS=""
restore() {
    stop_nginx
    rm -rf "$SHM"
    [ -z "$REPORTING_WAS" ] || echo "$REPORTING_WAS" > /sys/module/page_reporting/parameters/page_reporting_order
}
trap restore EXIT
# As in scale.sh: free memory kept backed by the host (BENCH_PAGE_REPORTING=keep leaves it).
REPORTING_WAS=$(python3 "$HERE/scale_bench.py" hold-memory 2> "$RUN/memory-note")
MEMORY_NOTE=$(cat "$RUN/memory-note")
nginx -c "$WORK/nginx/nginx.conf"
sleep 0.5

# Every resource URL, once into /dev/null and once into a file of its own.
python3 - "$BASE" "$N" "$RUN" <<'EOF'
import sys
base, n, run = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(f"{run}/null.curl", "w") as null, open(f"{run}/files.curl", "w") as files:
    for i in range(n):
        p = f"r/{i // 1000}/{i}"
        null.write(f'url = "{base}/{p}"\noutput = "/dev/null"\n')
        files.write(f'url = "{base}/{p}"\noutput = "{p}"\n')
EOF

fresh() {
    sync
    echo 3 > /proc/sys/vm/drop_caches
    # The source is another machine in real life: its files are read in first.
    find -L "$SRC/current/" -type f -print0 | xargs -0 cat > /dev/null
    cat "$SRC/distinct.tar" > /dev/null
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
: > "$RUN/times.tsv"
step() {  # name rep command...
    local name=$1 rep=$2; shift 2
    fresh
    /usr/bin/time -o "$RUN/time" -f "%e %U %S %M" "$@" > "$RUN/$name-$rep.log" 2>&1 || {
        echo "limits.sh: $name (run $rep) failed: $(tail -3 "$RUN/$name-$rep.log")" >&2; exit 1; }
    printf '%s\t%s\t%s\n' "$name" "$rep" "$(tail -1 "$RUN/time")" >> "$RUN/times.tsv"
    echo "  $name run $rep: $(tail -1 "$RUN/time")" >&2
}
for rep in $(seq 1 "$REPS"); do
    steps=(tar curl-null curl-files rs-ext4 rs-tmpfs)
    # Odd runs in this order, even runs reversed: no step always follows the same one.
    [ $((rep % 2)) -eq 0 ] && steps=(rs-tmpfs rs-ext4 curl-files curl-null tar)
    for s in "${steps[@]}"; do
        case $s in
            tar) mkdir "$RUN/untar-$rep"
                 step tar "$rep" sh -c "tar -xf '$SRC/distinct.tar' -C '$RUN/untar-$rep' && sync" ;;
            curl-null) step curl-null "$rep" curl -s --fail --parallel --parallel-max 8 -K "$RUN/null.curl" ;;
            curl-files) mkdir "$RUN/curl-$rep"
                 step curl-files "$rep" sh -c "cd '$RUN/curl-$rep' && curl -s --fail --create-dirs --parallel --parallel-max 8 -K '$RUN/files.curl' && sync" ;;
            rs-ext4) step rs-ext4 "$rep" "$RSMIRROR" baseline "$BASE/" --mirror "$RUN/mirror-$rep" -q ;;
            rs-tmpfs) step rs-tmpfs "$rep" "$RSMIRROR" baseline "$BASE/" --mirror "$SHM/mirror-$rep" -q ;;
        esac
    done
done
# Every mirror and every curl tree holds exactly the N resources.
for rep in $(seq 1 "$REPS"); do
    for m in "$RUN/mirror-$rep" "$SHM/mirror-$rep"; do
        "$RSMIRROR" audit --offline --mirror "$m" -q || { echo "limits.sh: $m fails its audit" >&2; exit 1; }
    done
    got=$(find "$RUN/curl-$rep" -type f | wc -l)
    [ "$got" -eq "$N" ] || { echo "limits.sh: curl wrote $got files, not $N" >&2; exit 1; }
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$RUN/times.tsv" "$N" "$COMMIT" "$LOAD_BEFORE / $LOAD_AFTER" "$OUT" "$MEMORY_NOTE" <<'EOF'
import datetime as dt, statistics, sys
tsv, n, commit, load, out, memory = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
runs = {}
for line in open(tsv):
    name, rep, t = line.rstrip("\n").split("\t")
    wall, user, sys_, rss = t.split()
    runs.setdefault(name, []).append((float(wall), float(user), float(sys_), int(rss)))
what = {
    "tar": "`tar -x` + `sync` of the same files",
    "curl-null": "`curl --parallel --parallel-max 8` into /dev/null",
    "curl-files": "the same into a file per resource, then `sync`",
    "rs-ext4": "`rsmirror baseline`, mirror on the same ext4",
    "rs-tmpfs": "`rsmirror baseline`, mirror on tmpfs (/dev/shm)",
}
med = lambda name, k: statistics.median(r[k] for r in runs[name])
tar = med("tar", 0)
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
L = [f"## Baseline limits (issue 24): {n:,} resources of 256 bytes, "
     f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC, at {commit}", "",
     f"`benches/limits.sh`: machine {cpu}, {len(runs['tar'])} runs of each step, alternating; "
     f"load average before / after {load}; {memory}. Medians; CPU s = user + system of the command "
     "(nginx's not counted).", "",
     "| step | wall s | user s | system s | peak RSS MiB | × tar | runs (wall s) |",
     "|---|---:|---:|---:|---:|---:|---|"]
for name in what:
    L.append(f"| {what[name]} | {med(name, 0):.2f} | {med(name, 1):.2f} | {med(name, 2):.2f} | "
             f"{med(name, 3) / 1024:.0f} | {med(name, 0) / tar:.2f} | "
             + " ".join(f"{r[0]:.2f}" for r in runs[name]) + " |")
open(out, "w").write("\n".join(L) + "\n")
print("\n".join(L))
EOF
echo "limits.sh: results in $OUT; deleting the runs" >&2
rm -rf "$TRASH" "$RUN"
