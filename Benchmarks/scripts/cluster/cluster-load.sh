#!/usr/bin/env bash
# A cluster under load: delivery and latency when rooms span nodes (cascading) against rooms kept on one node.
#
#   Benchmarks/scripts/cluster/cluster-load.sh [ROOMS] [MEMBERS] [SECONDS]   (default 20 10 10; after `make release`; needs redis-server)
#
# Two runs on the same machine, one after the other, each with a fresh Redis and three relays (1 worker each) on
# loopback ports, and `parley-load --server A,B,C`, which sends each room's first speaker through node r mod 3 and its
# other members round the list:
#   cascade  — cascade_after 0: every node takes the joins that reach it, so every room spans the three nodes and each
#              speaker's packets cross a relay-to-relay link to the listeners of the other nodes;
#   redirect — cascade_after 500: joins go to the room's node, so each room lives on one node.
# parley-load prints delivery, one-way latency percentiles (speaker to listener, through one or two relays) and join
# times; the relays' CPU seconds (from /proc) follow each run. Everything it starts is stopped at the end of each run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../../.."
rooms=${1:-20}; members=${2:-10}; seconds=${3:-10}
relay=.build/release/parley-relay
load=.build/release/parley-load
[[ -x $relay && -x $load ]] || { echo "cluster-load.sh: run 'make release' first" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "cluster-load.sh: redis-server is missing (apt-get install redis-server)" >&2; exit 2; }
dir=$(mktemp -d)
pids=()
stop() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; pids=(); }
trap 'stop; rm -rf "$dir"' EXIT
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }
for mode in cascade redirect; do
    after=$([[ $mode == cascade ]] && echo 0 || echo 500)
    base=$((20000 + RANDOM % 20000))
    redis-server --port "$base" --bind 127.0.0.1 --save "" --appendonly no >"$dir/redis.log" 2>&1 & pids+=($!); disown $!
    sleep 0.5
    relays=(); servers=""
    for n in 1 2 3; do
        PARLEY_CLUSTER=redis://127.0.0.1:$base PARLEY_NODE_ID=node$n PARLEY_CASCADE_AFTER=$after \
            $relay --udp 127.0.0.1:$((base + n * 10)) --http 127.0.0.1:$((base + n * 10 + 1)) --workers 1 \
            --state-dir "$dir/state$n" --log-level warning >"$dir/node$n.log" 2>&1 & pids+=($!); relays+=($!); disown $!
        servers+="${servers:+,}127.0.0.1:$((base + n * 10))"
    done
    sleep 3   # the nodes registered and each knows the others
    echo "== $mode (cascade_after $after): $rooms rooms × $members members over 3 nodes"
    $load --server "$servers" --rooms "$rooms" --members "$members" --speakers 2 --duration "$seconds" --ramp 2 | grep -v "^#" || true
    for k in 0 1 2; do printf 'node%d: %.2f CPU-s\n' $((k + 1)) "$(cpu "${relays[$k]}")"; done
    stop
done
