#!/usr/bin/env bash
# A multi-node Ray cluster on one machine, for trying numsweep's cluster path and for its tests:
# a head and N worker nodes, each its own `ray start --block` process with its own resources and
# Ray temp dir, all on 127.0.0.1; the dashboard (which serves `ray job submit`) on 127.0.0.1 only;
# Ray's token authentication on, with a token made for this cluster.
#
#   cluster/local.sh start      [--dir D] [--workers N] [--cpus C] [--gpus G] [--head-cpus C]
#   cluster/local.sh stop       [--dir D]           stop every node, then any straggler, by pid
#   cluster/local.sh stop-node  NAME [--dir D] [--force]
#                               SIGTERM a node (Ray drains it, then stops it, as a preempted or
#                               scaled-down machine); --force: SIGKILL its processes (a crash)
#   cluster/local.sh start-node NAME [--dir D] [--cpus C] [--gpus G]   (re)start a worker node
#   cluster/local.sh status     [--dir D]           nodes, their pids and `ray status`
#   cluster/local.sh pids       [--dir D] [NAME]    live processes of the cluster (or one node)
#
# Nodes are named head, worker-1 … worker-N. D defaults to $NUMSWEEP_CLUSTER_DIR, else
# /tmp/numsweep-cluster (keep it short: Ray's Unix sockets live under it). `start` writes
# D/env.sh; `source D/env.sh` sets what a client needs: RAY_ADDRESS (the GCS, for
# `python -m orchestrator sweep`), RAY_API_SERVER_ADDRESS (the job server, for `ray job
# submit`), RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH=D/auth_token.
#
# Every process of the cluster, down to Ray's worker processes and a job's driver, inherits
# NUMSWEEP_LOCAL_CLUSTER=D (and NUMSWEEP_LOCAL_NODE=NAME) in its environment: that is how `stop`
# and `pids` find them, so nothing but this cluster's processes is ever signalled. (`ray stop`
# is not used: it stops every Ray process of the machine, whoever started it.)
set -euo pipefail

DIR=${NUMSWEEP_CLUSTER_DIR:-/tmp/numsweep-cluster}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The Python that has Ray (the project's venv when it is active).
PYTHON=${PYTHON:-python3}
WORKERS=2
CPUS=1
GPUS=0
HEAD_CPUS=0
FORCE=0
NAME=""
# Seconds a SIGTERMed node may take to drain and stop before its processes are SIGKILLed.
GRACE=${NUMSWEEP_CLUSTER_GRACE_S:-40}
# Seconds a node may take to start.
START_TIMEOUT=${NUMSWEEP_CLUSTER_START_TIMEOUT_S:-90}

die() {
    echo "local.sh: $*" >&2
    exit 1
}

usage() {
    sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'
    exit "${1:-0}"
}

[[ $# -ge 1 ]] || usage 2
COMMAND=$1
shift
while [[ $# -gt 0 ]]; do
    case $1 in
        --dir) DIR=$2; shift 2 ;;
        --workers) WORKERS=$2; shift 2 ;;
        --cpus) CPUS=$2; shift 2 ;;
        --gpus) GPUS=$2; shift 2 ;;
        --head-cpus) HEAD_CPUS=$2; shift 2 ;;
        --force) FORCE=1; shift ;;
        -h | --help) usage 0 ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) [[ -z $NAME ]] || die "unexpected argument $1"; NAME=$1; shift ;;
    esac
done
for value in "$WORKERS" "$CPUS" "$GPUS" "$HEAD_CPUS"; do
    [[ $value =~ ^[0-9]+$ ]] || die "--workers, --cpus, --gpus and --head-cpus take whole numbers, got $value"
done
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

# ---- processes of this cluster --------------------------------------------------------------

