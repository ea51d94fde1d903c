#!/usr/bin/env bash
# Builds and runs Parley's libFuzzer targets, and keeps their corpus in the repository.
#
#   Tests/Fuzz/run.sh [--runs N | --seconds S] [--jobs J] [TARGET...]   fuzz each target
#   Tests/Fuzz/run.sh --merge [TARGET...]                                fold the last runs' finds into the repo corpus
#   Tests/Fuzz/run.sh --minimize [TARGET...]                             the same, re-minimizing the whole repo corpus
#
#   --runs N     executions per target (default 1000000); the run stops there, so its length is known in advance
#   --seconds S  run each target for S seconds instead
#   --jobs J     run up to J targets at once (default 1; each target is one process on one core)
#   --merge      add to Tests/Fuzz/corpus/TARGET the units of the last fuzz run (.build/fuzz/corpus-TARGET) that add
#                coverage beyond what the repo corpus already has (libFuzzer -merge=1, named by their SHA-1); nothing
#                already there changes, so the history only grows by what is new. Review and commit the result.
#   --minimize   rebuild the repo corpus from scratch instead: make_seeds.py's named seeds always stay, and the SHA-1
#                units (the repo's and the last run's) are replaced by the smallest set that adds coverage beyond the
#                seeds. Touches many files: worth it now and then, when the corpus has grown a lot.
#   TARGET       any of: rtp rtcp signalling token envelope stun sdp cascade sip (default: all nine, in an order that keeps
#                --jobs 2 balanced: rtcp on one core, token and sdp on the other, the short ones behind rtcp)
#
# The nine parsers and what drives each (Tests/Fuzz/NAME/main.swift says more):
#   rtp         RTPPacketView and every accessor                        (Sources/ParleyWire)
#   rtcp        compound iteration, SR/RR/SDES/BYE/NACK, round trips     (Sources/ParleyWire)
#   signalling  SignalDatagram, version 1 messages, round trip          (Sources/ParleyWire)
#   token       TokenVerifier, the claims JSON under a valid signature  (Sources/ParleyAuth)
#   envelope    EnvelopeView and SignallingEnvelope's writers: version 2's hello, cookie answer, initiation,
#               response and sealed framing, the first parser every datagram meets (Sources/ParleyWire)
#   stun        STUNBindingRequest/Response, MESSAGE-INTEGRITY, STUNWriter round trips (Sources/ParleyWebRTC)
#   sdp         SDPOffer from (possibly invalid) UTF-8 as the HTTP route reads it, audioSections, SDPAnswer
#               built from what it accepts and read back (Sources/ParleyWebRTC)
#   cascade     CascadeMessage of every kind, round trips (Sources/ParleyRelayCore/CascadeMessage.swift)
#   sip         libre's SIP message decoder on the datagram and the gateway's request check, then a phone's RTCP as
#               the gateway reads it, its SDP offer reader and answer, its DTMF reader, and its trunk and address-block
#               parsers
#               (Sources/ParleySIP; libre-dev)
#
# Each target is one swiftc invocation that compiles the fuzz entry file together with the sources of the module
# under test into a single module (SwiftPM cannot link a libFuzzer main), e.g.
#   swiftc -O -wmo -sanitize=fuzzer,address -parse-as-library -module-name FuzzRTP \
#          Tests/Fuzz/RTP/main.swift Sources/ParleyWire/*.swift -o .build/fuzz/fuzz-rtp
# stun and sdp compile all of Sources/ParleyWebRTC with Sources/ParleyWire, cascade CascadeMessage.swift (which needs
# nothing else of ParleyRelayCore) with Sources/ParleyWire. Their files say `import ParleyWire`, so their module is
# named ParleyWire: swiftc ignores (with a warning) an import of the module a file is part of.
# -sanitize=fuzzer links the toolchain's libclang_rt.fuzzer, which needs libstdc++ (-lstdc++: Debian's
# libstdc++-12-dev); the token target also needs libsodium-dev, stun and sdp libssl-dev (OpenSSL's HMAC-SHA1 for
# MESSAGE-INTEGRITY; the module's DTLS files link it too). Binaries are rebuilt only when a source is newer.
# Each fuzz run starts from a scratch copy of the repo corpus in .build/fuzz/corpus-NAME (new units never dirty the
# repo until --merge); crash artifacts and logs go to .build/fuzz/. Exits non-zero if any target crashed, failed to
# build, or stopped short of its executions.
#
# Environment: FUZZ_SANITIZERS (default "fuzzer,address"; falls back to "fuzzer" if the ASan build fails),
# FUZZ_MAX_LEN (the longest input, for every target; default 1500, a datagram, and 8192 for sdp, an offer),
# FUZZ_EXTRA_ARGS (more libFuzzer flags, e.g. "-seed=1"), FUZZ_OUT (default .build/fuzz).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."   # the repo root, wherever this is started from

