# The one entry point: `make demo`, `make test`, `make ci` (what .ci/run calls).
CARGO ?= cargo

.PHONY: all build build-debug test lint fmt clippy ci demo install clean help test-browser bench

all: build

help:
	@echo "make demo     build everything and run the example mission with the scripted agent"
	@echo "make test     build the binaries and run every test (unit and end-to-end)"
	@echo "make lint     cargo fmt --check and cargo clippy -D warnings"
	@echo "make ci       lint and test (what .ci/run runs)"
	@echo "make build    release build of the binaries (what run.sh uses)"
	@echo "make install  install the binaries into ~/.cargo/bin"

build:
	$(CARGO) build --release --workspace --bins

# The end-to-end tests drive the debug binaries, so they are built first.
build-debug:
	$(CARGO) build --workspace --bins

test: build-debug
	$(CARGO) test --workspace

fmt:
	$(CARGO) fmt --all

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

ci: lint test

demo: build
	./examples/demo.sh

# The benchmarks of BENCHMARKS.md (not part of `make test`): about 10 minutes on 2 cores. The
# Markdown report goes to target/bench/report.md, then to stdout; progress to stderr.
bench: build
	@mkdir -p target/bench
	./target/release/harness-bench >target/bench/report.md
	@cat target/bench/report.md

# Opt-in: runs a scripted mission, opens its report in headless Chromium (Debian's `chromium`)
# and saves screenshots into docs/ (tests/browser/screenshot.sh --help).
test-browser:
	./tests/browser/screenshot.sh

install:
	$(CARGO) install --path crates/worker --root $${CARGO_HOME:-$$HOME/.cargo}
	$(CARGO) install --path crates/scripted-agent --root $${CARGO_HOME:-$$HOME/.cargo}

clean:
	$(CARGO) clean
