#!/usr/bin/env bash
# The longest silence a room's members hear while one node of the cluster drains (`parley-relay drain`).
#
#   Benchmarks/cluster-drain.sh [RUNS]        (default 3; after `make release`; needs redis-server)
#
# Each run: a Redis and three relays (1 worker each, cascade_after 0: each node takes the joins that reach it) on
# loopback ports; a talker (a 440 Hz tone, never silent) joins through node 1 and a listener through each of nodes 2
# and 3; after 2 s node 1 drains: the talker moves to another node and the room's cascade carries it on. Each listener
# prints the longest time between two packets it received (`parley join`'s summary); the run's figure is the larger,
# then the median over runs. Everything it starts is stopped at the end of each run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
runs=${1:-3}
relay=.build/release/parley-relay
parley=.build/release/parley
[[ -x $relay && -x $parley ]] || { echo "cluster-drain.sh: run 'make release' first" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "cluster-drain.sh: redis-server is missing (apt-get install redis-server)" >&2; exit 2; }
dir=$(mktemp -d)
pids=()
stop() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; rm -rf "$dir"' EXIT
gaps=()
for run in $(seq 1 "$runs"); do
    base=$((20000 + RANDOM % 20000))
    redis-server --port "$base" --bind 127.0.0.1 --save "" --appendonly no >"$dir/redis.log" 2>&1 & pids+=($!); disown $!
    sleep 0.5
    for n in 1 2 3; do
        PARLEY_CLUSTER=redis://127.0.0.1:$base PARLEY_NODE_ID=node$n PARLEY_CASCADE_AFTER=0 \
            $relay --udp 127.0.0.1:$((base + n * 10)) --http 127.0.0.1:$((base + n * 10 + 1)) --workers 1 \
            --state-dir "$dir/state$n" >"$dir/node$n.log" 2>&1 & pids+=($!); disown $!
    done
    sleep 3   # the nodes registered and each knows the others
    room=drain-$run-$RANDOM
    $parley join "$room" --identity talker --server 127.0.0.1:$((base + 10)) --tone 440 --no-playback --no-tui --duration 8 \
        >"$dir/talker.log" 2>&1 & pids+=($!); disown $!
    sleep 0.5
    for n in 2 3; do
        $parley join "$room" --identity ear$n --server 127.0.0.1:$((base + n * 10)) --listen-only --no-playback --no-tui --duration 6 \
            >"$dir/ear$n.log" 2>&1 & pids+=($!)
    done
    ears=("${pids[@]: -2}")
    sleep 2
    $relay drain --http 127.0.0.1:$((base + 11))
    for p in "${ears[@]}"; do wait "$p" || true; done
    worst=0
    for n in 2 3; do
        g=$(grep -o "longest gap between received packets: [0-9]*" "$dir/ear$n.log" | grep -o "[0-9]*$" || echo "")
        [[ -n $g ]] || { echo "run $run: ear$n printed no gap"; cat "$dir/ear$n.log"; g=99999; }
        (( g > worst )) && worst=$g
    done
    grep -q "moving to" "$dir/talker.log" || echo "run $run: the talker was not moved"
    printf 'run %d: longest gap a listener heard while node 1 drained: %d ms\n' "$run" "$worst"
    gaps+=("$worst")
    stop
done
printf 'median: %d ms over %d runs (goal: no gap over 200 ms)\n' "$(printf '%s\n' "${gaps[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')" "${#gaps[@]}"
