#!/usr/bin/env bash
# benches/catalog_cost.sh: what checking the catalog before a write and copying it after cost
# (issue 43), at 1,000,000 and 10,000,000 resources. The catalogs are built directly by
# `benches/gen.py index --catalog-only` (rows shaped like a baseline's, no objects) and kept in
# benches/.work/catalog/N; each step is the release binary, timed with /usr/bin/time:
#
#   sealed      a writer with nothing to do (`source remove` of an unknown URL, exit 2) on a
#               catalog as the last run left it: the check is a stat; --catalog-copies 0
#   copy        the same with --catalog-copies 1: the checkpoint, the zstd copy and its SHA-256
#   touched     the file's time changed (`touch`), bytes the same: the SHA-256 against the seal
#   changed     the file not the one sealed (its SHA-256 differs, as after an edit with sqlite3):
#               SHA-256, then PRAGMA integrity_check in full, found sound
#   died        the seal left open, as by a writer that died: the row counts and quick_check
#   check       `rsmirror catalog check`: integrity_check and every copy's SHA-256
#
#   benches/catalog_cost.sh [--n 1000000,10000000] [--rsmirror BIN] [--out FILE]
#
# The page cache is dropped before each step when run as root (echo 3 > drop_caches), so
# every full read is a cold one; CACHE=warm leaves it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
WORK=$HERE/.work/catalog
NS=1000000,10000000
RSMIRROR=""
OUT=$WORK/results.md

while [ $# -gt 0 ]; do
    case "$1" in
        --n) NS=$2; shift 2 ;;
        --rsmirror) RSMIRROR=$(realpath "$2"); shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "catalog_cost.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

if [ -z "$RSMIRROR" ]; then
    (cd "$ROOT" && cargo build --release --locked -q)
    RSMIRROR=$ROOT/target/release/rsmirror
fi
mkdir -p "$WORK"

drop() {
    if [ "${CACHE:-cold}" = cold ] && [ "$(id -u)" = 0 ]; then
        sync
        echo 3 > /proc/sys/vm/drop_caches
    fi
}

# step NAME N MIRROR EXPECTED-EXIT ARGS...: one timed run, a table row.
step() {
    local name=$1 n=$2 m=$3 want=$4
    shift 4
    drop
    local t; t=$(mktemp)
    set +e
    /usr/bin/time -f '%e %U %S %M' -o "$t" "$RSMIRROR" "$@" --mirror "$m" >/dev/null 2>"$WORK/last-stderr"
    local rc=$?
    set -e
    read -r wall user sys rss < <(tail -1 "$t")
    rm -f "$t"
    if [ "$rc" != "$want" ]; then
        echo "catalog_cost.sh: $name at $n exited $rc, expected $want:" >&2
        cat "$WORK/last-stderr" >&2
        exit 1
    fi
    local db; db=$(stat -c %s "$m/catalog.sqlite")
    local copy; copy=$( (find "$m/catalog-copies" -name '*.zst' -printf '%s\n' 2>/dev/null || true) | sort -n | tail -1)
    printf '| %s | %s | %s | %s | %s | %s | %d | %s | %s |\n' \
        "$(printf "%'d" "$n")" "$name" "$rc" "$wall" "$user" "$sys" "$((rss / 1024))" \
        "$((db / 1000000))" "$([ -n "$copy" ] && echo $((copy / 1000000)) || echo -)" | tee -a "$OUT"
}

{
    echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB; load before: $(cut -d' ' -f1-3 /proc/loadavg); cache: ${CACHE:-cold}; commit $(cd "$ROOT" && git rev-parse --short HEAD)"
    echo
    echo "| N | step | exit | wall s | user s | system s | peak RSS MiB | catalog MB | copy MB |"
    echo "|---|---|---|---|---|---|---|---|---|"
} | tee "$OUT"

for n in ${NS//,/ }; do
    src=$WORK/$n
    if [ ! -f "$src/mirror/catalog.sqlite" ]; then
        python3 "$HERE/gen.py" index --out "$src" --base http://127.0.0.1:1 --n "$n" \
            --schema "$ROOT/schema.sql" --catalog-only >&2
    fi
    m=$WORK/m-$n
    rm -rf "$m"
    cp -a "$src/mirror" "$m"
    # The first writer of a mirror without a seal reads it whole (integrity_check) and seals it.
    step "first (no seal)" "$n" "$m" 2 source remove http://unknown.invalid/ --catalog-copies 0
    step sealed "$n" "$m" 2 source remove http://unknown.invalid/ --catalog-copies 0
    step copy "$n" "$m" 2 source remove http://unknown.invalid/ --catalog-copies 1
    touch "$m/catalog.sqlite"
    step touched "$n" "$m" 2 source remove http://unknown.invalid/ --catalog-copies 0
    # A seal whose SHA-256 is not the file's (as after an edit with sqlite3): the file is
    # hashed, then read whole by integrity_check, found sound, and the writer goes on.
    python3 - "$m/catalog.seal" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["sha256"] = "0" * 64
s["bytes"] = 0
json.dump(s, open(sys.argv[1], "w"))
EOF
    step changed "$n" "$m" 2 source remove http://unknown.invalid/ --catalog-copies 0
    python3 - "$m/catalog.seal" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
s["state"] = "open"
json.dump(s, open(sys.argv[1], "w"))
EOF
    step died "$n" "$m" 2 source remove http://unknown.invalid/ --catalog-copies 0
    step check "$n" "$m" 0 catalog check
    rm -rf "$m"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"
