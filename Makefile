# Commands: `make demo`, `make test` (and `make chaos`, `make fuzz`, `make bench`). They bootstrap .venv on first use (scripts/bootstrap.sh).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := $(or $(ROBOPLAN_VENV),$(CURDIR)/.venv)
export ROBOPLAN_VENV := $(VENV)
PY := $(VENV)/bin/python
# Shared runtime environment (AMENT_PREFIX_PATH, RMW, discovery range, domain id, log dir).
WITH_ENV := source scripts/env.sh &&

PYTEST_ARGS ?=
ARGS ?=
BENCH_OUT ?= build/bench
# bench_node: also the busy-core and ~/solve_ik-stream runs, the latter as 3 interleaved idle/service pairs
# (every node target; ~11 of the ~14 minutes)
BENCH_NODE_ARGS ?= --load --service-pairs 3 --duration 15
# soak: the node for SOAK_DURATION s under a twist, a pose and a ~/solve_ik stream (JSON, PNG in $(SOAK_OUT)/)
SOAK_DURATION ?= 3600
SOAK_OUT ?= build/soak
SOAK_ARGS ?=
# an hour-long run would likely meet a test run's domain (scripts/env.sh picks 1-100): 101 unless set
SOAK_DOMAIN_ID ?= $(or $(ROBOPLAN_ROS_DOMAIN_ID),101)

CHAOS_CYCLES ?= 200
# fuzz: FUZZ_N seeded closed-loop scenarios from seed FUZZ_SEED (roboplan_ik_ros/fuzz; JSON in build/fuzz/)
FUZZ_N ?= 1000
FUZZ_SEED ?= 0
FUZZ_ARGS ?=
# mutation: mutmut on these packages under core/ (1 worker), reports in build/mutation/ (docs/mutation.md)
MUTATION_PATHS ?= oink/limits oink/barriers control
MUTATION_ARGS ?=

.PHONY: help bootstrap demo test test-no-compile chaos fuzz mutation bench soak clean distclean

help:
	@echo "make demo       bootstrap .venv if needed, then run the IK demo (ARGS=... passed on)"
	@echo "make test       bootstrap .venv if needed, then run the test suite (PYTEST_ARGS=...)"
	@echo "make test-no-compile  the core's tests with no compiled kernel loaded (the fallback without a compiler)"
	@echo "make chaos      the chaos tests long: CHAOS_CYCLES=$(CHAOS_CYCLES) lifecycle cycles under load (PYTEST_ARGS=...)"
	@echo "make fuzz       FUZZ_N=$(FUZZ_N) random closed-loop scenarios, invariants checked; failures with replay commands (FUZZ_ARGS=...)"
	@echo "make mutation   also install requirements-mutation.txt, mutmut on MUTATION_PATHS=\"$(MUTATION_PATHS)\" (long; MUTATION_ARGS=...)"
	@echo "make bench      also install requirements-bench.txt, run bench/*.py (JSON in $(BENCH_OUT)/; ~14 min)"
	@echo "make soak       the node for SOAK_DURATION=$(SOAK_DURATION) s under every input; RSS, ticks, lost commands (JSON, PNG in $(SOAK_OUT)/)"
	@echo "make bootstrap  only create/refresh .venv"
	@echo "make clean      remove build/ and caches;  make distclean: also .venv"

bootstrap:
	@scripts/bootstrap.sh

demo: bootstrap
	@$(WITH_ENV) $(PY) -m roboplan_ik_ros.demo $(ARGS)

