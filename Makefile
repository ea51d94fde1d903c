# Parley — set-up, build, test. Every target installs the Debian packages it needs when they are missing
# (apt-get update only when something must be installed).
SHELL := /bin/bash
export PATH := /opt/swift/usr/bin:$(PATH)

# Packages by use, each list in one place. RUN: building and running the relay and client. TEST: plus every program a
# test starts (Tests/ParleyIntegrationTests/ExternalProgram.swift names them; a test fails when one is missing here).
DEBS_RUN  := pkg-config libopus-dev libasound2-dev libsodium-dev libspeexdsp-dev libmicrohttpd-dev libsrtp2-dev libssl-dev libhiredis-dev libogg-dev libopusenc-dev libsqlite3-dev zlib1g-dev libcurl4-openssl-dev libre-dev libspandsp-dev
# FUZZ: the libFuzzer targets (Tests/Fuzz/run.sh). `swiftc -sanitize=fuzzer` links the toolchain's libclang_rt.fuzzer,
# a C++ library, with -lstdc++ (libstdc++-12-dev; without it the link fails on undefined __cxa_* symbols); the token target
# links libsodium, the stun and sdp targets OpenSSL (ParleyWebRTC), the sip target libre. The fuzzers run in `make test` too.
DEBS_FUZZ := libsodium-dev libssl-dev libstdc++-12-dev libre-dev
DEBS_TEST := $(sort $(DEBS_RUN) $(DEBS_FUZZ) espeak-ng curl ffmpeg openssl tcpdump tshark gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad chromium python3 python3-minimal python3-venv python3-dev build-essential redis-server redis-tools util-linux mount iproute2 nftables coturn prometheus systemd baresip-core sip-tester)
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

.PHONY: run test unit format-check build release deps-run deps-test package package-check fuzz fuzz-merge fuzz-minimize bench soak quality bench-peer clean

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

## make package: .build/dist/parley_VERSION_ARCH.deb — parley-relay and parley built with the Swift runtime linked in
## (so the package needs only Debian's libraries), the systemd unit, /etc/parley/relay.json (a conffile), the docs
## (Samples/debian/build-deb.sh). make package-check installs it into a fresh Debian 12 chroot (debootstrap; the
## first run downloads it) and serves a join there (Samples/debian/check-in-chroot.sh).
package: deps-run
	$(call install_missing,binutils dpkg-dev)
	swift build -c release --static-swift-stdlib --scratch-path .build/static $(SWIFT_FLAGS) --product parley-relay
	swift build -c release --static-swift-stdlib --scratch-path .build/static $(SWIFT_FLAGS) --product parley
	Samples/debian/build-deb.sh

package-check: package
	$(call install_missing,debootstrap systemd iproute2)
	Samples/debian/check-in-chroot.sh .build/dist/parley_*.deb

build: deps-run
	swift build $(SWIFT_FLAGS)

## make test: install, build, run every test (unit, integration with real processes on loopback), then the eight fuzz
## targets for FUZZ_RUNS executions (after the tests, never beside them: the process tests are real-time).
## FUZZ_RUNS=0 skips the fuzzers.
test: deps-test $(INTEROP_VENV)/ready
	swift build $(SWIFT_FLAGS) --build-tests
	swift test $(SWIFT_FLAGS) --skip-build
	@if [ "$(FUZZ_RUNS)" != 0 ]; then Tests/Fuzz/run.sh --runs $(FUZZ_RUNS) --jobs $(FUZZ_JOBS); fi

## make unit: build, then run every pure, deterministic suite: wire tables, the cores on a manual clock and a fake
## network, files in a temporary directory, the HTTP server on loopback inside the test. No process is started and no
## program beyond the toolchain is needed (only DEBS_RUN's libraries, to build), so it is what to run between edits.
## UNIT_SKIP names what only `make test` runs, as `swift test --skip` patterns on test ids (Target.Suite/test): a
## list here rather than Swift Testing tags, so that the tier is one list a reader of this file can check and no test
## file knows about tiers (a new process test goes under ProcessTests and is skipped with it). Skipped:
##  - ProcessTests: every suite of ParleyIntegrationTests that starts relays and clients (and Chromium, ffmpeg,
##    GStreamer, Redis, coturn, tshark, tcpdump, curl, aiortc) is nested under it;
##  - ExternalProgramTests/everyProgramIsInstalled: that this machine has DEBS_TEST's programs (make test installs
##    them);
##  - RedisTextArchiveTests: a redis-server per test; DTLSCertificateTests/opensslCommandLine: runs openssl x509;
##  - waits on the wall clock, timed in a serial run (2026-12-03): TextStoreTests/lockedDatabase waits out SQLite's
##    busy timeout (4.1 s), EventStreamLimitTests/tokenExpires a token's expiry (2.0 s),
##    AttachmentServerTests/slowUploadCutOff an upload's deadline (1.3 s); FanOutRingTests/twoThreads races two threads
##    for 1.9 s (the interleaving is the scheduler's). The other tests over a second are pure computation and stay:
##    JoinFairnessTests (10.3 s, a join flood on the manual clock), a jitter buffer's ten minutes of clock skew (3.2 s),
##    EndToEndCallTests (3.2 s), OpusRoundTripTests' stereo (1.4 s).
## Time once built (`make unit` whole: the no-op build and the run), 2026-12-03 on this 2-core machine shared with
## other builds: 21.4, 22.7, 22.9 s (median 22.7 s, spread 1.5 s) while they were light; 38.4, 33.3, 38.6 s (median
## 38.4 s, spread 5.3 s) beside a fuzzer and two callgrind runs. Its CPU time is steady, 22.9-24.0 s user in all six.
## It runs 1,062 of the 1,076 tests that `swift test --skip ProcessTests` runs (39 s in the first state), and of the
## 1,166 that `make test` runs before its fuzzers.
UNIT_SKIP := ProcessTests ExternalProgramTests/everyProgramIsInstalled RedisTextArchiveTests \
             DTLSCertificateTests/opensslCommandLine TextStoreTests/lockedDatabase \
             EventStreamLimitTests/tokenExpires AttachmentServerTests/slowUploadCutOff FanOutRingTests/twoThreads
