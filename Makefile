# Two entry points (see README): `make demo` and `make test`. Each sets up
# .venv on a fresh machine first. torch==2.13.0 is installed before the
# package so that pip takes the local CPU wheel and never a multi-GB CUDA build.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test install train bench exercises clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ppo-course demo

test: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadgroup

train: $(STAMP)
	$(VENV)/bin/ppo-course train

bench: $(STAMP)
	$(PY) benchmarks/bench_reference.py
	$(PY) benchmarks/bench_grading.py
	$(PY) benchmarks/bench_cluster.py

exercises: $(STAMP)
	$(PY) tools/make_exercises.py

clean:
	rm -rf $(VENV) build *.egg-info