# pytest exits 5 when it collects no test: that is a failure too (make fails on any non-zero).
# Beside it, at the lowest CPU priority (it takes what the suite leaves idle), the core's tests run again with no
# compiled kernel loaded (test-no-compile: the fallback without a compiler the README promises); its output goes to
# build/logs/test_no_compile.txt, its summary is printed at the end and its failure fails the run.
# TEST_NO_COMPILE=0: not that run.
TEST_NO_COMPILE ?= 1
test: bootstrap
	@$(WITH_ENV) echo "[test] ROS_DOMAIN_ID=$$ROS_DOMAIN_ID ROS_LOG_DIR=$$ROS_LOG_DIR"; \
	mkdir -p build/logs; rc=0; nc_pid=; rm -f build/logs/test_no_compile.rc; \
	if [ "$(TEST_NO_COMPILE)" = 1 ]; then \
		( ROBOPLAN_NO_COMPILE=1 ROBOPLAN_TEST_END_REPORT=$$PWD/build/logs/test_no_compile_end.txt nice -n 19 \
		  $(PY) -m pytest $(CORE_TESTS) -q -p no:cacheprovider $(PYTEST_ARGS) > build/logs/test_no_compile.txt 2>&1; \
		  echo $$? > build/logs/test_no_compile.rc ) & nc_pid=$$!; fi; \
	PYTHONUNBUFFERED=1 $(PY) -m pytest roboplan_ik_ros/test $(PYTEST_ARGS) 2>&1 | tee build/logs/test_output.txt || rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "[test] FAILED: no tests were collected" >&2; fi; \
	if [ -n "$$nc_pid" ]; then \
		echo "[test] the core's tests without compiled kernels (ROBOPLAN_NO_COMPILE=1, build/logs/test_no_compile.txt):"; \
		wait $$nc_pid; nc_rc=$$(cat build/logs/test_no_compile.rc 2>/dev/null || echo 1); \
		grep -a -E "^(FAILED|ERROR) " build/logs/test_no_compile.txt || true; tail -n 1 build/logs/test_no_compile.txt; \
		if [ "$$nc_rc" != 0 ] && [ "$$nc_rc" != 5 ]; then \
			echo "[test] FAILED: the core's tests without compiled kernels (exit $$nc_rc)" >&2; \
			if [ -s build/logs/test_no_compile_end.txt ]; then cat build/logs/test_no_compile_end.txt >&2; fi; \
			if [ $$rc -eq 0 ]; then rc=$$nc_rc; fi; fi; fi; \
	if [ -s build/logs/test_process_end.txt ]; then \
		echo "[test] FAILED: the test process crashed or hung (build/logs/test_process_end.txt):" >&2; \
		cat build/logs/test_process_end.txt >&2; \
		echo "[test] native messages in its output (build/logs/test_output.txt), if any:" >&2; \
		grep -a -n -B2 -A3 -E "terminate called|what\(\):|double free|corrupted|malloc\(\)|free\(\)|Assertion|Segmentation" \
			build/logs/test_output.txt | tail -n 40 >&2 || true; \
		echo "[test] in short (each thread's innermost 3 frames):" >&2; \
		awk 'NR == 1 || /^(Fatal Python error|Timeout)/ {print; next} /^(Current thread|Thread) / {print; n = 3; next} \
			n > 0 && /^  File/ {print; n--}' build/logs/test_process_end.txt >&2; fi; \
	exit $$rc

# the core's tests with no compiled kernel loaded (ROBOPLAN_NO_COMPILE=1: as installed without a compiler): the
# numpy / Python paths the README promises; the test files that use no ROS (tests of a kernel skip, saying why)
CORE_TESTS = $$(grep -L 'rclpy\|roboplan_ik_ros.node\|e2e\|launch\|Spinner\|subprocess' roboplan_ik_ros/test/test_*.py)
test-no-compile: bootstrap
	@$(WITH_ENV) ROBOPLAN_NO_COMPILE=1 $(PY) -m pytest $(CORE_TESTS) $(PYTEST_ARGS)

# test_e2e_chaos.py with the cycle count from CHAOS_CYCLES (the normal suite runs it short); figures with -s
chaos: bootstrap
	@$(WITH_ENV) echo "[chaos] CHAOS_CYCLES=$(CHAOS_CYCLES) ROS_DOMAIN_ID=$$ROS_DOMAIN_ID ROS_LOG_DIR=$$ROS_LOG_DIR"; \
	CHAOS_CYCLES=$(CHAOS_CYCLES) $(PY) -m pytest roboplan_ik_ros/test/test_e2e_chaos.py -s $(PYTEST_ARGS)

fuzz: bootstrap
	@$(WITH_ENV) $(PY) -m roboplan_ik_ros.fuzz --n $(FUZZ_N) --seed $(FUZZ_SEED) $(FUZZ_ARGS)

# in-process core tests only, per package (scripts/mutation.py); not part of `make test`
mutation: bootstrap
	@$(PY) -m pip install -q -r requirements-mutation.txt -c requirements.txt
	@$(WITH_ENV) $(PY) scripts/mutation.py $(MUTATION_PATHS) $(MUTATION_ARGS)

bench:
	@BENCH=1 scripts/bootstrap.sh
	@mkdir -p $(BENCH_OUT)
	@$(WITH_ENV) shopt -s nullglob; scripts=(bench/bench_*.py); \
	if [ $${#scripts[@]} -eq 0 ]; then echo "[bench] no bench/bench_*.py scripts" >&2; exit 1; fi; \
	for s in "$${scripts[@]}"; do \
		out=$(BENCH_OUT)/$$(basename $$s .py).json; \
		echo "[bench] $$s -> $$out"; \
		extra=""; if [ "$$(basename $$s)" = bench_node.py ]; then extra="$(BENCH_NODE_ARGS)"; fi; \
		$(PY) $$s --json $$out $$extra; \
	done

soak:
	@BENCH=1 scripts/bootstrap.sh
	@mkdir -p $(SOAK_OUT)
	@export ROBOPLAN_ROS_DOMAIN_ID=$(SOAK_DOMAIN_ID); $(WITH_ENV) $(PY) bench/soak.py --duration $(SOAK_DURATION) --out $(SOAK_OUT) $(SOAK_ARGS)

clean:
	rm -rf build .pytest_cache roboplan_ik_ros/.pytest_cache roboplan_ik_ros/*.egg-info
	find . -path ./.venv -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf .venv
