# Two entry points (see README): `make demo` and `make test`. Each sets up
# .venv on a fresh machine first. torch==2.13.0 is installed before the
# package so that pip takes the CPU build and never a multi-GB CUDA build: the
# +cpu wheel from where pip already looks (a local wheel, a configured index),
# else from PyTorch's CPU index; only off Linux (no +cpu wheels there; PyPI's
# macOS/Windows builds have no CUDA) the plain release.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test install train bench bench-full exercises clean browser postgres

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "torch==2.13.0+cpu" 2>/dev/null \
		|| $(PY) -m pip install --quiet "torch==2.13.0+cpu" --extra-index-url https://download.pytorch.org/whl/cpu \
		|| { [ "$$(uname -s)" != Linux ] && $(PY) -m pip install --quiet "torch==2.13.0"; }
	$(PY) -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/ppo-course demo

# The quiz server's browser test drives Debian's Chromium (no browser download at
# run time): installed here with apt-get when missing and we are root (CI runs as
# root on a fresh machine); otherwise a note, and the test skips (fails under CI=true).
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium and chromium-driver for the quiz server's browser test"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; } \
			|| echo "warning: apt-get could not install chromium: the browser test will skip (CI=true makes it fail)"; \
	else echo "note: chromium/chromedriver missing and not root: the browser test will skip (CI=true makes it fail)"; fi

# The quiz store's PostgreSQL tests start a throw-away server from the system's packaged
# binaries (quiz_bank/instructor/server/pg_local.py; as root they run as the `postgres` user): installed
# here with apt-get when missing and we are root; otherwise a note, and those tests skip
# (CI=true makes them fail).
postgres:
	@if command -v pg_config >/dev/null 2>&1 && [ -x "$$(pg_config --bindir)/initdb" ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing postgresql for the quiz store's PostgreSQL tests"; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
			|| echo "warning: apt-get could not install postgresql: the PostgreSQL tests will skip (CI=true makes them fail)"; \
	else echo "note: PostgreSQL server binaries missing and not root: the PostgreSQL tests will skip (CI=true makes them fail)"; fi

test: $(STAMP) browser postgres
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=30

train: $(STAMP)
	$(VENV)/bin/ppo-course train

# bench: the quick grading benchmark (2 students, fast profile) and the synthetic class of 1,000, then where
# people wait (one grade, one check, a --watch re-run, the demo) (a few minutes); bench-full: the whole demo cohort in the full profile with nbgrader (tens of minutes on 2 cores).
bench: $(STAMP)
	$(PY) benchmarks/bench_reference.py
	$(PY) benchmarks/bench_grading.py --quick --scaling 16,200,1000
	$(PY) benchmarks/bench_waits.py
	$(PY) benchmarks/bench_quiz.py --quick
	$(PY) benchmarks/bench_cluster.py

bench-full: $(STAMP)
	$(PY) benchmarks/bench_grading.py

exercises: $(STAMP)
	$(PY) tools/make_exercises.py

clean:
	rm -rf $(VENV) build *.egg-info
