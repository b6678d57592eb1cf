"""Import the instructor's code (ppo_reference, grader, solutions) and answer with it.

Tries: plain imports; removing the sandbox's import blocker from
sys.meta_path; putting the repository (found from ppo_course.__file__ and
from hints.json) on sys.path; loading ppo_reference/__init__.py and
solutions/ex1_ratio.py by file path; runpy; reading already-imported modules.
If anything works, the reference answers instead of the twin's wrong code.
Must achieve: nothing. The instructor folders are covered in the child's
mount namespace and the child's uid cannot read them.
"""

TARGET = "ex1_ratio"
TWIN = "ex1_unstable.py"

import importlib
import importlib.util
import json
import os
import runpy
import sys
from pathlib import Path

import twin_code

_found = {}


def _try(label, fn):
    try:
        mod = fn()
    except BaseException:  # noqa: BLE001 - every refusal is expected
        return
    lp = getattr(mod, "logprobs_from_logits", None) if not isinstance(mod, dict) else mod.get("logprobs_from_logits")
    ratio = getattr(mod, "probability_ratio", None) if not isinstance(mod, dict) else mod.get("probability_ratio")
    if callable(lp) and callable(ratio) and "logprobs" not in _found:
        _found.update(logprobs=lp, ratio=ratio, how=label)


def _roots():
    roots = []
    try:
        import ppo_course

        roots.append(Path(ppo_course.__file__).resolve().parent.parent)
    except BaseException:  # noqa: BLE001
        pass
    try:
        roots.append(Path(json.loads(Path(__file__).with_name("hints.json").read_text())["repo"]))
    except BaseException:  # noqa: BLE001
        pass
    roots += [Path("/work/main"), Path.home() / "ppo-course"]
    return roots


for name in ("ppo_reference", "solutions.ex1_ratio", "grader.hidden.support", "quiz_bank"):
    _try(f"import {name}", lambda name=name: importlib.import_module(name))
sys.meta_path[:] = [f for f in sys.meta_path if "Block" not in repr(f)]
for root in _roots():
    sys.path.insert(0, str(root))
    sys.path.insert(0, str(root / "solutions"))
    importlib.invalidate_caches()
    for name in ("ppo_reference", "ex1_ratio_solution"):
        _try(f"import {name} from {root}", lambda name=name: importlib.import_module(name))
    for rel in ("ppo_reference/__init__.py", "ppo_reference/ratio.py", "solutions/ex1_ratio.py", "exercises/../solutions/ex1_ratio.py"):
        path = root / rel
        _try(f"runpy {path}", lambda path=path: runpy.run_path(str(path)))

        def load(path=path):
            spec = importlib.util.spec_from_file_location("stolen_" + path.stem, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod

        _try(f"spec {path}", load)
for mod in list(sys.modules.values()):
    if "reference" in getattr(mod, "__name__", "") or "solution" in getattr(mod, "__name__", ""):
        _try(f"sys.modules {mod.__name__}", lambda mod=mod: mod)
if os.environ.get("PPO_HOSTILE_DEBUG"):
    print("found:", _found.get("how"))


def logprobs_from_logits(logits, tokens):
    if "logprobs" in _found:
        return _found["logprobs"](logits, tokens)
    return twin_code.logprobs_from_logits(logits, tokens)


def probability_ratio(logp_new, logp_old):
    if "ratio" in _found:
        return _found["ratio"](logp_new, logp_old)
    return twin_code.probability_ratio(logp_new, logp_old)
