#!/usr/bin/env bash
# rsmirror export (tree and bagit) on a 100,000-resource mirror, side by side with cp -al,
# cp -r and bagit.py making a bag, plus the peak RSS of both formats on the 1,000,000-resource
# mirror that read.sh makes. Writes benches/.work/export-results.md.
#
#   benches/export.sh                      # build HEAD, make the 100,000 mirror once, measure
#   benches/export.sh --rsmirror PATH      # measure a given binary (no build)
#   benches/export.sh --prepare-only       # build and make the mirror(s), measure nothing
#
# Options: --n N (resources, default 100000), --reps R (default 5), --no-big (skip the
#          1,000,000-resource rows), --steps KEY,KEY (tree_hard,tree_hard_verify,tree_copy,
#          bagit_tree,bagit_py,bagit_py_hard,bagit_py1,bagit_auto,bagit_py_cp,warc_tar,big_hard,
#          big_bagit,big_warc,big_ocfl,big_resourcesync), --worktree (build the working tree
#          instead of a clean export of HEAD),
#          --ocfl-small-fs (big_ocfl writes to a new ext4 of 1 KiB blocks with inline data, in a
#          12 GB sparse image in /dev/shm, mounted for the run and removed after: about 4 GB of
#          it used instead of 43 GB of this disk; DEST is then on another file system, so the
#          export copies instead of linking — the memory measured is the same walk).
# Before the steps, `rsmirror audit --offline` runs once (untimed) on each mirror: hard links
# are placed on its word, as after a cron job's nightly audit; tree_hard_verify reads anyway.
#
# The build goes to benches/.work/target-export (its own target dir, niced) from an export of
# HEAD in benches/.work/export-src. The 100,000 mirror is benches/.work/export/mirror (gen.py
# index, reused while its meta.json matches); the 1,000,000 one is benches/.work/read/mirror
# (made by `benches/read.sh --prepare-only` when missing). Exports go to benches/.work/export-out
# and are deleted (untimed, then `sync`) between reps. bagit.py comes from .ci/venv (made with
# bagit==1.9.0 and warcio==1.8.1 when missing).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
WORK=$HERE/.work
N=${BENCH_EXPORT_N:-100000}
REPS=${BENCH_EXPORT_REPS:-5}
RSMIRROR=""
BIG=1
PREPARE_ONLY=0
WORKTREE=0
OCFL_SMALL_FS=0
STEPS=""

while [ $# -gt 0 ]; do
    case "$1" in
        --rsmirror) RSMIRROR=$(realpath "$2"); shift 2 ;;
        --n) N=$2; shift 2 ;;
        --reps) REPS=$2; shift 2 ;;
        --steps) STEPS=$2; shift 2 ;;
        --no-big) BIG=0; shift ;;
        --prepare-only) PREPARE_ONLY=1; shift ;;
        --worktree) WORKTREE=1; shift ;;
        --ocfl-small-fs) OCFL_SMALL_FS=1; shift ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "export.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

mkdir -p "$WORK"
OUT=$WORK/export                   # gen.py index output: mirror/, resync-dst/, site/
MIRROR=$OUT/mirror
BIG_MIRROR=$WORK/read/mirror

# Tools: GNU time (Debian); bagit.py in the repository's .ci/venv.
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
BAGIT=$ROOT/.ci/venv/bin/bagit.py
if [ ! -x "$BAGIT" ]; then
    python3 -m venv "$ROOT/.ci/venv"
    "$ROOT/.ci/venv/bin/pip" install -q bagit==1.9.0 warcio==1.8.1
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
        SRC=$WORK/export-src
        rm -rf "$SRC" && mkdir -p "$SRC"
        git -C "$ROOT" archive "$REV" | tar -x -C "$SRC"
    fi
    # A first build starts from read.sh's compiled dependencies when they are there.
    if [ ! -d "$WORK/target-export" ] && [ -d "$WORK/target-read" ]; then
        cp -a "$WORK/target-read" "$WORK/target-export"
    fi
    echo "export.sh: building ${COMMIT[1]} in $SRC" >&2
    CARGO_TARGET_DIR=$WORK/target-export nice -n 10 cargo build --release --locked --manifest-path "$SRC/Cargo.toml"
    RSMIRROR=$WORK/target-export/release/rsmirror
else
    GIVEN=(--given)
fi

# 2. The 100,000-resource mirror, once (gen.py index: one run, one object per resource).
python3 "$HERE/export_bench.py" prepare --out "$OUT" --n "$N" --base http://127.0.0.1:9 \
    --schema "$ROOT/schema.sql" --gen "$HERE/gen.py"
BIG_ARG=()
if [ "$BIG" = 1 ]; then
    if [ ! -e "$WORK/read/read-bench.stamp" ]; then
        "$HERE/read.sh" --prepare-only --no-restic ${GIVEN:+--rsmirror "$RSMIRROR"}
    fi
    BIG_ARG=(--big-mirror "$BIG_MIRROR")
fi
[ "$PREPARE_ONLY" = 1 ] && exit 0

if ! "$RSMIRROR" export --help >/dev/null 2>&1; then
    echo "export.sh: $RSMIRROR has no export command" >&2
    exit 1
fi

# OCFL at 1M on a file system of small blocks (see --ocfl-small-fs above).
OCFL_ARG=()
if [ "$OCFL_SMALL_FS" = 1 ]; then
    IMG=/dev/shm/rsmirror-bench-ocfl.img
    FS=$WORK/ocfl-fs
    mkdir -p "$FS"
    umount "$FS" 2>/dev/null || true
    rm -f "$IMG"
    truncate -s 12G "$IMG"
    mkfs.ext4 -q -F -b 1024 -N 16000000 -I 256 -O inline_data,^has_journal -m 0 "$IMG"
    mount -o loop "$IMG" "$FS"
    trap 'umount "$FS" 2>/dev/null; rm -f "$IMG"' EXIT
    OCFL_ARG=(--ocfl-dest "$FS")
fi

# 3. Measure, check, write the table.
python3 "$HERE/export_bench.py" run --rsmirror "$RSMIRROR" "${GIVEN[@]}" "${COMMIT[@]}" --mirror "$MIRROR" \
    "${BIG_ARG[@]}" "${OCFL_ARG[@]}" --bagit "$BAGIT" --reps "$REPS" --out "$WORK/export-results.md" \
    --out-dir "$WORK/export-out" --repo "$ROOT" ${STEPS:+--steps "$STEPS"}