unit: deps-run
	swift build $(SWIFT_FLAGS) --build-tests
	swift test $(SWIFT_FLAGS) --skip-build $(addprefix --skip ,$(UNIT_SKIP))

## make format-check [FILES="a.swift b.swift"]: swift-format's lint with .swift-format (120 columns, 4-space indent,
## the rules the tree already keeps) on FILES, by default every Swift file changed against main's merge base
## (committed or not, untracked too; FORMAT_BASE=COMMIT names another base). It reports only the lines written since
## that base (lines moved from elsewhere in the diff, re-indented or not, are not new): the configuration is for new
## code, and old code over 120 columns (3,807 Swift lines on 2026-12-03, 1,466 of them in Sources) is left as is,
## never reformatted. swift-format cannot be told to accept the house's alignment (its pretty-printer's findings cannot
## be turned off, swiftlang/swift-format#764), so its layout findings (Indentation, Spacing, AddLines, RemoveLine,
## LineLength, TrailingComma, EndOfLineComment) are dropped: continuation lines aligned under their open bracket and
## byte tables' aligned comments are how this code is written. The 120 columns are counted here instead, in
## characters. The rules kept (ordered imports, every public symbol documented, `///` doc comments, no parentheses
## around conditions, lowerCamelCase, for-where, ...) hold for nearly all the tree already; `;` between short
## statements, several `case`s or variables on one line, and doc comments that open with more than a one-line summary
## are house habits, so those rules are off. Fails when anything is reported.
FORMAT_BASE ?= $(shell git merge-base HEAD main 2>/dev/null)
FILES ?= $(shell { git diff --name-only --diff-filter=d $(FORMAT_BASE) -- '*.swift'; git ls-files --others --exclude-standard -- '*.swift'; } 2>/dev/null | sort -u)
FORMAT_LAYOUT := Indentation|Spacing|AddLines|RemoveLine|LineLength|TrailingComma|EndOfLineComment
# The diff whose added lines are new code: added lines git finds removed elsewhere in it are coloured newMoved (blue).
FORMAT_DIFF := git -c color.diff.new=green -c color.diff.newMoved=blue diff --color=always --color-moved=plain \
               --color-moved-ws=allow-indentation-change -U0 --no-ext-diff -M --src-prefix=a/ --dst-prefix=b/
# "path:line" for each new line of that diff.
FORMAT_NEW_LINES := { raw = $$0; gsub(/\033\[[0-9;]*m/, "") } /^\+\+\+ b\// { f = substr($$0, 7); next } \
                    /^@@/ { split($$3, a, ","); line = substr(a[1], 2); next } /^\+/ { if (raw !~ /^\033\[34m/) print f ":" line; line++ }
format-check:
	@command -v swift >/dev/null || { echo "swift 6 is not on PATH (expected /opt/swift/usr/bin): install the Swift 6 toolchain"; exit 1; }
	@test -n "$(FORMAT_BASE)" || { echo "format-check: no merge base with main; name one with FORMAT_BASE=COMMIT"; exit 1; }
	@files="$(filter %.swift,$(FILES))"; \
	if [ -z "$$files" ]; then echo "format-check: no Swift file changed since $(FORMAT_BASE)"; exit 0; fi; \
	mkdir -p .build; new=.build/format-check-new-lines; \
	$(FORMAT_DIFF) $(FORMAT_BASE) -- '*.swift' | awk '$(FORMAT_NEW_LINES)' > $$new; \
	for f in $$(git ls-files --others --exclude-standard -- $$files); do awk -v f="$$f" '{ print f ":" NR }' "$$f"; done >> $$new; \
	found=$$( { swift format lint --configuration .swift-format $$files 2>&1 | grep -Ev '\[($(FORMAT_LAYOUT))\]'; \
	            for f in $$files; do LC_ALL=C.UTF-8 grep -nP '^.{121,}' "$$f" | sed -E "s|^([0-9]+):.*|$$f:\1:121: warning: [LineLength] over 120 characters|"; done; } \
	          | awk -F: 'NR == FNR { new[$$1 ":" $$2]; next } ($$2 !~ /^[0-9]+$$/ || ($$1 ":" $$2) in new) && !seen[$$0]++' $$new - ); \
	count=$$(printf '%s' "$$found" | grep -c .); \
	echo "format-check: $$(echo $$files | wc -w) files, $$(grep -cF -f <(printf '%s:\n' $$files) $$new) new lines since $(FORMAT_BASE): $$count findings"; \
	if [ "$$count" -gt 0 ]; then printf '%s\n' "$$found"; exit 1; fi

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
	python3 Benchmarks/scripts/quality/measure.py --profile $(PROFILE) --runs $(RUNS)

## make bench-peer: Janus AudioBridge and Parley side by side in mix mode, same room shapes and senders, one run.
DEBS_PEER := $(DEBS_RUN) janus ffmpeg curl
bench-peer: deps-run
	$(call install_missing,$(DEBS_PEER))
	swift build -c release $(SWIFT_FLAGS) --product parley-relay
	swift build -c release $(SWIFT_FLAGS) --product parley
	python3 Benchmarks/scripts/peer/bench-peer.py

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