export PATH="/opt/swift/usr/bin:$PATH"
if ! command -v swiftc >/dev/null 2>&1; then
    echo "run.sh: swiftc not found (expected the Swift 6 toolchain in /opt/swift/usr/bin or on PATH); cannot build the fuzzers" >&2
    exit 2
fi

usage() { echo "usage: $0 [--runs N | --seconds S] [--jobs J] [TARGET...] | $0 --merge|--minimize [TARGET...]   (TARGET: rtp rtcp signalling token envelope stun sdp cascade sip)" >&2; exit 2; }
number() { [[ "${1:-}" =~ ^[0-9]+$ ]] && [[ "$1" -ge 1 ]] || usage; }

RUNS=1000000
SECONDS_EACH=""
JOBS=1
MERGE=0
TARGETS=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --runs) number "${2:-}"; RUNS="$2"; SECONDS_EACH=""; shift 2 ;;
        --seconds) number "${2:-}"; SECONDS_EACH="$2"; shift 2 ;;
        --jobs) number "${2:-}"; JOBS="$2"; shift 2 ;;
        --merge) MERGE=1; shift ;;
        --minimize) MERGE=2; shift ;;
        rtp|rtcp|signalling|token|envelope|stun|sdp|cascade|sip) TARGETS+=("$1"); shift ;;
        *) usage ;;
    esac
done
# The default order, for --jobs 2 (each job takes the next target when one ends): rtcp (the longest) on one core, token then
# sdp (the next two) on the other, the short ones behind rtcp, longest first.
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=(rtcp token sdp sip cascade stun envelope signalling rtp)

OUT="${FUZZ_OUT:-.build/fuzz}"
mkdir -p "$OUT"
SANITIZERS="${FUZZ_SANITIZERS:-fuzzer,address}"
LINKER=()
command -v ld.lld >/dev/null 2>&1 && LINKER=(-use-ld=lld)   # quieter than gold with ASan's local symbols

