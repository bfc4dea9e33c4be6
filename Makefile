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
# Bump when the packages installed in the environments change, so existing ones are redone.
ENV_STAMP := .ready-4
PIP_FLAGS := --disable-pip-version-check --quiet

.PHONY: build venvs test test-rust test-py conformance demo bench bench-run bench-check bench-e2e bench-e2e-run scan-floor lint clean

# --- environments -------------------------------------------------------------------------

$(VENVS)/py%/$(ENV_STAMP):
	@py="$(PYTHON_$*)"; core="$(CORE_$*)"; \
	 [ -n "$$py" ] || { echo "no Python for py$* found (pyenv or PATH)"; exit 1; }; \
	 echo "== creating $(VENVS)/py$* with $$py and ansible-core $$core"; \
	 rm -rf "$(VENVS)/py$*"; "$$py" -m venv "$(VENVS)/py$*"; \
	 "$(VENVS)/py$*/bin/pip" install $(PIP_FLAGS) --upgrade pip; \
	 "$(VENVS)/py$*/bin/pip" install $(PIP_FLAGS) "ansible-core==$$core" $(TEST_DEPS) $(if $(filter 311,$*),maturin) $(if $(filter 313,$*),$(BENCH_DEPS_313)) $(if $(filter 312,$*),$(COLLECTIONS_312) $(BENCH_DEPS_312)); \
	 touch "$@"

venvs: $(VENVS)/py311/$(ENV_STAMP) $(VENVS)/py312/$(ENV_STAMP) $(VENVS)/py313/$(ENV_STAMP)

# --- build ---------------------------------------------------------------------------------

# One abi3 wheel, built once with the 3.11 environment's maturin, installed in all three.
build: $(VENVS)/py311/$(ENV_STAMP)
	@rm -rf "$(WHEELDIR)"
	"$(VENVS)/py311/bin/maturin" build --release --quiet -i "$(VENVS)/py311/bin/python" --out "$(WHEELDIR)"
	@for v in 311 312 313; do \
	   if [ -f "$(VENVS)/py$$v/$(ENV_STAMP)" ]; then \
	     "$(VENVS)/py$$v/bin/pip" install $(PIP_FLAGS) --force-reinstall --no-deps "$(WHEELDIR)"/*.whl; \
	   fi; \
	 done

# --- tests ---------------------------------------------------------------------------------

# The conformance runner goes before pytest: it unpacks the sdists that some tests read.
test: export ANSIBLE_ACCEL_REQUIRE_SDIST := 1
test: venvs build test-rust conformance test-py conformance-integration-smoke bench-check

test-rust:
	cargo test --quiet

test-py:
	@for v in 311 312 313; do \
	   echo "== pytest on py$$v"; \
	   "$(VENVS)/py$$v/bin/python" -m pytest -q -p no:cacheprovider tests || exit $$?; \
	 done

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

demo: $(VENV_DEMO)/$(ENV_STAMP) build
	"$(VENV_DEMO)/bin/python" tests/demo/run_demo.py

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
# benchmark that fails, fails the target; the times are printed, never checked.
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
	 || "$(VENVS)/py312/bin/pip" install $(PIP_FLAGS) "$(MITOGEN)" \
	 || echo "== $(MITOGEN) could not be installed in $(VENVS)/py312: the mitogen mode will be skipped"
	"$(VENVS)/py312/bin/python" -m benches.e2e --python "$(VENVS)/py312/bin/python" \
	  --python "$(VENVS)/py313/bin/python" --json "$(ROOT)/bench-results/e2e$(if $(QUICK),-quick).json" \
	  --markdown "$(ROOT)/$(if $(QUICK),bench-results/e2e-quick.md,benches/results/e2e.md)" $(if $(QUICK),--quick)

# How far a native import scan can beat compile() + ModuleDepFinder on ruff's parser: the
# scan's stages over ansible-core's module_utils, parse alone being the floor (2.21 and 2.22).
scan-floor: venvs build
	for py in py312 py313; do "$(VENVS)/$$py/bin/python" -m benches.scan_floor || exit 1; done

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

fuzz-malloc:
	PYTHONMALLOC=debug "$(VENVS)/py313/bin/python" -m pytest -q -p no:cacheprovider tests
