# riffle: the two commands a newcomer needs are `make demo` and `make test`.
GO       ?= go
BIN      := bin/riffle
# Packages whose concurrency matters run under the race detector too.
RACE_PKGS := ./store/... ./node/... ./pir/...
# Tests whose time goes mostly to waiting out epochs (presence draws,
# probation, leader rotation, a refusal budget spent over epochs), to
# statistics, or to malicious-server cases whose blame code the round-blame
# tests run under the detector too, run once, without it: under it they add
# minutes to the suite and little that the others miss.
RACE_SKIP := TestAdversaryLinks|TestAdversarySpoiledAnswers|TestAdversaryIndexGap|TestRefusalBudget|TestCastServerSwaps|TestCastWithholdsPublication|TestControlSocket|TestLocalWorkDoesNotDelay|TestJobWaitsForPresence|TestProbation|TestAllowServer|TestRotatingLeader|TestSilentLeader|TestRequireServer|TestSnapshots

.PHONY: all build demo test test-serial vet fmt-check bench soak fuzz clean netns

all: build

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/riffle

demo: build
	./$(BIN) demo

vet:
	$(GO) vet -tags riffletest ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

# Tests that need the hooks carry the riffletest build tag (node/hooks.go).
# The suite runs in three streams side by side (scripts/test.sh): its
# end-to-end tests mostly wait out epochs on loopback. Within a stream,
# packages run one at a time (-p 1).
test: vet fmt-check
	GOFLAGS="$$GOFLAGS -tags=riffletest" sh scripts/test.sh '$(GO)' '$(RACE_SKIP)'

# The same tests, one after another (about twice as long).
test-serial: vet fmt-check
	$(GO) test -tags riffletest -count=1 -p 1 ./...
	$(GO) test -tags riffletest -count=1 -p 1 -race -short -skip '$(RACE_SKIP)' $(RACE_PKGS)

bench:
	$(GO) test -tags riffletest -run '^$$' -bench . -benchtime 2x ./...

# Servers and groups of clients each in their own Linux network namespace,
# each server's link capped with tc tbf (needs root; skipped elsewhere).
netns: build
	sh scripts/netns.sh ./$(BIN)

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
