#!/usr/bin/env bash
# Builds and runs Parley's libFuzzer targets, one at a time: Tests/Fuzz/run.sh [SECONDS] [TARGET...]
#
#   SECONDS  how long each target runs (default 60)
#   TARGET   any of: rtp rtcp signalling token (default: all four, in that order)
#
# Each target is one swiftc invocation that compiles the fuzz entry file together with the sources of the module
# under test into a single module (SwiftPM cannot link a libFuzzer main), e.g.
#   swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzRTP \
#          Tests/Fuzz/RTP/main.swift Sources/ParleyWire/*.swift -o .build/fuzz/fuzz-rtp
# Binaries are rebuilt only when a source is newer. Each run works on a scratch copy of the seed corpus in
# .build/fuzz/corpus-NAME (so new units never dirty the repo); crash artifacts and logs go to .build/fuzz/.
# Exits non-zero if any target crashed (or failed to build).
#
# Environment: FUZZ_SANITIZERS (default "fuzzer,address"; falls back to "fuzzer" if the ASan build fails),
# FUZZ_MAX_LEN (default 1500), FUZZ_EXTRA_ARGS (more libFuzzer flags, e.g. "-seed=1").
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."   # the repo root, wherever this is started from

export PATH="/opt/swift/usr/bin:$PATH"
if ! command -v swiftc >/dev/null 2>&1; then
    echo "run.sh: swiftc not found (expected the Swift 6 toolchain in /opt/swift/usr/bin or on PATH); cannot build the fuzzers" >&2
    exit 2
fi

SECONDS_EACH="${1:-60}"
[[ $# -gt 0 ]] && shift
if ! [[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || [[ "$SECONDS_EACH" -lt 1 ]]; then
    echo "usage: $0 [SECONDS] [rtp|rtcp|signalling|token ...]" >&2
    exit 2
fi
TARGETS=("$@")
[[ ${#TARGETS[@]} -eq 0 ]] && TARGETS=(rtp rtcp signalling token)

OUT=.build/fuzz
mkdir -p "$OUT"
SANITIZERS="${FUZZ_SANITIZERS:-fuzzer,address}"
MAX_LEN="${FUZZ_MAX_LEN:-1500}"
LINKER=()
command -v ld.lld >/dev/null 2>&1 && LINKER=(-use-ld=lld)   # quieter than gold with ASan's local symbols

# Per target: entry directory, module name, sources, extra compiler flags.
target_dir()     { case "$1" in rtp) echo RTP ;; rtcp) echo RTCP ;; signalling) echo Signalling ;; token) echo Token ;; *) return 1 ;; esac; }
target_sources() {
    case "$1" in
        token) echo Sources/ParleyAuth/*.swift ;;
        *)     echo Sources/ParleyWire/*.swift ;;
    esac
}
target_flags()   { case "$1" in token) echo -I Sources/CSodium -lsodium ;; *) echo ;; esac; }

build() {
    local name="$1" dir module binary sources flags
    dir="$(target_dir "$name")" || { echo "run.sh: unknown target '$name' (rtp, rtcp, signalling, token)" >&2; return 1; }
    module="Fuzz$dir"
    binary="$OUT/fuzz-$name"
    read -r -a sources <<<"$(target_sources "$name")"
    read -r -a flags <<<"$(target_flags "$name")"
    local entry="Tests/Fuzz/$dir/main.swift"
    if [[ -x "$binary" && -f "$binary.sanitizers" && "$(cat "$binary.sanitizers")" == "$SANITIZERS" ]]; then
        local newer
        newer="$(find "$entry" "${sources[@]}" Tests/Fuzz/run.sh -newer "$binary" -print -quit)"
        if [[ -z "$newer" ]]; then echo "build $name: up to date ($binary)"; return 0; fi
    fi
    echo "build $name: swiftc -O -wmo -sanitize=$SANITIZERS ${LINKER[*]} -parse-as-library -module-name $module $entry ${sources[*]} ${flags[*]} -o $binary"
    # -wmo: one frontend job, so the build takes one core of the shared machine.
    if ! swiftc -O -wmo -sanitize="$SANITIZERS" "${LINKER[@]}" -parse-as-library -module-name "$module" \
            "$entry" "${sources[@]}" "${flags[@]}" -o "$binary"; then
        if [[ "$SANITIZERS" == *address* ]]; then
            echo "build $name: failed with -sanitize=$SANITIZERS; falling back to -sanitize=fuzzer (no AddressSanitizer)" >&2
            SANITIZERS=fuzzer
            swiftc -O -wmo -sanitize=fuzzer "${LINKER[@]}" -parse-as-library -module-name "$module" \
                "$entry" "${sources[@]}" "${flags[@]}" -o "$binary" || return 1
        else
            return 1
        fi
    fi
    echo "$SANITIZERS" >"$binary.sanitizers"
}

failed=0
summary=()
for name in "${TARGETS[@]}"; do
    if ! build "$name"; then
        summary+=("$name: BUILD FAILED")
        failed=1
        continue
    fi
    corpus="$OUT/corpus-$name"
    rm -rf "$corpus"
    mkdir -p "$corpus"
    cp Tests/Fuzz/corpus/"$name"/* "$corpus"/ 2>/dev/null || true
    log="$OUT/$name.log"
    echo "fuzz $name: ${SECONDS_EACH}s, corpus $corpus, log $log"
    status=0
    # shellcheck disable=SC2086
    "$OUT/fuzz-$name" -max_total_time="$SECONDS_EACH" -max_len="$MAX_LEN" -print_final_stats=1 \
        -artifact_prefix="$OUT/$name-" ${FUZZ_EXTRA_ARGS:-} "$corpus" >"$log" 2>&1 || status=$?

    units="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
    [[ -z "$units" ]] && units="$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)"
    secs="$(grep -oE '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | grep -oE 'in [0-9]+' | grep -oE '[0-9]+' || true)"
    if [[ $status -eq 0 ]]; then
        summary+=("$name: ${units:-?} executions in ${secs:-?} s, no crash")
    else
        artifact="$(grep -oE 'Test unit written to [^ ]+' "$log" | tail -1 | sed 's/Test unit written to //' || true)"
        summary+=("$name: CRASH (exit $status) after ${units:-?} executions; artifact ${artifact:-none}; log $log")
        failed=1
        echo "---- $name: last lines of $log ----"
        tail -n 60 "$log"
        echo "----"
    fi
    echo "${summary[-1]}"
done

echo
echo "fuzz summary (${SECONDS_EACH}s each, -sanitize=$SANITIZERS):"
printf '  %s\n' "${summary[@]}"
exit "$failed"