# Pids of live processes whose environment has NUMSWEEP_LOCAL_CLUSTER=$DIR (and, given a node
# name, NUMSWEEP_LOCAL_NODE=name).
cluster_pids() {
    local node=${1:-} files
    # grep -z reads the NUL-separated environment; a process may exit (or be another user's)
    # between the glob and the read: what cannot be read is skipped.
    files=$(grep -lzxF "NUMSWEEP_LOCAL_CLUSTER=$DIR" /proc/[0-9]*/environ 2>/dev/null || true)
    if [[ -n $node && -n $files ]]; then
        # shellcheck disable=SC2086
        files=$(grep -lzxF "NUMSWEEP_LOCAL_NODE=$node" $files 2>/dev/null || true)
    fi
    local file pid
    for file in $files; do
        pid=${file#/proc/}
        pid=${pid%/environ}
        [[ $pid == "$$" || $pid == "$BASHPID" ]] || echo "$pid"
    done
}

alive() { [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null; }

node_pid() { cat "$DIR/nodes/$1.pid" 2>/dev/null || true; }

# Wait up to $2 seconds for no process of node $1 (all nodes when empty) to remain.
wait_gone() {
    local node=$1 deadline=$((SECONDS + $2))
    while [[ -n $(cluster_pids "$node") ]]; do
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

kill_all() {
    local signal=$1 node=${2:-} pid
    for pid in $(cluster_pids "$node"); do
        kill "-$signal" "$pid" 2>/dev/null || true
    done
}

# ---- starting nodes ---------------------------------------------------------------------------

free_ports() {
    # $1 distinct free TCP ports on 127.0.0.1 (all held open until all are chosen).
    "$PYTHON" - "$1" <<'EOF'
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
EOF
}

# The environment every node (and so every Ray process and job) runs with.
node_env() {
    # Ray swaps a 127.0.0.1 node address for the host's routable one unless this switch is off.
    export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
    export RAY_AUTH_MODE=token
    export RAY_AUTH_TOKEN_PATH="$DIR/auth_token"
    export NUMSWEEP_LOCAL_CLUSTER="$DIR"
    # Ray's opt-in usage reporting: off (this machine talks to nobody).
    export RAY_USAGE_STATS_ENABLED=0
}

# start_node NAME COMMAND…: run `COMMAND start --block …` (COMMAND is `ray`, or for a worker
# node cluster/loopback_ray.py, see there) in the background in its own process group; returns
# once Ray says the node runs, or fails with the node's log.
start_node() {
    local name=$1 command=$2
    shift 2
    local log="$DIR/nodes/$name.log" pid deadline
    alive "$(node_pid "$name")" && die "node $name already runs (pid $(node_pid "$name"))"
    mkdir -p "$DIR/nodes" "$DIR/ray/$name"
    (
        node_env
        export NUMSWEEP_LOCAL_NODE="$name"
        exec setsid $command start --block --node-ip-address=127.0.0.1 \
            --temp-dir="$DIR/ray/$name" --min-worker-port=0 --max-worker-port=0 \
            --disable-usage-stats --log-style=record "$@"
    ) >"$log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$DIR/nodes/$name.pid"
    deadline=$((SECONDS + START_TIMEOUT))
    until grep -q "Ray runtime started" "$log" 2>/dev/null; do
        if ! alive "$pid" || ((SECONDS >= deadline)); then
            tail -n 40 "$log" >&2
            die "node $name did not start (log: $log)"
        fi
        sleep 0.5
    done
    echo "local.sh: $name started (pid $pid, $*)"
}

start_worker() {
    local name=$1 gcs agent
    gcs=$(cat "$DIR/gcs_port" 2>/dev/null) || die "no cluster in $DIR (run: $0 start)"
    read -r agent < <(free_ports 1)
    start_node "$name" "$PYTHON $HERE/loopback_ray.py" --address="127.0.0.1:$gcs" --num-cpus="$CPUS" --num-gpus="$GPUS" \
        --dashboard-agent-listen-port="$agent"
}

cmd_start() {
    alive "$(node_pid head)" && die "a cluster already runs in $DIR (head pid $(node_pid head))"
    command -v ray >/dev/null || die "no \`ray\` on PATH (activate the project's venv)"
    (umask 077 && mkdir -p "$DIR")
    if [[ ! -s $DIR/auth_token ]]; then
        (umask 077 && "$PYTHON" -c "import secrets; print(secrets.token_hex(32), end='')" \
            >"$DIR/auth_token")
    fi
    local gcs dashboard client agent i
    read -r gcs dashboard client agent < <(free_ports 4)
    echo "$gcs" >"$DIR/gcs_port"
    echo "$dashboard" >"$DIR/dashboard_port"
    start_node head ray --head --port="$gcs" --num-cpus="$HEAD_CPUS" --num-gpus=0 \
        --include-dashboard=true --dashboard-host=127.0.0.1 --dashboard-port="$dashboard" \
        --ray-client-server-port="$client" --dashboard-agent-listen-port="$agent"
    for ((i = 1; i <= WORKERS; i++)); do
        start_worker "worker-$i"
    done
    cat >"$DIR/env.sh" <<EOF
# Reach the local cluster in $DIR: \`source $DIR/env.sh\`
export RAY_ADDRESS=127.0.0.1:$gcs
export RAY_API_SERVER_ADDRESS=http://127.0.0.1:$dashboard
export RAY_AUTH_MODE=token
export RAY_AUTH_TOKEN_PATH=$DIR/auth_token
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
EOF
    echo "local.sh: cluster up: head + $WORKERS worker node(s); dashboard and job server" \
        "http://127.0.0.1:$dashboard; source $DIR/env.sh"
}

# ---- stopping nodes ---------------------------------------------------------------------------

stop_node() {
    local name=$1 pid
    pid=$(node_pid "$name")
    if ((FORCE)); then
        kill_all KILL "$name"
    elif alive "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
    fi
    if ! wait_gone "$name" "$GRACE"; then
        echo "local.sh: $name did not stop within ${GRACE}s: SIGKILL" >&2
        kill_all KILL "$name"
        wait_gone "$name" 10 || die "processes of $name survive SIGKILL: $(cluster_pids "$name")"
    fi
    rm -f "$DIR/nodes/$name.pid"
    echo "local.sh: $name stopped"
}

cmd_stop() {
    local pidfile name
    # Workers first, so the head never sees them vanish while it shuts down.
    for pidfile in "$DIR"/nodes/worker-*.pid "$DIR/nodes/head.pid"; do
        [[ -e $pidfile ]] || continue
        name=$(basename "$pidfile" .pid)
        stop_node "$name"
    done
    # Anything left (a job's driver, a worker whose node is gone): by pid, TERM then KILL.
    if [[ -n $(cluster_pids) ]]; then
        kill_all TERM
        wait_gone "" 10 || { kill_all KILL; wait_gone "" 10 || die "processes survive: $(cluster_pids)"; }
    fi
    echo "local.sh: cluster in $DIR stopped"
}

case $COMMAND in
    start) cmd_start ;;
    stop) cmd_stop ;;
    stop-node)
        [[ -n $NAME ]] || die "stop-node needs a node name (head, worker-1, …)"
        [[ -e $DIR/nodes/$NAME.pid ]] || die "no node $NAME in $DIR"
        stop_node "$NAME"
        ;;
    start-node)
        [[ $NAME == worker-* ]] || die "start-node takes a worker name (worker-1, …), got '$NAME'"
        start_worker "$NAME"
        ;;
    pids) cluster_pids "$NAME" ;;
    status)
        for pidfile in "$DIR"/nodes/*.pid; do
            [[ -e $pidfile ]] || continue
            name=$(basename "$pidfile" .pid)
            pid=$(cat "$pidfile")
            if alive "$pid"; then state=running; else state=dead; fi
            echo "$name pid $pid $state"
        done
        if [[ -e $DIR/env.sh ]]; then
            # shellcheck disable=SC1091
            (source "$DIR/env.sh" && ray status --address="$RAY_ADDRESS") || true
        fi
        ;;
    -h | --help | help) usage 0 ;;
    *) die "unknown command $COMMAND (see --help)" ;;
esac