# Per target: entry directory, module name, sources, extra compiler flags, longest input.
target_dir() {
    case "$1" in
        rtp) echo RTP ;; rtcp) echo RTCP ;; signalling) echo Signalling ;; token) echo Token ;;
        envelope) echo Envelope ;; stun) echo STUN ;; sdp) echo SDP ;; cascade) echo Cascade ;; sip) echo SIP ;;
    esac
}
target_module()  { case "$1" in stun|sdp|cascade|sip) echo ParleyWire ;; *) echo "Fuzz$(target_dir "$1")" ;; esac; }
target_sources() {
    case "$1" in
        token) echo Sources/ParleyAuth/*.swift ;;
        stun|sdp) echo Sources/ParleyWebRTC/*.swift Sources/ParleyWire/*.swift ;;
        sip) echo Sources/ParleySIP/SIPAudioOffer.swift Sources/ParleySIP/SIPTrunk.swift Sources/ParleySIP/SIPDTMF.swift Sources/ParleySIP/SIPRequestCheck.swift Sources/ParleySIP/SIPCallRTCP.swift Sources/ParleyWire/*.swift ;;
        cascade) echo Sources/ParleyRelayCore/CascadeMessage.swift Sources/ParleyWire/*.swift ;;
        *) echo Sources/ParleyWire/*.swift ;;
    esac
}
target_flags()   { case "$1" in token) echo -I Sources/CSodium -lsodium ;; stun|sdp) echo -I Sources/COpenSSL -lssl -lcrypto ;;
                            sip) echo -I Sources/CLibre -I /usr/include/re -lre ;; *) echo ;; esac; }
target_max_len() { if [[ -n "${FUZZ_MAX_LEN:-}" ]]; then echo "$FUZZ_MAX_LEN"; elif [[ "$1" == sdp || "$1" == sip ]]; then echo 8192; else echo 1500; fi; }

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Seconds since a now_ms reading, one decimal.
since() { local ms=$(( $(now_ms) - $1 )); printf '%d.%d' $((ms / 1000)) $(((ms % 1000) / 100)); }

# Builds .build/fuzz/fuzz-NAME when a source is newer than it; records the sanitizers it was built with.
build() {
    local name="$1" dir module binary sources flags sanitizers="$SANITIZERS"
    dir="$(target_dir "$name")"
    module="$(target_module "$name")"
    binary="$OUT/fuzz-$name"
    read -r -a sources <<<"$(target_sources "$name")"
    read -r -a flags <<<"$(target_flags "$name")"
    local entry="Tests/Fuzz/$dir/main.swift"
    if [[ -x "$binary" && -f "$binary.sanitizers" && "$(cat "$binary.sanitizers")" == "$SANITIZERS" ]]; then
        local newer
        newer="$(find "$entry" "${sources[@]}" Tests/Fuzz/run.sh -newer "$binary" -print -quit)"
        if [[ -z "$newer" ]]; then echo "build $name: up to date ($binary)"; return 0; fi
    fi
    local started; started="$(now_ms)"
    echo "build $name: swiftc -O -wmo -sanitize=$sanitizers ${LINKER[*]} -parse-as-library -module-name $module $entry ${sources[*]} ${flags[*]} -o $binary"
    # -wmo: one frontend job, so the build takes one core of the shared machine.
    if ! swiftc -O -wmo -sanitize="$sanitizers" "${LINKER[@]}" -parse-as-library -module-name "$module" \
            "$entry" "${sources[@]}" "${flags[@]}" -o "$binary" >"$OUT/$name.build.log" 2>&1; then
        cat "$OUT/$name.build.log" >&2
        [[ "$sanitizers" == *address* ]] || return 1
        echo "build $name: failed with -sanitize=$sanitizers; falling back to -sanitize=fuzzer (no AddressSanitizer)" >&2
        sanitizers=fuzzer
        swiftc -O -wmo -sanitize=fuzzer "${LINKER[@]}" -parse-as-library -module-name "$module" \
            "$entry" "${sources[@]}" "${flags[@]}" -o "$binary" || return 1
    fi
    echo "$sanitizers" >"$binary.sanitizers"
    echo "build $name: $(since "$started") s"
}

# Fuzzes one target; writes one summary line to $OUT/NAME.summary and returns non-zero on a crash or a short run.
fuzz() {
    local name="$1" corpus="$OUT/corpus-$1" log="$OUT/$1.log" status=0 limit
    rm -rf "$corpus"
    mkdir -p "$corpus"
    cp Tests/Fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
    if [[ -n "$SECONDS_EACH" ]]; then limit=(-max_total_time="$SECONDS_EACH"); else limit=(-runs="$RUNS"); fi
    echo "fuzz $name: ${limit[*]}, corpus $corpus ($(ls "$corpus" | wc -l) units), log $log"
    local started; started="$(now_ms)"
    # shellcheck disable=SC2086
    "$OUT/fuzz-$name" "${limit[@]}" -max_len="$(target_max_len "$name")" -print_final_stats=1 \
        -artifact_prefix="$OUT/$name-" ${FUZZ_EXTRA_ARGS:-} "$corpus" >"$log" 2>&1 || status=$?
    local elapsed wall cpu units rate line
    elapsed=$(( $(now_ms) - started ))
    wall="$(since "$started")"
    # CPU seconds of this job's children, the fuzzer all but a few milliseconds of it (`times`, second line: user sys).
    # (Into a file: in a command substitution `times` would speak for the substitution's own subshell.)
    times >"$OUT/$name.times"
    cpu="$(sed -n 2p "$OUT/$name.times" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%.1f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')"
    units="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
    [[ -z "$units" ]] && units="$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)"
    rate=$(( ${units:-0} * 1000 / (elapsed > 0 ? elapsed : 1) ))
    if [[ $status -ne 0 ]]; then
        local artifact
        artifact="$(grep -oE 'Test unit written to [^ ]+' "$log" | tail -1 | sed 's/Test unit written to //' || true)"
        line="$name: CRASH (exit $status) after ${units:-?} executions; artifact ${artifact:-none}; log $log"
        echo "---- $name: last lines of $log ----"; tail -n 60 "$log"; echo "----"
    elif [[ -z "$SECONDS_EACH" && "${units:-0}" -lt "$RUNS" ]]; then
        line="$name: STOPPED SHORT at ${units:-?} of $RUNS executions; log $log"
        status=1
    else
        line="$name: $units executions in $wall s ($rate/s; $cpu CPU s), corpus $(ls "$corpus" | wc -l) units, no crash"
    fi
    echo "$line" >"$OUT/$name.summary"
    echo "$line"
    return $status
}

# Adds the last run's finds that bring new coverage to the repo corpus of one target (see --merge above).
merge() {
    local name="$1" repo="Tests/Fuzz/corpus/$1" scratch="$OUT/corpus-$1" log="$OUT/$1.merge.log" before
    mkdir -p "$scratch"
    before="$(ls "$repo" | wc -l)"
    "$OUT/fuzz-$name" -merge=1 -max_len="$(target_max_len "$name")" "$repo" "$scratch" >"$log" 2>&1 \
        || { echo "merge $name: failed; see $log" >&2; tail -n 20 "$log" >&2; return 1; }
    echo "merge $name: $repo has $(ls "$repo" | wc -l) units (was $before); log $log"
}

# Minimizes the repo corpus of one target together with the last run's scratch corpus (see --minimize above).
minimize() {
    local name="$1" repo="Tests/Fuzz/corpus/$1" scratch="$OUT/corpus-$1" into="$OUT/minimize-$1" log="$OUT/$1.minimize.log"
    local sha1='^[0-9a-f]{40}$' before after
    rm -rf "$into"
    mkdir -p "$into" "$scratch"
    before="$(ls "$repo" | grep -cE "$sha1" || true)"
    for f in "$repo"/*; do [[ "$(basename "$f")" =~ $sha1 ]] || cp "$f" "$into"/; done   # the named seeds
    "$OUT/fuzz-$name" -merge=1 -max_len="$(target_max_len "$name")" "$into" "$repo" "$scratch" >"$log" 2>&1 \
        || { echo "merge $name: failed; see $log" >&2; tail -n 20 "$log" >&2; return 1; }
    find "$repo" -maxdepth 1 -type f -regextype posix-extended -regex ".*/[0-9a-f]{40}" -delete
    for f in "$into"/*; do [[ "$(basename "$f")" =~ $sha1 ]] && cp "$f" "$repo"/; done
    after="$(ls "$repo" | grep -cE "$sha1" || true)"
    echo "minimize $name: $repo keeps its $(ls "$repo" | grep -cvE "$sha1") seeds and $after found units (was $before); log $log"
}

# Runs `$1 NAME` for every target, at most $JOBS at a time; returns non-zero if any failed.
each() {
    local step="$1" failed=0 running=0 name
    for name in "${TARGETS[@]}"; do
        "$step" "$name" &
        running=$((running + 1))
        if [[ $running -ge $JOBS ]]; then wait -n || failed=1; running=$((running - 1)); fi
    done
    while [[ $running -gt 0 ]]; do wait -n || failed=1; running=$((running - 1)); done
    return $failed
}

started="$(now_ms)"
build_failed=0
each build || build_failed=1
for name in "${TARGETS[@]}"; do
    [[ -x "$OUT/fuzz-$name" ]] || { echo "run.sh: $name did not build" >&2; exit 1; }
done
[[ $build_failed -eq 0 ]] || { echo "run.sh: a build failed" >&2; exit 1; }

if [[ $MERGE -eq 1 ]]; then each merge; exit $?; fi
if [[ $MERGE -eq 2 ]]; then each minimize; exit $?; fi

failed=0
each fuzz || failed=1
echo
if [[ -n "$SECONDS_EACH" ]]; then each_limit="$SECONDS_EACH s"; else each_limit="$RUNS executions"; fi
echo "fuzz summary ($each_limit each, $JOBS at a time, -sanitize=$(cat "$OUT/fuzz-${TARGETS[0]}.sanitizers"); $(since "$started") s in all, builds included):"
for name in "${TARGETS[@]}"; do printf '  %s\n' "$(cat "$OUT/$name.summary" 2>/dev/null || echo "$name: no result")"; done
exit "$failed"
