#!/usr/bin/env bash
# Gradescope runs this once, as root, while it builds the autograder image
# (Ubuntu; /autograder/source holds this bundle). It installs Python, the CPU
# build of torch (first, so that pip never pulls a multi-GB CUDA build) and
# the grader itself into /autograder/venv, which run_autograder uses.
set -euo pipefail
apt-get update
# libseccomp2: the sandbox's seccomp filter (a child refuses to run without it).
apt-get install -y --no-install-recommends python3 python3-pip python3-venv libseccomp2
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet --upgrade pip
/autograder/venv/bin/pip install --quiet "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu
/autograder/venv/bin/pip install --quiet /autograder/source
