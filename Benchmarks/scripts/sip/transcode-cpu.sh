#!/bin/bash
# What a transcoded SIP call costs the relay: one relay (one worker, loopback, --sip with a trunk for loopback), one
# forward room, and SIPp's uac_pcap scenario placing CALLS calls at once into it (PCMA from Debian's g711a.pcap, 30 ms
# packets, 8 s each). Over SECONDS in the middle of the calls it reads the CPU time of the relay's threads
# (/proc/PID/task/*/schedstat: the SIP thread "parley-sip" — receive, G.711 decode, Opus encode towards the room,
# the room's Opus decode, G.711 encode, send, RTCP, the 20 ms tick — and the rest: the worker forwarding the calls'
# members, the HTTP API) and prints µs per call per 20 ms for each. RUNS runs; each run's figures, then the median
# and spread. SIPp runs on the same two cores.
#
#   make release && Benchmarks/scripts/sip/transcode-cpu.sh [RUNS] [CALLS] [SECONDS]
set -euo pipefail
RUNS=${1:-3}
CALLS=${2:-50}
SECONDS_MEASURED=${3:-4}
BIN=${BIN:-.build/release}
RELAY=${RELAY:-$BIN/parley-relay}  # another build's relay to compare (A/B); the token comes from $BIN/parley
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Nanoseconds on CPU of the relay's threads: "sip OTHERS".
threads_ns() {
  local sip=0 other=0 t name ns
  for t in /proc/"$1"/task/*; do
    name=$(cat "$t/comm" 2>/dev/null) || continue
    ns=$(cut -d' ' -f1 "$t/schedstat" 2>/dev/null) || continue
    if [ "$name" = parley-sip ]; then sip=$((sip + ns)); else other=$((other + ns)); fi
  done
  echo "$sip $other"
}

sipp -sd uac_pcap > "$work/dump.xml" 2>/dev/null || true  # exits 99 after writing the scenario
sed 's|"pcap/|"/usr/share/sip-tester/|g' "$work/dump.xml" > "$work/uac_pcap.xml"

one() {
  local sip_port; sip_port=$(free_port)
  PARLEY_STATE_DIR=$work/state $RELAY --udp 127.0.0.1:0 --http 127.0.0.1:0 --workers 1 \
    --sip 127.0.0.1:"$sip_port" --sip-trunk local=127.0.0.0/8 > "$work/relay.log" 2>&1 &
  local relay=$!
  for _ in $(seq 50); do grep -q "ready on udp" "$work/relay.log" && break; sleep 0.1; done
  local http admin room
  http=$(grep "ready on udp" "$work/relay.log" | grep -oE "http 127.0.0.1:[0-9]+" | cut -d' ' -f2)
  admin=$(PARLEY_STATE_DIR=$work/state $BIN/parley token --admin --identity ops)
  room="cost-$RANDOM"
  curl -sf -X POST -H "Authorization: Bearer $admin" "http://$http/v1/rooms" \
    -d "{\"name\":\"$room\",\"mode\":\"forward\",\"max_members\":$((CALLS + 10))}" > /dev/null
  sipp -sf "$work/uac_pcap.xml" -s "room-$room" 127.0.0.1:"$sip_port" -i 127.0.0.1 -p "$(free_port)" \
    -m "$CALLS" -l "$CALLS" -r "$CALLS" -nostdin -trace_screen -screen_file "$work/sipp.txt" -timeout 40s \
    > /dev/null 2>&1 &
  local sipp_pid=$!
  sleep 2  # every call answered and sending
  local a b
  a=$(threads_ns "$relay")
  sleep "$SECONDS_MEASURED"
  b=$(threads_ns "$relay")
  wait "$sipp_pid" || true
  local joined; joined=$(grep -c "joined room $room (PCMA)" "$work/relay.log" || true)
  kill "$relay"; wait "$relay" 2>/dev/null || true
  rm -rf "$work/state"
  python3 - "$a" "$b" "$CALLS" "$SECONDS_MEASURED" "$joined" <<'PY'
import sys
a, b = [list(map(int, x.split())) for x in sys.argv[1:3]]
calls, seconds, joined = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
ticks = seconds / 0.02
sip, other = ((b[i] - a[i]) / 1000 / calls / ticks for i in range(2))
print(f"{sip:.1f} {other:.1f} {joined}")
PY
}

results=()
for r in $(seq "$RUNS"); do
  line=$(one)
  read -r sip other joined <<< "$line"
  echo "run $r: SIP thread $sip µs per call per 20 ms, other threads $other µs ($joined of $CALLS calls joined)"
  results+=("$sip")
done
printf '%s\n' "${results[@]}" | sort -n | awk '{ v[NR] = $1 } END { printf "SIP thread, µs per call per 20 ms: median %s (%s–%s) over %d runs\n", v[int((NR + 1) / 2)], v[1], v[NR], NR }'
