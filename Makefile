# Parley — set-up, build, test. Every target installs the Debian packages it needs when they are missing
# (apt-get update only when something must be installed).
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

# Packages by use, each list in one place. RUN: building and running the relay and client. TEST: plus every program a
# test starts (Tests/ParleyIntegrationTests/ExternalProgram.swift names them; a test fails when one is missing here).
DEBS_RUN  := pkg-config libopus-dev libasound2-dev libsodium-dev libspeexdsp-dev libmicrohttpd-dev libsrtp2-dev libssl-dev libhiredis-dev libogg-dev libopusenc-dev libsqlite3-dev
# FUZZ: the libFuzzer targets (Tests/Fuzz/run.sh). `swiftc -sanitize=fuzzer` links the toolchain's libclang_rt.fuzzer,
# a C++ library, with -lstdc++ (libstdc++-12-dev; without it the link fails on undefined __cxa_* symbols); the token target
# links libsodium, the stun and sdp targets OpenSSL (ParleyWebRTC). The fuzzers run in `make test` too.
DEBS_FUZZ := libsodium-dev libssl-dev libstdc++-12-dev
DEBS_TEST := $(sort $(DEBS_RUN) $(DEBS_FUZZ) espeak-ng curl ffmpeg openssl tcpdump tshark gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad chromium python3 python3-venv python3-dev build-essential redis-server redis-tools util-linux mount)
# The quality bench: speech, the ffmpeg/libopus baseline; PyPI's pesq, numpy, scipy are installed by the target.
DEBS_QUALITY := $(DEBS_RUN) espeak-ng ffmpeg

SWIFT_FLAGS ?=
RELAY_ARGS ?=

# The Python the interop tests run (Tests/Interop): aiortc, a WebRTC client that is not a browser, and pesq, in a venv
# of Debian's python3 (made once; pip's cache makes a remake quick).
INTEROP_VENV := .build/interop-venv
$(INTEROP_VENV)/ready:
	/usr/bin/python3 -m venv $(INTEROP_VENV)
	$(INTEROP_VENV)/bin/pip install -q --disable-pip-version-check wheel
	$(INTEROP_VENV)/bin/pip install -q --disable-pip-version-check aiortc pesq numpy scipy
	touch $@

.PHONY: run test build release deps-run deps-test fuzz fuzz-merge fuzz-minimize bench soak quality bench-peer clean

define install_missing
	@missing=""; for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" -ne 0 ]; then echo "run as root (or install:$$missing)"; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@command -v swift >/dev/null || { echo "swift 6 is not on PATH (expected /opt/swift/usr/bin): install the Swift 6 toolchain"; exit 1; }
endef

deps-run:
	$(call install_missing,$(DEBS_RUN))

deps-test:
	$(call install_missing,$(DEBS_TEST))

## make run: install, build release, start the relay in the foreground with dev defaults.
run: deps-run
	swift build -c release $(SWIFT_FLAGS) --product parley-relay
	swift build -c release $(SWIFT_FLAGS) --product parley
	exec .build/release/parley-relay $(RELAY_ARGS)

release: deps-run
	swift build -c release $(SWIFT_FLAGS)

build: deps-run
	swift build $(SWIFT_FLAGS)

## make test: install, build, run every test (unit, integration with real processes on loopback), then the eight fuzz
## targets for FUZZ_RUNS executions (after the tests, never beside them: the process tests are real-time).
## FUZZ_RUNS=0 skips the fuzzers.
test: deps-test $(INTEROP_VENV)/ready
	swift build $(SWIFT_FLAGS) --build-tests
	swift test $(SWIFT_FLAGS) --skip-build
	@if [ "$(FUZZ_RUNS)" != 0 ]; then Tests/Fuzz/run.sh --runs $(FUZZ_RUNS) --jobs $(FUZZ_JOBS); fi

## make bench: the per-packet cost of the relay core (ns/packet, allocations per forwarded packet).
bench: deps-run
	swift build -c release $(SWIFT_FLAGS) --product forward-bench
	.build/release/forward-bench

## make soak: memory after 3,000 join/leave cycles against an in-process core (RSS and bytes in use per block; fails if
## anything is left once every session ended). `.build/release/soak-bench --flood 5000` measures a join flood instead.
soak: deps-run
	swift build -c release $(SWIFT_FLAGS) --product soak-bench
	.build/release/soak-bench

## make quality: mouth-to-ear latency and PESQ-WB through a real relay, on a clean and an impaired network.
## RUNS runs each mode with the proxy's seeds 1..RUNS and prints the median and spread: make quality PROFILE=moderate RUNS=5
PROFILE ?= clean
RUNS ?= 1
quality: deps-run
	$(call install_missing,$(DEBS_QUALITY))
	@python3 -c "import pesq, numpy, scipy" 2>/dev/null || pip install -q pesq numpy scipy
	swift build -c release $(SWIFT_FLAGS)
	python3 Benchmarks/quality/measure.py --profile $(PROFILE) --runs $(RUNS)

## make bench-peer: Janus AudioBridge and Parley side by side in mix mode, same room shapes and senders, one run.
DEBS_PEER := $(DEBS_RUN) janus ffmpeg curl
bench-peer: deps-run
	$(call install_missing,$(DEBS_PEER))
	swift build -c release $(SWIFT_FLAGS) --product parley-relay
	swift build -c release $(SWIFT_FLAGS) --product parley
	python3 Benchmarks/peer/bench-peer.py

## make fuzz: the eight libFuzzer targets (rtp rtcp signalling token envelope stun sdp cascade: Tests/Fuzz/run.sh says
## what each drives), FUZZ_RUNS executions each (default 1,000,000), FUZZ_JOBS at a time (default 2, the machine's
## cores); FUZZ_SECONDS=S runs each for S seconds instead.
## make fuzz-merge: after make fuzz, add to Tests/Fuzz/corpus what it found that brings new coverage (nothing there
## changes). make fuzz-minimize: rebuild that corpus as the smallest set covering it all (the named seeds stay).
FUZZ_RUNS ?= 1000000
FUZZ_JOBS ?= 2
FUZZ_SECONDS ?=
fuzz:
	$(call install_missing,$(DEBS_FUZZ))
	Tests/Fuzz/run.sh $(if $(FUZZ_SECONDS),--seconds $(FUZZ_SECONDS),--runs $(FUZZ_RUNS)) --jobs $(FUZZ_JOBS)

fuzz-merge:
	$(call install_missing,$(DEBS_FUZZ))
	Tests/Fuzz/run.sh --merge

fuzz-minimize:
	$(call install_missing,$(DEBS_FUZZ))
	Tests/Fuzz/run.sh --minimize

clean:
	rm -rf .build
