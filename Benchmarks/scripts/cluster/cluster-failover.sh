#!/usr/bin/env bash
# How long a cluster's members take to be back in their room after the room's node is killed with kill -9.
#
#   Benchmarks/scripts/cluster/cluster-failover.sh [RUNS]        (default 3; after `make release`; needs redis-server)
#
# Each run: a Redis and two relays (1 worker each, keepalive 1 s) on loopback ports; a speaker (a 440 Hz tone) and a
# listener join one room, through different nodes; the node the room lives on is killed with SIGKILL; the time until
# both members print their next "joined ROOM" (their new welcome, on the surviving node) is printed, then the median.
# Everything it starts is stopped at the end of each run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
runs=${1:-3}
relay=.build/release/parley-relay
parley=.build/release/parley
[[ -x $relay && -x $parley ]] || { echo "cluster-failover.sh: run 'make release' first" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "cluster-failover.sh: redis-server is missing (apt-get install redis-server)" >&2; exit 2; }
dir=$(mktemp -d)
pids=()
stop() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; rm -rf "$dir"' EXIT
times=()
for run in $(seq 1 "$runs"); do
    base=$((20000 + RANDOM % 20000))
    redis-server --port "$base" --bind 127.0.0.1 --save "" --appendonly no >"$dir/redis.log" 2>&1 & pids+=($!); disown $!
    sleep 0.5
    for n in 1 2; do
        PARLEY_CLUSTER=redis://127.0.0.1:$base PARLEY_NODE_ID=node$n PARLEY_KEEPALIVE_INTERVAL_S=1 \
            $relay --udp 127.0.0.1:$((base + n * 10)) --http 127.0.0.1:$((base + n * 10 + 1)) --workers 1 \
            --state-dir "$dir/state$n" >"$dir/node$n.log" 2>&1 & pids+=($!); disown $!
    done
    sleep 3   # both nodes registered and each knows the other
    room=failover-$run-$RANDOM
    $parley join "$room" --identity host --server 127.0.0.1:$((base + 10)) --tone 440 --no-playback --no-tui --duration 30 \
        >"$dir/host.log" 2>&1 & pids+=($!); disown $!
    sleep 1
    $parley join "$room" --identity ear --server 127.0.0.1:$((base + 20)) --listen-only --no-playback --no-tui --duration 30 \
        >"$dir/ear.log" 2>&1 & pids+=($!); disown $!
    sleep 3
    port=$(grep -o "port [0-9]*" "$dir/host.log" | head -1 | cut -d' ' -f2)
    owner=$(pgrep -f -- "--udp 127.0.0.1:$port " || true)
    [[ -n $owner ]] || { echo "run $run: the room's node (port $port) not found"; stop; continue; }
    kill -9 "$owner"
    start=$(date +%s.%N)
    back=""
    for _ in $(seq 1 120); do
        sleep 0.05
        if [[ $(grep -c "joined $room" "$dir/host.log") -ge 2 && $(grep -c "joined $room" "$dir/ear.log") -ge 2 ]]; then
            back=$(echo "$(date +%s.%N) - $start" | bc); break
        fi
    done
    if [[ -n $back ]]; then
        printf 'run %d: both members back in the room %.2f s after the kill\n' "$run" "$back"
        times+=("$back")
    else
        echo "run $run: not back within 6 s"
    fi
    stop
done
[[ ${#times[@]} -gt 0 ]] && printf 'median: %.2f s over %d runs\n' "$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" "${#times[@]}"
