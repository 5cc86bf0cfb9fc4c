# shellcheck shell=bash
# Helpers shared by scripts/try-it, scripts/test and scripts/bench. Source it;
# it is not meant to be run. Everything here is plain bash and Debian tools.
#
#   ensure_tools redis-server=redis-server redis-cli=redis-tools
#       apt-get installs the packages whose command is missing.
#   redis_start N
#       starts N redis-server processes on free 127.0.0.1 ports, each answering
#       PING; sets REDIS_PORTS, REDIS_PIDS, REDIS_URLS (arrays) and REDIS_DIR.
#   redis_kill I
#       kills server I (0-based) and waits for it.
#   redis_cleanup
#       kills every server still running and removes REDIS_DIR. Install it
#       with `trap redis_cleanup EXIT`.

REDIS_DIR=""
REDIS_PORTS=()
REDIS_PIDS=()
REDIS_URLS=()

# A line about what is happening, on stderr so that it never mixes with
# output a caller may capture.
say() {
    printf '==> %s\n' "$*" >&2
}

die() {
    printf '%s: error: %s\n' "${0##*/}" "$*" >&2
    exit 1
}

# ensure_tools CMD=PACKAGE...: installs, with one apt-get call, the Debian
# package of every CMD that is not on PATH. Uses sudo only when not root.
ensure_tools() {
    local pair missing=()
    for pair in "$@"; do
        command -v "${pair%%=*}" >/dev/null 2>&1 || missing+=("${pair#*=}")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 ||
        die "missing ${missing[*]} and no apt-get here: install them with your package manager"
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 ||
            die "missing ${missing[*]}: run as root or install sudo"
        sudo=(sudo)
    fi
    say "installing ${missing[*]} (apt-get)"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq "${missing[@]}" </dev/null
    for pair in "$@"; do
        command -v "${pair%%=*}" >/dev/null 2>&1 ||
            die "${pair%%=*} is still missing after installing ${pair#*=}"
    done
}

# A TCP port that is free on 127.0.0.1 right now and not used by one of our
# servers. A race with another process is caught by redis_start, which
# retries with a new port when a server cannot bind.
free_port() {
    local port
    while :; do
        if command -v python3 >/dev/null 2>&1; then
            port=$(python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
        else
            port=$((20000 + RANDOM % 40000))
            # Something answers there: taken.
            if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                continue
            fi
        fi
        case " ${REDIS_PORTS[*]} " in
        *" $port "*) continue ;;
        esac
        printf '%s\n' "$port"
        return 0
    done
}

# redis_start N: N independent in-memory masters, each ready for commands.
redis_start() {
    local n=$1 i attempt port pid log tries
    [ -n "$REDIS_DIR" ] || REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/redlock-redis.XXXXXX")
    for ((i = 0; i < n; i++)); do
        for attempt in 1 2 3 4 5; do
            port=$(free_port)
            log="$REDIS_DIR/redis-$port.log"
            redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
                --daemonize no --dir "$REDIS_DIR" --logfile "$log" \
                >"$REDIS_DIR/redis-$port.stdio" 2>&1 </dev/null &
            pid=$!
            # Up to 10 seconds for PING to answer PONG.
            tries=0
            while [ "$tries" -lt 100 ] && kill -0 "$pid" 2>/dev/null &&
                [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" != PONG ]; do
                sleep 0.1
                tries=$((tries + 1))
            done
            if kill -0 "$pid" 2>/dev/null && [ "$tries" -lt 100 ]; then
                break
            fi
            # It exited (port taken by a racing process?) or never answered.
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
            printf 'redis-server on port %s did not start (attempt %s):\n' "$port" "$attempt" >&2
            cat "$REDIS_DIR/redis-$port.stdio" "$log" 2>/dev/null | tail -n 20 >&2 || true
            [ "$attempt" -lt 5 ] || die "could not start redis-server; logs in $REDIS_DIR"
        done
        REDIS_PORTS+=("$port")
        REDIS_PIDS+=("$pid")
        REDIS_URLS+=("redis://127.0.0.1:$port")
    done
}

# redis_kill I: stops server I (0-based) as a crash would, and waits for it.
redis_kill() {
    local pid=${REDIS_PIDS[$1]}
    [ -n "$pid" ] || return 0
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    REDIS_PIDS[$1]=""
}

redis_cleanup() {
    local i
    for i in "${!REDIS_PIDS[@]}"; do
        [ -n "${REDIS_PIDS[$i]}" ] && kill "${REDIS_PIDS[$i]}" 2>/dev/null
    done
    for i in "${!REDIS_PIDS[@]}"; do
        [ -n "${REDIS_PIDS[$i]}" ] && wait "${REDIS_PIDS[$i]}" 2>/dev/null
        REDIS_PIDS[i]=""
    done
    if [ -n "$REDIS_DIR" ]; then
        rm -rf "$REDIS_DIR"
        REDIS_DIR=""
    fi
    return 0
}

# Ctrl-C, TERM and HUP end the script through its EXIT trap.
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
