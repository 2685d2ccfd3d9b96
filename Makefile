# Two commands a fresh machine needs: `make run` and `make test`. Both set themselves up, with the
# `semgrep` extra (the audit of Java, JavaScript/TypeScript and Go; its tests run in `make test`).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
ARGS ?=

.PHONY: run test bench live clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,semgrep]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m autopatch_tui $(ARGS)

# three workers on two cores: a third of the suite's time is pilot and subprocess waits, not CPU
# (measured: 289 s with -n 2, 229 s with -n 3 on 2 idle cores, same tests)
test: $(STAMP)
	$(PY) -m pytest -n 3 -q $(ARGS)

bench: $(STAMP)
	for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

# opt-in, never in CI: a scripted session against the configured endpoint (README, "Local models")
live: $(STAMP)
	$(PY) bench/live.py --run $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
