# riffle: the two commands a newcomer needs are `make demo` and `make test`.
GO       ?= go
BIN      := bin/riffle
# The race detector (make race) runs the tests of the packages below
# store, node and pir that start goroutines (a `go` statement in any of
# their files: a new one joins by itself). The others start none: node's
# and node/client's race binaries instrument them and drive them from many
# goroutines (docs/testing.md, "The race pass"). make test runs it over
# the packages whose race build leaves libp2p out (RACE_SMALL): compiling
# libp2p and node with the detector costs about as much CPU as the rest
# of CI's compiling (docs/testing.md, "What make test costs").
GO_STMT := ^[[:space:]]*go ([[:alnum:]_.]+[(]|func)
RACE_PKGS = $(shell grep -rlE '$(GO_STMT)' --include='*.go' store node pir | xargs -n1 dirname | sort -u | sed 's|^|./|')
RACE_SMALL := ./store ./pir
# make test's and make test-serial's flags.
TESTFLAGS := -tags riffletest -count=1 -timeout 30m -vet=off
# The race pass leaves the curve arithmetic uninstrumented: it computes on
# values its caller owns and starts no goroutine, and its instrumented
# limb operations were half the race pass's CPU (docs/testing.md, "What
# make test costs"). Every package of the module stays instrumented.
RACEFLAGS := -race -short -gcflags=filippo.io/edwards25519/...=-race=false -gcflags=crypto/internal/fips140/edwards25519/...=-race=false
# How many seeds `make swarm` runs.
SEEDS    ?= 100

.PHONY: all build paper demo test test-serial race vet fmt-check lint bench soak swarm fuzz clean netns race-select

all: build

# The first build fetches the modules and compiles libp2p and the rest
# with nothing to show for minutes: say so first (figures in README.md).
build:
	@echo "building riffle (first build fetches modules and compiles: about 2 minutes on 2 cores, more on a loaded machine)…"
	$(GO) build -trimpath -o $(BIN) ./cmd/riffle

# riffle with `riffle bench --paper`: the report's plots link gonum's
# plotting, which no other build needs (cmd/riffle/internal/benchreport/plots.go).
paper:
	$(GO) build -trimpath -tags paper -o $(BIN) ./cmd/riffle

demo: build
	./$(BIN) demo

vet:
	$(GO) vet -tags riffletest ./...
	$(GO) vet ./... # tests without the tag compile too (go test ./... by hand)
	$(GO) vet -tags riffletest,paper ./cmd/riffle/internal/benchreport/

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# staticcheck over the build the tests use (node's hooks, the paper's
# plots), and govulncheck against the Go vulnerability database, which
# scripts/vulncheck fetches as a module (docs/testing.md, Static checks:
# what they cost, on a fresh machine the most).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint:
	$(GO) run $(STATICCHECK) -tags riffletest,paper ./...
	$(GO) run ./scripts/vulncheck

# Every test (the full pass), and beside it the race detector over
# RACE_SMALL (in -short mode, docs/testing.md): the race pass's output
# follows the full pass's, and either failing fails the target. Both
# passes run with -vet=off: vet, a prerequisite, has run every analyzer
# over the same files and tags (go test's own vet is a subset of them,
# run again in each pass).
# node's network tests run in virtual time on an in-memory network and use
# the CPU; a few run real libp2p on loopback, and cmd/riffle's run real
# processes in real time, up to 8 at once, waiting more than computing.
# Tests that need node's hooks carry the riffletest build tag
# (node/hooks.go). What each part costs: docs/testing.md, "What make test
# costs".
test: vet fmt-check
	@racelog=$$(mktemp); trap 'rm -f "$$racelog"' EXIT; \
	$(GO) test $(TESTFLAGS) $(RACEFLAGS) $(RACE_SMALL) >"$$racelog" 2>&1 & race=$$!; \
	echo "$(GO) test $(TESTFLAGS) ./..."; \
	full=0; $(GO) test $(TESTFLAGS) ./... || full=$$?; \
	racerc=0; wait $$race || racerc=$$?; \
	echo "$(GO) test $(TESTFLAGS) $(RACEFLAGS) $(RACE_SMALL)"; \
	cat "$$racelog"; \
	if [ $$full -ne 0 ] || [ $$racerc -ne 0 ]; then echo "make test: full pass exited $$full, race pass $$racerc"; exit 1; fi

# The race detector over node and every package that starts goroutines,
# node's tests as node/racepass_test.go selects them (docs/testing.md,
# "The race pass"): about 7 minutes of CPU, half of it compiling libp2p
# and node with the detector. Run it before landing a change to how
# goroutines share state.
race:
	$(GO) test $(TESTFLAGS) $(RACEFLAGS) $(RACE_PKGS)

# The same as make test, one pass after the other, one package at a time
# (what each part costs: docs/testing.md, "What make test costs").
test-serial: vet fmt-check
	$(GO) test $(TESTFLAGS) -p 1 ./...
	$(GO) test $(TESTFLAGS) -p 1 $(RACEFLAGS) $(RACE_SMALL)

# Which of node's tests the race pass runs (docs/testing.md, "The race
# pass"): rewrites node/racepass_test.go. Rerun it when node's tests or
# code change much; it runs the race pass whole once, one test at a time,
# and each test alone under -cover: tens of minutes of CPU, niced.
race-select:
	nice $(GO) run ./scripts/raceselect -raceflags "$(RACEFLAGS)"

# Seeded runs of whole networks under random faults, in virtual time
# (node/swarm_test.go): seeds 1..SEEDS (SEEDS=A-B: seeds A..B), then the
# seeds kept at sizes of their own (swarmSizedSeeds); a failure prints the
# command that replays its seed.
swarm:
	RIFFLE_SWARM_SEEDS=$(SEEDS) $(GO) test -tags riffletest -count=1 -run '^TestSwarm$$' -timeout 0 -v ./node/

bench:
	$(GO) test -tags riffletest -run '^$$' -bench . -benchtime 2x ./...

# Servers and groups of clients each in their own Linux network namespace,
# each server's link capped with tc tbf (needs root; skipped elsewhere).
netns: build
	sh scripts/netns.sh ./$(BIN)

# Every test with RIFFLE_LONG=1: the cases and trials the full pass
# leaves out for their cost (each names itself; docs/testing.md).
.PHONY: long
long:
	RIFFLE_LONG=1 $(GO) test -tags riffletest -count=1 -timeout 0 ./...

soak:
	RIFFLE_SOAK=1 $(GO) test -tags riffletest -count=1 -run Soak -timeout 60m ./...

fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -tags riffletest -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$f"; $(GO) test -tags riffletest -run '^$$' -fuzz "^$$f$$" -fuzztime 20s $$pkg || exit 1; \
	  done; \
	done

clean:
	rm -rf bin

# Every adversary test (node/adversary_*_test.go) at the default R = 256
# and k = 1, chunks of 1 KiB, at least 200 trials a strategy, one
# test at a time; hours of CPU (docs/bench/anonymity.md).
.PHONY: adversary
adversary:
	RIFFLE_ADVERSARY_FULL=1 $(GO) test -tags riffletest -count=1 -p 1 -run '^TestAdversary' -timeout 0 -v ./node/

# How long a share and a get wait (issue 28 item 2; docs/operator.md, "How
# long a share and a get wait"): networks of 16 and 64 clients in virtual
# time at the default parameters, chunks at 16 KiB; minutes of CPU, niced.
# RIFFLE_WAITS=16,64,200 for n = 200 too.
.PHONY: waits
waits:
	RIFFLE_WAITS=$${RIFFLE_WAITS:-16,64} RIFFLE_WAITS_PAIRS=$${RIFFLE_WAITS_PAIRS:-4} nice $(GO) test -tags riffletest -count=1 -run '^TestWaits$$' -timeout 0 -v ./node/
