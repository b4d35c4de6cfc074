#!/usr/bin/env bash
# benches/run.sh: the whole rsmirror vs resync comparison on this machine; writes
# benches/RESULTS.md. See benches/README.md. Runs as root on a fresh Debian machine with no
# standard input: builds rsmirror (release), installs nginx / curl / time from Debian when
# missing, puts resync==2.0.1 in a private virtualenv (benches/.work/venv) when it can, serves
# the synthetic source with its own nginx on 127.0.0.1 and stops it at the end (trap).
#
# Settings (environment, or the flags below):
#   BENCH_N        resource counts, comma-separated (default 10000,100000)   --n
#   BENCH_SIZE     bytes per resource (default 8192)                          --size
#   BENCH_REPS     runs per step and tool, alternating the tools (default 3)  --reps
#   BENCH_STEPS    comma-separated subset of: limits,baseline,baseline-dump,audit,
#                  audit-offline,audit-offline-sha256,incremental,audit-index (default: all)       --steps
#   BENCH_INDEX_N  entries of the Resource List Index audited (default 1000000; 0 = skip)
#   BENCH_TOOLS    rsmirror,resync (default both)                             --tools
#   BENCH_PORT     nginx port (default 18089 when free, else any free port)
#   BENCH_OUT      the results file (default benches/RESULTS.md)              --out
#   BENCH_LABEL    a title note, e.g. "smoke run" (default none)
#   BENCH_TIMEOUT  seconds before one run is killed and recorded as failed (default 3600)
#   --smoke        N=500, 1 run, a 60,000-entry index, label "SMOKE RUN" (well under a minute)
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
CRATE=$(dirname "$HERE")
WORK=$HERE/.work

while [ $# -gt 0 ]; do
  case "$1" in
    --n) BENCH_N=$2; shift 2 ;;
    --size) BENCH_SIZE=$2; shift 2 ;;
    --reps) BENCH_REPS=$2; shift 2 ;;
    --steps) BENCH_STEPS=$2; shift 2 ;;
    --tools) BENCH_TOOLS=$2; shift 2 ;;
    --out) BENCH_OUT=$2; shift 2 ;;
    --smoke)
      BENCH_N=${BENCH_N:-500}; BENCH_REPS=${BENCH_REPS:-1}; BENCH_INDEX_N=${BENCH_INDEX_N:-60000}
      BENCH_LABEL=${BENCH_LABEL:-SMOKE RUN: a check that the harness works end to end, not a measurement}
      shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
export BENCH_N=${BENCH_N:-10000,100000} BENCH_SIZE=${BENCH_SIZE:-8192} BENCH_REPS=${BENCH_REPS:-3}
export BENCH_STEPS=${BENCH_STEPS:-limits,baseline,baseline-dump,audit,audit-offline,audit-offline-sha256,incremental,audit-index}
export BENCH_INDEX_N=${BENCH_INDEX_N:-1000000} BENCH_TOOLS=${BENCH_TOOLS:-rsmirror,resync}
export BENCH_OUT=${BENCH_OUT:-$HERE/RESULTS.md} BENCH_LABEL=${BENCH_LABEL:-} BENCH_TIMEOUT=${BENCH_TIMEOUT:-3600}

say() { echo "== $*" >&2; }
die() { echo "run.sh: $*" >&2; exit 1; }
mkdir -p "$WORK"

