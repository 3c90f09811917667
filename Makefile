# The two commands of the README:
#   make demo   set up .venv (or reuse it) and run the English→Turkish demo end to end
#   make test   set up .venv (or reuse it) and run the test suite (in parallel, a worker per core)
#   make demo-mlm   the masked-LM demo (BERT, BERT2D, BERT-ELMo on synthetic Turkish)
#   make demo-finetune   fine-tune those encoders on labelled Turkish, pretrained vs scratch
#   make lint   black and isort in check mode, ruff's pyflakes checks (CI runs it before the tests)
#   make format   black and isort, rewriting the files
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
STAMP := $(VENV)/.installed

.PHONY: venv demo demo-mlm demo-finetune test lint format bench clean-demo

# setup.py declares the console script, which an (editable) install writes: a change reinstalls.
$(STAMP): requirements.txt setup.py
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --no-deps -r requirements.txt
	$(VENV)/bin/python -m pip install --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH bash scripts/demo.sh

demo-mlm: venv
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH bash scripts/demo-mlm.sh

demo-finetune: venv
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH bash scripts/demo-finetune.sh

# One pytest-xdist worker per core (`-n auto`); `--dist load` hands tests out in the order the
# suite's conftest puts them (the longest first). PYTEST_ARGS adds options: make test PYTEST_ARGS="-x -k demo"
# The project's bytecode is written first (half a second): the suite starts a few hundred Python
# processes, which cannot write it where PYTHONDONTWRITEBYTECODE is set (as on the CI machines)
# and would each compile the modules they import again.
test: venv
	$(VENV)/bin/python -m compileall -q fairseq_struct benchmarks
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH $(VENV)/bin/python -m pytest -q -n auto --dist load tests $(PYTEST_ARGS)

PYTHON_SOURCES := fairseq_struct tests benchmarks user_dir setup.py
lint: venv
	$(VENV)/bin/black --check --quiet $(PYTHON_SOURCES)
	$(VENV)/bin/isort --check-only --quiet $(PYTHON_SOURCES)
	$(VENV)/bin/ruff check --quiet $(PYTHON_SOURCES)

format: venv
	$(VENV)/bin/isort --quiet $(PYTHON_SOURCES)
	$(VENV)/bin/black --quiet $(PYTHON_SOURCES)

# Turkish segmentation is measured on real text, all of it (the cold ratio grows with the text:
# 49x after 4,000 lines of tr-raw, 67-75x on all of it): make bench SEGMENTATION_TEXT=path/to/turkish.txt
SEGMENTATION_TEXT ?= ../shared/data/tr-raw/tr_wikiner_train_sentences.txt
bench: venv
	$(VENV)/bin/python benchmarks/bench_tp_training_throughput.py
	$(VENV)/bin/python benchmarks/bench_tp_generation_speed.py
	$(VENV)/bin/python benchmarks/bench_bert2d_training_throughput.py
	$(VENV)/bin/python benchmarks/bench_bert_elmo_training_throughput.py
	if [ -f "$(SEGMENTATION_TEXT)" ]; then \
	  $(VENV)/bin/python benchmarks/bench_turkish_segmentation.py "$(SEGMENTATION_TEXT)" \
	    --reference-lines 950 --workers 2; \
	else echo "bench_turkish_segmentation: skipped, no file $(SEGMENTATION_TEXT)" >&2; fi

clean-demo:
	rm -rf demo-work demo-mlm-work demo-finetune-work
