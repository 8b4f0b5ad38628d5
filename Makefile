# The one entry point: `make demo`, `make test`, `make ci` (what .ci/run calls).
CARGO ?= cargo

.PHONY: all build build-debug test test-deps test-slurm lint fmt clippy ci demo install uninstall clean help test-browser bench

all: build

help:
	@echo "make demo     build everything and run the example mission with the scripted agent"
	@echo "make test     build the binaries and run every test (unit and end-to-end)"
	@echo "make test-slurm  start a single-node Slurm cluster here and run missions through it"
	@echo "make lint     cargo fmt --check and cargo clippy -D warnings"
	@echo "make ci       lint and test (what .ci/run runs)"
	@echo "make build    release build of the binaries (what run.sh uses)"
	@echo "make install  install the \`harness\` command into PREFIX/bin (PREFIX=~/.local by default)"
	@echo "make uninstall  remove what \`make install\` installed (never the identity it seeded)"

build:
	$(CARGO) build --release --workspace --bins

# The end-to-end tests drive the debug binaries, so they are built first.
build-debug:
	$(CARGO) build --workspace --bins

test: build-debug test-deps
	$(CARGO) test --workspace

# The sandbox's tests need bubblewrap: installed here when missing (Debian/Ubuntu, as root). Where
# it cannot be, those tests say so, and fail under CI=true. The genuine Claude Code CLI, for the test
# that runs it in the sandbox, goes into a cache outside the repository (skipped, said, without npm).
CLAUDE_CACHE ?= $(HOME)/.cache/harness-tests/claude-code
test-deps:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && { apt-get install -y -qq bubblewrap >/dev/null 2>&1 \
	       || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq bubblewrap >/dev/null 2>&1; }; }; } \
	  || echo "make test: bubblewrap (bwrap) is missing and could not be installed (apt-get install bubblewrap)" >&2
	@test -x "$(CLAUDE_CACHE)/node_modules/.bin/claude" || { command -v npm >/dev/null 2>&1 \
	  && mkdir -p "$(CLAUDE_CACHE)" && npm install --prefix "$(CLAUDE_CACHE)" --no-audit --no-fund --silent \
	     @anthropic-ai/claude-code >/dev/null 2>&1; } \
	  || echo "make test: Claude Code could not be installed with npm; its sandbox test will say it is skipped" >&2

# A real single-node Slurm cluster on this machine (tests/slurm/cluster.sh: installs slurm-wlm and
# munge when missing, which needs root) runs missions as one job per feature. One test at a time:
# each starts its own cluster.
test-slurm: build-debug
	$(CARGO) test -p harness-tests --test slurm -- --ignored --test-threads=1

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

ci: lint test

demo: build
	./examples/demo.sh

# The benchmarks of BENCHMARKS.md (not part of `make test`): about 12 minutes on 2 cores, the
# overhead section ~7 of them. The Markdown report goes to target/bench/report.md, then to
# stdout; progress to stderr.
bench: build
	@mkdir -p target/bench
	./target/release/harness-bench >target/bench/report.md
	@cat target/bench/report.md

# Opt-in: runs a scripted mission, opens its report in headless Chromium (Debian's `chromium`)
# and saves screenshots into docs/ (tests/browser/screenshot.sh --help).
test-browser:
	./tests/browser/screenshot.sh

# `make install`: the `harness` command in PREFIX/bin, a link to run.sh in PREFIX/lib/harness, which
# holds everything else a run needs: bin/ (the release binaries), roles/ and identity/ (the seed of
# the user's identity, $XDG_DATA_HOME/harness/identity, made from it on first use). Each file is put
# in place by a rename, so that a mission running during an upgrade keeps its old files whole.
# BIN_DIR=<dir> installs binaries built already (the tests install their debug build so).
PREFIX ?= $(HOME)/.local
INSTALL_HOME = $(PREFIX)/lib/harness
INSTALL_COMMAND = $(PREFIX)/bin/harness
INSTALL_BINARIES = worker validator planner curator scripted-agent
# What is installed under INSTALL_HOME: one list for install and uninstall.
INSTALL_FILES = run.sh $(addprefix bin/,$(INSTALL_BINARIES)) $(wildcard roles/*.md) $(wildcard identity/*.md)
INSTALL_SOURCE_BIN = $(or $(BIN_DIR),target/release)

install: $(if $(BIN_DIR),,build)
	@set -e; \
	for binary in $(INSTALL_BINARIES); do \
	  test -x '$(INSTALL_SOURCE_BIN)'/$$binary || { \
	    echo "make install: error: no $$binary in $(INSTALL_SOURCE_BIN)" >&2; \
	    echo "hint: run \`make build\`, or give BIN_DIR=<the directory of the built binaries>" >&2; exit 1; }; \
	done; \
	install -d '$(INSTALL_HOME)/bin' '$(INSTALL_HOME)/roles' '$(INSTALL_HOME)/identity' '$(dir $(INSTALL_COMMAND))'; \
	for file in $(INSTALL_FILES); do \
	  case $$file in \
	    bin/*) source='$(INSTALL_SOURCE_BIN)'/$${file#bin/} mode=755 ;; \
	    run.sh) source=$$file mode=755 ;; \
	    *) source=$$file mode=644 ;; \
	  esac; \
	  install -m $$mode "$$source" '$(INSTALL_HOME)'/$$file.new; \
	  mv -f '$(INSTALL_HOME)'/$$file.new '$(INSTALL_HOME)'/$$file; \
	done; \
	ln -sfn ../lib/harness/run.sh '$(INSTALL_COMMAND)'; \
	echo "installed $(INSTALL_COMMAND) -> $(INSTALL_HOME)/run.sh"; \
	case ":$$PATH:" in *':$(PREFIX)/bin:'*) ;; *) echo "note: $(PREFIX)/bin is not on your PATH" ;; esac

# Removes exactly what `make install` put there (and what an interrupted one left half-copied);
# the user's identity directory is never touched.
uninstall:
	rm -f '$(INSTALL_COMMAND)' $(foreach file,$(INSTALL_FILES),'$(INSTALL_HOME)'/$(file) '$(INSTALL_HOME)'/$(file).new)
	-rmdir '$(INSTALL_HOME)/bin' '$(INSTALL_HOME)/roles' '$(INSTALL_HOME)/identity' '$(INSTALL_HOME)' 2>/dev/null

clean:
	$(CARGO) clean
