# Parley — set-up, build, test. Every target installs the Debian packages it needs when they are missing
# (apt-get update only when something must be installed).
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

# Packages by use, each list in one place. RUN: building and running the relay and client. TEST: plus every program a
# test starts (Tests/ParleyIntegrationTests/ExternalProgram.swift names them; a test fails when one is missing here).
DEBS_RUN  := pkg-config libopus-dev libasound2-dev libsodium-dev libspeexdsp-dev libmicrohttpd-dev
DEBS_TEST := $(DEBS_RUN) espeak-ng curl ffmpeg
# The quality bench: speech, the ffmpeg/libopus baseline; PyPI's pesq, numpy, scipy are installed by the target.
DEBS_QUALITY := $(DEBS_RUN) espeak-ng ffmpeg
DEBS_FUZZ := $(DEBS_RUN)

SWIFT_FLAGS ?=
RELAY_ARGS ?=

.PHONY: run test build release deps-run deps-test fuzz bench soak quality bench-peer clean

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

## make test: install, build, run every test (unit, integration with real processes on loopback).
test: deps-test
	swift build $(SWIFT_FLAGS) --build-tests
	swift test $(SWIFT_FLAGS) --skip-build

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
## RUNS repeats each mode and prints the median (runs through the proxy vary): make quality PROFILE=moderate RUNS=5
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

## make fuzz: one libFuzzer target per parser, FUZZ_SECONDS each (default 60).
FUZZ_SECONDS ?= 60
fuzz: deps-run
	$(call install_missing,$(DEBS_FUZZ))
	Tests/Fuzz/run.sh $(FUZZ_SECONDS)

clean:
	rm -rf .build
