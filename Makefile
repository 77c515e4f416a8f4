# wirepath — run `make help` for the targets.
SHELL      := /bin/bash
GO         ?= go
BIN        := bin
WIREPATH   := $(BIN)/wirepath
CC         ?= cc
# The LD_PRELOAD capture library (preload/libwpcap), built with the system compiler.
WPCAP      := $(BIN)/libwpcap.so
WPCAP_CFLAGS := -Wall -Wextra -O2 -fPIC -shared -U_FORTIFY_SOURCE
FUZZTIME   ?= 20s
BENCHTIME  ?= 1s
TESTBED_OUT ?= /tmp/wirepath-testbed
# Packages whose tests also run under the race detector: all of them (about
# a minute on 2 cores); the readers, merge, pipeline and engines use goroutines.
RACE_PKGS  ?= ./...
# Debian packages the tests need: real capture tools, network namespaces,
# NAT, the C compiler for the LD_PRELOAD library, strace, a browser for the
# HTML report test, graphviz for the DOT report test, the testbed's
# services (testbed/: nginx, Redis, memcached, dnsmasq, Python 3), and the
# real servers and clients the protocol decoders are tested against
# (proto/...; setpriv is in util-linux; openssl for TLS suites Go cannot make),
# and libpcap-dev: the capture filters (-f) are compiled by libpcap (cgo).
DEB_PKGS   := tcpdump tshark iproute2 iptables nftables gcc libc6-dev make strace curl zstd chromium graphviz \
	nginx redis-server redis-tools memcached dnsmasq-base python3 \
	postgresql mariadb-server mariadb-client util-linux openssl libpcap-dev

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-10s %s\n", $$1, $$2}'

.PHONY: deps
deps: ## install the Debian packages the tests need (only those missing)
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@$(GO) mod download

.PHONY: build
build: preload ## build bin/wirepath and bin/libwpcap.so
	@mkdir -p $(BIN)
	$(GO) build -buildvcs=auto -o $(WIREPATH) ./cmd/wirepath

.PHONY: preload
preload: $(WPCAP) ## build the LD_PRELOAD capture library bin/libwpcap.so

$(WPCAP): preload/libwpcap/wpcap.c
	@mkdir -p $(BIN)
	$(CC) $(WPCAP_CFLAGS) -o $@ $< -ldl -lpthread

.PHONY: vet
vet: ## go vet and gofmt check
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: test
test: deps build vet ## vet, all tests, race tests, benchmark smoke run
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race $(RACE_PKGS)
	$(GO) test -count=1 -run='^$$' -bench=. -benchtime=1x ./... >/dev/null

.PHONY: bench
bench: build ## benchmarks (go test -bench) with allocations and throughput
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) ./...

.PHONY: bench-merge
bench-merge: ## wirepath merge vs mergecap + editcap -D on 1.2 M generated records
	scripts/bench-merge.sh

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME (default 20s, about 15 minutes) and print executions per target
	FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

.PHONY: demo
demo: ## run wirepath analyze on the demo captures (testdata/demo); builds bin/wirepath only (no C compiler needed)
	@mkdir -p $(BIN)
	@$(GO) build -o $(WIREPATH) ./cmd/wirepath
	@scripts/demo.sh

.PHONY: testbed
testbed: ## as root: the real testbed, every variant, analysed and scored (testbed/run.sh; about 15 minutes)
	testbed/run.sh $(TESTBED_OUT)

.PHONY: clean
clean: ## remove build output
	rm -rf $(BIN)

.PHONY: man
man: ## write the man pages (one per command, from the cobra tree) to bin/man
	$(GO) run ./cmd/wirepath/internal/genman -o $(BIN)/man
