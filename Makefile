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
# The linters `make vet` runs, pinned, installed from the Go module proxy
# into bin/tools (only when missing or of another version).
TOOLS      := $(CURDIR)/$(BIN)/tools
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOCYCLO     := github.com/fzipp/gocyclo/cmd/gocyclo@v0.6.0
# Jaeger all-in-one, for the test of the OTLP export against a real Jaeger
# (cmd/wirepath/jaeger_test.go). Its module has replace directives, so it is
# built from a module of its own (tools/jaeger/go.mod, a `tool` directive
# pinning the version) into bin/tools, and only when missing or of another
# version: the first build takes minutes, later ones come from the build cache.
JAEGER_VERSION := v1.76.0
# The size rule of docs/architecture.md ("Small functions"): no function
# outside tests, testdata and generated code above cyclomatic complexity
# CYCLO_MAX or FUNC_LINES lines, and at most CYCLO_FEW above CYCLO_WARN.
CYCLO_MAX  := 40
CYCLO_WARN := 25
CYCLO_FEW  := 15
FUNC_LINES := 150
# gocyclo's -ignore: test files, testdata, and files with the generated-code
# header (https://go.dev/s/generatedcode).
GENERATED  = $(shell grep -rlE '^// Code generated .* DO NOT EDIT\.$$' --include='*.go' . 2>/dev/null | sed 's|^\./||' | paste -sd'|' -)
CYCLO_SKIP = _test\.go$$|(^|/)testdata/$(if $(GENERATED),|^($(GENERATED))$$)
# Debian packages the tests need: real capture tools, network namespaces,
# NAT, the C compiler for the LD_PRELOAD library, strace, a browser for the
# HTML report test, graphviz for the DOT report test, the testbed's
# services (testbed/: nginx, Redis, memcached, dnsmasq, Python 3), and the
# real servers and clients the protocol decoders are tested against
# (proto/...; setpriv is in util-linux; openssl for TLS suites Go cannot make),
# libpcap0.8: the capture filters (-f) are compiled by libpcap, loaded at
# run time (no cgo, no headers); ethtool turns offloads off around the
# testbed's delaying forwarder (SHIM=); g++ (libstdc++) for the DuckDB
# library that tables/sqltest links through cgo to read the --parquet
# tables back (wirepath itself builds without cgo).
DEB_PKGS   := tcpdump tshark iproute2 iptables nftables gcc libc6-dev make strace curl zstd chromium graphviz \
	nginx redis-server redis-tools memcached dnsmasq-base python3 \
	postgresql mariadb-server mariadb-client util-linux openssl libpcap0.8 ethtool g++

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
vet: tools ## go vet, gofmt, staticcheck and the function-size rule
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(TOOLS)/staticcheck ./...
	@$(MAKE) --no-print-directory complexity

.PHONY: complexity
complexity: tools ## the function-size rule: gocyclo and tools/funclen (no function above complexity 40 or 150 lines; at most 15 above 25)
	@over=$$($(TOOLS)/gocyclo -over $(CYCLO_MAX) -ignore '$(CYCLO_SKIP)' .); \
	if [ -n "$$over" ]; then echo "cyclomatic complexity above $(CYCLO_MAX):"; echo "$$over"; exit 1; fi
	@few=$$($(TOOLS)/gocyclo -over $(CYCLO_WARN) -ignore '$(CYCLO_SKIP)' .); n=$$(printf '%s' "$$few" | grep -c . || true); \
	if [ "$$n" -gt $(CYCLO_FEW) ]; then echo "$$n functions above cyclomatic complexity $(CYCLO_WARN), at most $(CYCLO_FEW) allowed:"; echo "$$few"; exit 1; fi
	@$(GO) run ./tools/funclen -over $(FUNC_LINES) . || { echo "functions above $(FUNC_LINES) lines (above)"; exit 1; }

.PHONY: tools
tools: ## install the pinned linters (staticcheck, gocyclo) and Jaeger into bin/tools when missing or of another version
	@for pv in $(STATICCHECK) $(GOCYCLO); do \
		pkg=$${pv%@*}; ver=$${pv#*@}; bin=$(TOOLS)/$${pkg##*/}; \
		have=$$($(GO) version -m $$bin 2>/dev/null | awk '$$1 == "mod" { print $$3; exit }'); \
		if [ "$$have" != "$$ver" ]; then \
			echo "installing $$pv into $(TOOLS)"; \
			GOBIN=$(TOOLS) $(GO) install $$pv || exit 1; \
		fi; \
	done
	@have=$$($(GO) version -m $(TOOLS)/jaeger 2>/dev/null | awk '($$1 == "mod" || $$1 == "dep") && $$2 == "github.com/jaegertracing/jaeger" { print $$3; exit }'); \
	if [ "$$have" != "$(JAEGER_VERSION)" ]; then \
		grep -qE 'github.com/jaegertracing/jaeger $(JAEGER_VERSION)( |$$)' tools/jaeger/go.mod || { echo "tools/jaeger/go.mod does not pin Jaeger $(JAEGER_VERSION)"; exit 1; }; \
		echo "building Jaeger $(JAEGER_VERSION) into $(TOOLS) (minutes the first time)"; \
		cd tools/jaeger && $(GO) build -o $(TOOLS)/jaeger github.com/jaegertracing/jaeger/cmd/jaeger || exit 1; \
	fi

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

.PHONY: hostile
hostile: build ## rerun issue 13's hostile-input cases (crafted and cut captures, pipes, -o = input; about 2 minutes) under timeout and ulimit -v
	WIREPATH=$(WIREPATH) scripts/hostile.sh

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
	$(GO) run ./cmd/wirepath/internal/root/genman -o $(BIN)/man
