#!/usr/bin/env bash
# A real OTLP trace backend on loopback, without containers: Arize Phoenix
# (PyPI `arize-phoenix`) in a Python venv. It receives Hermes's spans over
# OTLP/HTTP (protobuf, POST /v1/traces on its HTTP port) and shows them in
# its web UI; its REST API (/v1/projects/<project>/spans) and GraphQL API
# (/graphql) answer queries about them (tests/trace_backend.rs uses the
# REST one).
#
#   scripts/trace-backend.sh [start|stop|status|run|install] [--port N] [--dir DIR]
#
#   start    install if needed, start Phoenix in the background, wait until
#            it answers, print the UI URL and the --otlp endpoint (the
#            default; a second start of a running backend only prints them)
#   stop     stop the backend started from DIR
#   status   say whether it runs (exit 0) or not (exit 3)
#   run      install if needed and run Phoenix in the foreground
#   install  only create or update the venv
#
#   --port N   HTTP port for the UI, the REST/GraphQL APIs and OTLP/HTTP
#              (default 6006, Phoenix's own). Phoenix also opens an OTLP/gRPC
#              port, which Hermes does not use: a free one is picked.
#   --dir DIR  state: pid file, log, SQLite database (default .phoenix/ at
#              the repository root). One backend per DIR.
#
# Environment: HERMES_PHOENIX_VENV (default .venv-phoenix/ at the repository
# root), PYTHON (the interpreter for the venv; default: the first of
# python3.13, python3.12, python3.11, python3 that is new enough).
#
# Exit codes: 0 done; 1 Phoenix failed to start or stop; 2 Phoenix cannot be
# installed here (no suitable Python, no venv module, no access to PyPI);
# 3 (status) not running.
set -euo pipefail

PHOENIX_VERSION=20.26.1
# arize-phoenix's own Requires-Python: >=3.11,<3.15.
PY_MIN=3.11
PY_BELOW=3.15

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${HERMES_PHOENIX_VENV:-$root/.venv-phoenix}"
dir="$root/.phoenix"
port=""
cmd=start

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "trace-backend: $*" >&2; exit 1; }
cannot_install() { echo "trace-backend: cannot install Phoenix: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
  case "$1" in
    start|stop|status|run|install) cmd="$1" ;;
    --port) [ $# -ge 2 ] || die "--port needs a number"; port="$2"; shift ;;
    --port=*) port="${1#--port=}" ;;
    --dir) [ $# -ge 2 ] || die "--dir needs a path"; dir="$2"; shift ;;
    --dir=*) dir="${1#--dir=}" ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done
if [ -n "$port" ] && ! [[ "$port" =~ ^[0-9]+$ && "$port" -ge 1 && "$port" -le 65535 ]]; then
  die "--port must be a TCP port number (1-65535), not '$port'"
fi
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
pidfile="$dir/phoenix.pid"
portfile="$dir/phoenix.port"
logfile="$dir/phoenix.log"