# Long commands run in the background and are waited for, so that INT / TERM reach the trap at
# once (bash runs a trap only after the foreground command ends); the trap ends them.
CHILD=""
bg() { "$@" </dev/null & CHILD=$!; wait "$CHILD"; local rc=$?; CHILD=""; return $rc; }
NGX=$WORK/nginx
stop_nginx() {
  if [ -s "$NGX/nginx.pid" ]; then
    local pid; pid=$(cat "$NGX/nginx.pid")
    kill -QUIT "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    rm -f "$NGX/nginx.pid"
  fi
}
stop_all() {
  # (the harness, on TERM, kills the run in progress before it exits)
  [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null && wait "$CHILD" 2>/dev/null
  CHILD=""
  stop_nginx
}
trap stop_all EXIT
trap 'stop_all; exit 130' INT TERM

# -- tools from Debian -----------------------------------------------------------------------
missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v curl >/dev/null 2>&1 || missing+=(curl)
[ -x /usr/bin/time ] || missing+=(time)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if ! command -v python3 >/dev/null 2>&1; then missing+=(python3 python3-venv)
elif ! python3 -c 'import ensurepip, venv' 2>/dev/null; then missing+=(python3-venv); fi
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root"
  say "installing ${missing[*]} from Debian"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq </dev/null && apt-get install -y -qq "${missing[@]}" </dev/null >/dev/null \
    || die "apt-get install ${missing[*]} failed"
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# -- rsmirror --------------------------------------------------------------------------------
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
say "building rsmirror (release)"
bg cargo build --release --locked --manifest-path "$CRATE/Cargo.toml" || die "cargo build --release failed"
RSMIRROR=$CRATE/target/release/rsmirror

# -- resync in a private virtualenv (needs Python <= 3.11: it imports distutils) --------------
RESYNC=""
RESYNC_NOTE=""
VENV=$WORK/venv
if [[ ",$BENCH_TOOLS," == *",resync,"* ]]; then
  have=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("resync"))' 2>/dev/null)
  if [ -x "$VENV/bin/resync-sync" ] && [ "$have" = 2.0.1 ]; then
    RESYNC=$VENV/bin/resync-sync
  else
    PY=""
    for p in python3.11 python3.10 python3.9 python3; do
      if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import sys; sys.exit(0 if sys.version_info < (3, 12) else 1)'; then
        PY=$p; break
      fi
    done
    if [ -z "$PY" ]; then
      RESYNC_NOTE="resync not run: it needs Python 3.11 or older (it imports distutils), none found"
    else
      say "installing resync==2.0.1 into $VENV"
      rm -rf "$VENV"
      if bg "$PY" -m venv "$VENV" >"$WORK/venv.log" 2>&1 \
         && bg "$VENV/bin/pip" install -q resync==2.0.1 >>"$WORK/venv.log" 2>&1 \
         && "$VENV/bin/resync-sync" --help >/dev/null 2>&1; then
        RESYNC=$VENV/bin/resync-sync
      else
        RESYNC_NOTE="resync not run: pip install resync==2.0.1 failed ($(tail -1 "$WORK/venv.log"))"
      fi
    fi
  fi
  [ -n "$RESYNC_NOTE" ] && say "$RESYNC_NOTE"
else
  RESYNC_NOTE="resync not run: BENCH_TOOLS=$BENCH_TOOLS"
fi

# -- nginx on 127.0.0.1 -----------------------------------------------------------------------
# Free for a listener: connections left in TIME_WAIT by the previous run do not count (nginx
# binds with SO_REUSEADDR). The generated documents carry the port, so a stable one lets the
# next run reuse them.
port_free() {
  python3 -c 'import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()' "$1" 2>/dev/null
}
PORT=${BENCH_PORT:-18089}
if ! port_free "$PORT"; then
  [ -n "${BENCH_PORT:-}" ] && die "port $PORT is taken"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fi
mkdir -p "$NGX/tmp" "$WORK/serve" "$WORK/index/site"
ln -sfn "$WORK/empty" "$WORK/serve/current"
mkdir -p "$WORK/empty"
USER_LINE=""
[ "$(id -u)" = 0 ] && USER_LINE="user root;"   # workers must read the tree under /work as its owner
cat >"$NGX/nginx.conf" <<EOF
# Written by benches/run.sh; a static server fast enough not to limit either client.
$USER_LINE
worker_processes auto;
pid $NGX/nginx.pid;
error_log $NGX/error.log warn;
events { worker_connections 4096; }
http {
  types { application/xml xml; application/zip zip; }
  default_type application/octet-stream;
  access_log off;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  keepalive_timeout 65;
  keepalive_requests 1000000;
  client_body_temp_path $NGX/tmp;
  proxy_temp_path $NGX/tmp;
  fastcgi_temp_path $NGX/tmp;
  uwsgi_temp_path $NGX/tmp;
  scgi_temp_path $NGX/tmp;
  server {
    listen 127.0.0.1:$PORT;
    # A symlink the harness points at state A or B of the source (no open_file_cache, so a
    # switch takes effect at the next request).
    root $WORK/serve/current;
    location = /.well-known/resourcesync { default_type application/xml; }
    location /idx/ { root $WORK/index/site; }
  }
}
EOF

stop_nginx   # a leftover from an interrupted run
say "starting nginx on 127.0.0.1:$PORT"
"$NGINX" -c "$NGX/nginx.conf" -p "$NGX" -e "$NGX/error.log" </dev/null || die "nginx did not start (see $NGX/error.log)"
for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done

# -- the measurements -----------------------------------------------------------------------
say "running the harness (N=$BENCH_N, S=$BENCH_SIZE, reps=$BENCH_REPS, steps=$BENCH_STEPS)"
bg python3 "$HERE/harness.py" \
  --work "$WORK" --crate "$CRATE" --base "http://127.0.0.1:$PORT" \
  --rsmirror "$RSMIRROR" --resync "$RESYNC" --resync-note "$RESYNC_NOTE" \
  --nginx-version "$("$NGINX" -v 2>&1)"
rc=$?
[ $rc -eq 0 ] && say "wrote $BENCH_OUT"
exit $rc
