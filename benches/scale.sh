#!/usr/bin/env bash
# benches/scale.sh: rsmirror at scale (issues 24, 48): baseline, a re-run with nothing changed, a
# 1% incremental, audit against the source, audit --offline, audit --refetch=all (every resource
# fetched again) and audit --sample 1/10, at 100,000, 1,000,000 and 10,000,000 resources, each
# with wall, user and system time, peak RSS and catalog size; next to `tar -x` + `sync` of the
# same files where the source has a file per resource; then `baseline --via dump` from a
# Resource Dump of the first state in ZIP packages of each size of --dump-packages. The table
# ends with issue 48's acceptance: each step at 1,000,000 within 11x its time at 100,000 and
# under 150 MiB of peak RSS.
#
#   benches/scale.sh                       # build HEAD (release), measure, write the table
#   benches/scale.sh --rsmirror BIN        # measure a given binary
#
# Options: --n N,N (default 100000,1000000,10000000), --distinct-up-to N (sources of at most
#          N resources get a file each, default 1000000; larger ones serve one 256-byte blob
#          for every URL through nginx try_files, so a 10,000,000-resource source costs only
#          its lists: 2.7 GB), --dump-packages P,P (Resource Dumps in packages of P resources,
#          default 200000,50000; "" for none), --dumps-up-to N (sources of at most N resources
#          get the dumps, default 1000000: a dump of 1,000,000 is about 0.6 GB of packages),
#          --out FILE (default benches/.work/scale/results.md).
#
# Sources (benches/scale_bench.py gen) are kept in benches/.work/scale/src-N[-distinct] and
# reused (made again when one lacks a dump asked for); nginx (config, pid, log in
# benches/.work/scale/nginx) serves them on 127.0.0.1:18095 (BENCH_SCALE_PORT) and is stopped
# on exit. Runs as root (page cache dropped before each step). About 2 minutes for 100,000,
# 15 for 1,000,000 (most of it making the source; the dumps and their steps add to it) and
# 15 minutes for 10,000,000. Free page reporting to a VM's host is off for the run and the
# free memory touched once (scale_bench.py hold-memory); BENCH_PAGE_REPORTING=keep leaves it.
# Old runs are deleted at the end; a run started within 7 minutes of that waits out the rest.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
WORK=$HERE/.work/scale
NS=100000,1000000,10000000
DISTINCT_UP_TO=1000000
DUMP_PACKAGES=200000,50000
DUMPS_UP_TO=1000000
RSMIRROR=""
OUT=$WORK/results.md
PORT=${BENCH_SCALE_PORT:-18095}

while [ $# -gt 0 ]; do
    case "$1" in
        --rsmirror) RSMIRROR=$(realpath "$2"); shift 2 ;;
        --n) NS=$2; shift 2 ;;
        --distinct-up-to) DISTINCT_UP_TO=$2; shift 2 ;;
        --dump-packages) DUMP_PACKAGES=$2; shift 2 ;;
        --dumps-up-to) DUMPS_UP_TO=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "scale.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

mkdir -p "$WORK/nginx"
need=()
[ -x /usr/bin/time ] || need+=(time)
command -v nginx >/dev/null || need+=(nginx)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -z "$RSMIRROR" ]; then
    (cd "$ROOT" && nice -n 19 cargo build --release -q)
    RSMIRROR=$ROOT/target/release/rsmirror
fi
COMMIT=$(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- src || echo "+changes")

stop_nginx() { [ -f "$WORK/nginx/nginx.pid" ] && kill "$(cat "$WORK/nginx/nginx.pid")" 2>/dev/null || true; }
REPORTING_WAS=""
restore() {
    stop_nginx
    [ -z "$REPORTING_WAS" ] || echo "$REPORTING_WAS" > /sys/module/page_reporting/parameters/page_reporting_order
}
trap restore EXIT
# Free memory stays backed by the host for the run (a VM's free page reporting otherwise makes
# every page a step writes after the caches are dropped a fault to the host; see
# scale_bench.py hold-memory). BENCH_PAGE_REPORTING=keep leaves it.
REPORTING_WAS=$(python3 "$HERE/scale_bench.py" hold-memory 2> "$WORK/memory-note")
MEMORY_NOTE=$(cat "$WORK/memory-note")
BASE=http://127.0.0.1:$PORT
# Old runs (mirrors of up to millions of files) go to the trash now and are deleted after the
# measurements, never just before one (see scale_bench.py run). A run started soon after the
# last one's deletion waits until ext4 no longer counts those inodes as recently deleted.
RECENT_S=420
if [ -f "$WORK/deleted-at" ]; then
    since=$(( $(date +%s) - $(cat "$WORK/deleted-at") ))
    if [ "$since" -lt "$RECENT_S" ]; then
        echo "scale.sh: the last run's mirrors were deleted ${since} s ago; waiting $((RECENT_S - since)) s" \
             "more (ext4 passes over recently deleted inodes, which would slow the first steps)" >&2
        sleep $((RECENT_S - since))
    fi
fi
TRASH=$WORK/trash-$$
mkdir -p "$TRASH"
for old in "$WORK"/run-*; do [ -e "$old" ] && mv "$old" "$TRASH"/; done
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
jsons=()
for N in ${NS//,/ }; do
    flag=""; name=src-$N
    if [ "$N" -le "$DISTINCT_UP_TO" ]; then flag=--distinct; name=$name-distinct; fi
    SRC=$WORK/$name
    dumps=""
    [ "$N" -gt "$DUMPS_UP_TO" ] || dumps=$DUMP_PACKAGES
    remake=""
    if [ ! -f "$SRC/expected" ] || [ "$(cat "$SRC/.base" 2>/dev/null)" != "$BASE" ]; then remake=1; fi
    # A source made without a dump asked for now is made again (SRC/dumps: the sizes it has).
    for P in ${dumps//,/ }; do grep -qx "$P" "$SRC/dumps" 2>/dev/null || remake=1; done
    if [ -n "$remake" ]; then
        echo "scale.sh: making the source of $N resources ($flag${dumps:+, dumps in packages of $dumps}) in $SRC" >&2
        python3 "$HERE/scale_bench.py" gen --out "$SRC" --base "$BASE" --n "$N" $flag \
            ${dumps:+--dump-packages "$dumps"}
        echo "$BASE" > "$SRC/.base"
    fi
    stop_nginx; sleep 0.5
    python3 "$HERE/scale_bench.py" nginx-conf --root "$SRC" --work "$WORK/nginx" --port "$PORT" --out "$WORK/nginx/nginx.conf"
    nginx -c "$WORK/nginx/nginx.conf"
    sleep 0.5
    python3 "$HERE/scale_bench.py" run --rsmirror "$RSMIRROR" --src "$SRC" --base "$BASE" --n "$N" \
        --work "$WORK/run-$N" --out "$WORK/run-$N.json" $flag
    jsons+=("$WORK/run-$N.json")
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
python3 "$HERE/scale_bench.py" report --commit "$COMMIT" --load "$LOAD_BEFORE / $LOAD_AFTER" \
    --memory "$MEMORY_NOTE" --out "$OUT" "${jsons[@]}"
echo "scale.sh: results in $OUT; deleting old runs" >&2
rm -rf "$WORK"/trash-*
date +%s > "$WORK/deleted-at"
