#!/usr/bin/env bash
# The read-only commands (ls, cat, log, diff, status) on a 1,000,000-resource mirror, side by
# side with the sqlite3 CLI doing the same query (and restic, when it installs and its backup
# of the same 1,000,000 files takes under 10 minutes). Writes benches/.work/read-results.md.
#
#   benches/read.sh                      # build HEAD, make the mirror once, measure
#   benches/read.sh --rsmirror PATH      # measure a given binary (no build)
#   benches/read.sh --prepare-only       # build and make the mirror, measure nothing
#
# Options: --n N (resources, default 1000000), --reps R (default 5), --no-restic,
#          --steps KEY,KEY (ls,ls_l,ls_json,ls_first,ls_at1,ls_prefix,cat_upd,cat_same,cat_at1,
#          log_url,log,status,status_json,diff12,diff1,restic_ls,restic_dump), --worktree (build
#          the working tree of the repository instead of a clean export of HEAD).
#
# The build goes to benches/.work/target-read (its own target dir, niced) from an export of HEAD
# in benches/.work/read-src, so edits in progress in the working tree neither break it nor are
# measured. Everything made is under benches/.work/ (gitignored); the mirror (about 5 GB with
# 1,000,000 objects, the resync copy's hard links and a restic repository) is kept and reused.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
WORK=$HERE/.work
N=${BENCH_READ_N:-1000000}
REPS=${BENCH_READ_REPS:-5}
RSMIRROR=""
RESTIC=1
PREPARE_ONLY=0
WORKTREE=0
STEPS=""

while [ $# -gt 0 ]; do
    case "$1" in
        --rsmirror) RSMIRROR=$(realpath "$2"); shift 2 ;;
        --n) N=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --steps) STEPS=$2; shift 2 ;;
        --no-restic) RESTIC=0; shift ;;
        --prepare-only) PREPARE_ONLY=1; shift ;;
        --worktree) WORKTREE=1; shift ;;
        -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "read.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

mkdir -p "$WORK"
OUT=$WORK/read                     # gen.py index output: mirror/, resync-dst/, site/
MIRROR=$OUT/mirror

# Tools: GNU time and the sqlite3 CLI (Debian), restic if asked for and installable.
need=()
[ -x /usr/bin/time ] || need+=(time)
command -v sqlite3 >/dev/null || need+=(sqlite3)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ "$RESTIC" = 1 ] && ! command -v restic >/dev/null; then
    { apt-get update -qq && apt-get install -y -qq restic >/dev/null; } || { echo "read.sh: restic not installable; skipped" >&2; RESTIC=0; }
fi

# 1. Build.
GIVEN=()
COMMIT=()
if [ -z "$RSMIRROR" ]; then
    if [ "$WORKTREE" = 1 ]; then
        SRC=$ROOT
        COMMIT=(--commit "$(git -C "$ROOT" rev-parse --short HEAD) + working tree")
    else
        REV=$(git -C "$ROOT" rev-parse HEAD)
        COMMIT=(--commit "${REV:0:7}")
        SRC=$WORK/read-src
        rm -rf "$SRC" && mkdir -p "$SRC"
        git -C "$ROOT" archive "$REV" | tar -x -C "$SRC"
    fi
    echo "read.sh: building ${COMMIT[1]} in $SRC" >&2
    CARGO_TARGET_DIR=$WORK/target-read nice -n 10 cargo build --release --locked --manifest-path "$SRC/Cargo.toml"
    RSMIRROR=$WORK/target-read/release/rsmirror
else
    GIVEN=(--given)
fi

# 2. The mirror, once (gen.py index, then run 2: 1% updated, 1,000 deleted).
python3 "$HERE/read_bench.py" prepare --out "$OUT" --n "$N" --base http://127.0.0.1:9 \
    --schema "$ROOT/schema.sql" --gen "$HERE/gen.py"

# Optional: a restic repository of the resync copy (the same 1,000,000 files), 10 minutes at most.
RESTIC_ARG=()
if [ "$RESTIC" = 1 ]; then
    if timeout 600 python3 "$HERE/read_bench.py" restic --out "$OUT" --n "$N"; then
        RESTIC_ARG=(--restic)
    else
        echo "read.sh: the restic backup failed or took over 10 minutes; restic skipped" >&2
        rm -rf "$OUT/restic-repo" "$OUT/restic.stamp"
    fi
fi
[ "$PREPARE_ONLY" = 1 ] && exit 0

if ! "$RSMIRROR" ls --help >/dev/null 2>&1; then
    echo "read.sh: $RSMIRROR has no ls command yet; measuring the references only" >&2
fi

# 3. and 4. Measure, write the table.
python3 "$HERE/read_bench.py" run --rsmirror "$RSMIRROR" "${GIVEN[@]}" "${COMMIT[@]}" --mirror "$MIRROR" --reps "$REPS" \
    --out "$WORK/read-results.md" --out-dir "$WORK/read-out" --repo "$ROOT" "${RESTIC_ARG[@]}" \
    ${STEPS:+--steps "$STEPS"}
