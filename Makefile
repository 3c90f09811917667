# The two commands of the README:
#   make demo   set up .venv (or reuse it) and run the English→Turkish demo end to end
#   make test   set up .venv (or reuse it) and run the test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: venv demo test bench clean-demo

$(STAMP): requirements.txt setup.py
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --no-deps -r requirements.txt
	$(VENV)/bin/python -m pip install --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH bash scripts/demo.sh

test: venv
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/python -m pytest -q tests

bench: venv
	for b in benchmarks/bench_*.py; do $(VENV)/bin/python $$b || exit 1; done

clean-demo:
	rm -rf demo-work