# The first interpreter in [PY_MIN, PY_BELOW).
find_python() {
  local candidates=(python3.13 python3.12 python3.11 python3)
  [ -n "${PYTHON:-}" ] && candidates=("$PYTHON")
  local py found=()
  for py in "${candidates[@]}"; do
    command -v "$py" >/dev/null 2>&1 || continue
    found+=("$py ($("$py" -c 'import platform; print(platform.python_version())' 2>/dev/null || echo '?'))")
    if "$py" -c "import sys; sys.exit(0 if (${PY_MIN/./, }) <= sys.version_info[:2] < (${PY_BELOW/./, }) else 1)" 2>/dev/null; then
      echo "$py"
      return 0
    fi
  done
  if [ -n "${PYTHON:-}" ] && [ ${#found[@]} -eq 0 ]; then
    cannot_install "PYTHON=$PYTHON is not a command; arize-phoenix $PHOENIX_VERSION needs Python >= $PY_MIN and < $PY_BELOW"
  fi
  if [ ${#found[@]} -eq 0 ]; then
    cannot_install "no python3 found; arize-phoenix $PHOENIX_VERSION needs Python >= $PY_MIN and < $PY_BELOW (Debian: apt-get install python3 python3-venv)"
  fi
  cannot_install "arize-phoenix $PHOENIX_VERSION needs Python >= $PY_MIN and < $PY_BELOW; found ${found[*]}. Install a suitable one, or point PYTHON at it"
}

# Creates the venv and installs Phoenix unless the pinned version is there.
install() {
  if [ -x "$venv/bin/phoenix" ] && [ "$(cat "$venv/.phoenix-version" 2>/dev/null)" = "$PHOENIX_VERSION" ]; then
    return 0
  fi
  local py
  py="$(find_python)"
  if [ ! -x "$venv/bin/python" ]; then
    echo "trace-backend: creating the venv $venv ($py)" >&2
    if ! "$py" -m venv "$venv" >&2; then
      rm -rf "$venv"
      cannot_install "'$py -m venv' failed; on Debian/Ubuntu: apt-get install python3-venv"
    fi
  fi
  echo "trace-backend: installing arize-phoenix==$PHOENIX_VERSION into $venv (first time: several minutes, ~850 MB)" >&2
  if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "arize-phoenix==$PHOENIX_VERSION" >&2; then
    cannot_install "pip could not install arize-phoenix==$PHOENIX_VERSION from PyPI (no network? see pip's message above)"
  fi
  echo "$PHOENIX_VERSION" >"$venv/.phoenix-version"
}

running_pid() {
  local pid
  pid="$(cat "$pidfile" 2>/dev/null)" || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# A free TCP port on loopback (for Phoenix's OTLP/gRPC listener).
free_port() {
  "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

healthy() {
  "$venv/bin/python" - "$1" <<'EOF' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
EOF
}

print_urls() {
  local p="$1"
  echo "Phoenix UI:    http://127.0.0.1:$p/  (traces: project 'default'; one trace: http://127.0.0.1:$p/redirects/traces/<trace_id>)"
  echo "OTLP endpoint: http://127.0.0.1:$p  (hermes plan ... --otlp http://127.0.0.1:$p; spans go to /v1/traces)"
}

# The environment Phoenix runs with: its state (SQLite) in $dir whatever
# PHOENIX_* says, no auth, nothing fetched from the internet, no telemetry,
# no agent assistant (it would offer a server-side shell).
phoenix_env() {
  export PHOENIX_WORKING_DIR="$dir"
  unset PHOENIX_SQL_DATABASE_URL PHOENIX_POSTGRES_HOST PHOENIX_HOST_ROOT_PATH PHOENIX_ENABLE_AUTH
  export PHOENIX_TELEMETRY_ENABLED=false
  export PHOENIX_ALLOW_EXTERNAL_RESOURCES=false
  export PHOENIX_DISABLE_AGENT_ASSISTANT=true
}

case "$cmd" in
  install)
    install
    echo "Phoenix $PHOENIX_VERSION installed in $venv"
    ;;
  run)
    install
    p="${port:-6006}"
    print_urls "$p"
    phoenix_env
    exec "$venv/bin/phoenix" serve --host 127.0.0.1 --port "$p" --grpc-port "$(free_port)"
    ;;
  start)
    if pid="$(running_pid)"; then
      p="$(cat "$portfile")"
      [ -z "$port" ] || [ "$port" = "$p" ] || die "already running on port $p (pid $pid, $dir); stop it first or use another --dir"
      echo "Phoenix already running (pid $pid)"
      print_urls "$p"
      exit 0
    fi
    install
    p="${port:-6006}"
    if healthy "$p"; then
      die "something already answers on port $p; choose another --port"
    fi
    phoenix_env
    echo "trace-backend: starting Phoenix on 127.0.0.1:$p (log: $logfile)" >&2
    # setsid: the backend outlives this shell and the terminal's Ctrl-C.
    setsid "$venv/bin/phoenix" serve --host 127.0.0.1 --port "$p" --grpc-port "$(free_port)" \
      </dev/null >"$logfile" 2>&1 &
    pid=$!
    echo "$pid" >"$pidfile"
    echo "$p" >"$portfile"
    # First start runs the database migrations; a loaded machine is slow.
    for _ in $(seq 1 180); do
      if healthy "$p"; then
        echo "Phoenix started (pid $pid)"
        print_urls "$p"
        exit 0
      fi
      if ! kill -0 "$pid" 2>/dev/null; then
        rm -f "$pidfile"
        tail -n 30 "$logfile" >&2 || true
        die "Phoenix exited during start-up (log above, full log in $logfile)"
      fi
      sleep 1
    done
    kill "$pid" 2>/dev/null || true
    rm -f "$pidfile"
    tail -n 30 "$logfile" >&2 || true
    die "Phoenix did not answer on port $p within 180 s (log: $logfile)"
    ;;
  stop)
    if ! pid="$(running_pid)"; then
      rm -f "$pidfile"
      echo "Phoenix is not running ($dir)"
      exit 0
    fi
    kill "$pid"
    for _ in $(seq 1 100); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
    echo "Phoenix stopped (pid $pid)"
    ;;
  status)
    if pid="$(running_pid)"; then
      echo "Phoenix running (pid $pid, state in $dir)"
      print_urls "$(cat "$portfile")"
    else
      echo "Phoenix is not running ($dir)"
      exit 3
    fi
    ;;
esac
