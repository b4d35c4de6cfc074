#!/usr/bin/env bash
# benches/premis.sh: `audit --premis` against the plain audit of the same mirror, in the same
# run of this script, the two alternating (issue 71): wall, user and system seconds and peak
# RSS (`/usr/bin/time`) of `audit --offline` and `audit --offline --premis FILE`, the PREMIS
# file's size, then `export premis` of the whole history once. The mirror is gen.py index's
# (N resources, one object each, built directly: no source is served), kept in
# benches/.work/premis-N for the next run.
#
#   benches/premis.sh [--n N] [--reps R] [--level fixity|sha256] [--rsmirror BIN]
#
# Without --rsmirror the working tree is built (release) in benches/.work/target-premis.
# The target of the issue: at 1,000,000, `audit --premis` under 150 MB peak RSS and within
# 1.3x the plain audit's time.
set -euo pipefail
N=1000000
REPS=2
LEVEL=fixity
RSMIRROR=
while [ $# -gt 0 ]; do
    case $1 in
        --n) N=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --level) LEVEL=$2; shift 2 ;;
        --rsmirror) RSMIRROR=$2; shift 2 ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "premis.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
WORK=${RSMIRROR_BENCH_WORK:-$HERE/.work}
OUT=$WORK/premis-$N
mkdir -p "$OUT"
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }

if [ -z "$RSMIRROR" ]; then
    CARGO_TARGET_DIR=$WORK/target-premis nice -n 10 cargo build --release --locked --manifest-path "$ROOT/Cargo.toml" >&2
    RSMIRROR=$WORK/target-premis/release/rsmirror
fi
if [ ! -e "$OUT/mirror/catalog.sqlite" ]; then
    echo "premis.sh: making the mirror of $N resources in $OUT" >&2
    python3 "$HERE/gen.py" index --out "$OUT" --base http://127.0.0.1:9 --n "$N" --schema "$ROOT/schema.sql" >&2
fi
MIRROR=$OUT/mirror

# One measured command: "exit wall user sys rss_kib".
measure() {
    local t
    t=$(mktemp)
    set +e
    /usr/bin/time -f "%x %e %U %S %M" -o "$t" "$@" >/dev/null 2>"$OUT/last.stderr"
    set -e
    tail -1 "$t"
    rm -f "$t"
}

echo "premis.sh: $(date -u +%FT%TZ), $(git -C "$ROOT" rev-parse --short HEAD), N=$N, level $LEVEL, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-28s %4s %9s %8s %8s %9s %10s\n' step exit "wall s" "user s" "sys s" "RSS MiB" "PREMIS MB"
for r in $(seq "$REPS"); do
    for step in plain premis; do
        args=(audit --offline --level "$LEVEL" --mirror "$MIRROR" -q)
        rm -f "$OUT/audit.premis.xml"
        [ "$step" = premis ] && args+=(--premis "$OUT/audit.premis.xml")
        sync
        echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
        read -r code wall user sys rss < <(measure "$RSMIRROR" "${args[@]}")
        size=-
        [ -e "$OUT/audit.premis.xml" ] && size=$(echo "$(stat -c %s "$OUT/audit.premis.xml") / 1000000" | bc -l)
        printf '%-28s %4s %9.2f %8.2f %8.2f %9.1f %10s\n' "audit $step (rep $r)" "$code" "$wall" "$user" "$sys" "$(echo "$rss / 1024" | bc -l)" "$(printf '%.1f' "$size" 2>/dev/null || echo -)"
    done
done
rm -rf "$OUT/export"
read -r code wall user sys rss < <(measure "$RSMIRROR" export premis "$OUT/export" --mirror "$MIRROR" -q)
size=$(echo "$(stat -c %s "$OUT/export/premis.xml" 2>/dev/null || echo 0) / 1000000" | bc -l)
printf '%-28s %4s %9.2f %8.2f %8.2f %9.1f %10.1f\n' "export premis" "$code" "$wall" "$user" "$sys" "$(echo "$rss / 1024" | bc -l)" "$size"
echo "premis.sh: load after $(cut -d' ' -f1-3 /proc/loadavg)"
