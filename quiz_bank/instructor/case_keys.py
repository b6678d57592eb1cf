"""The answer keys of items drawn from a list of cases (instructor side only).

``pick_case`` items (``quiz_bank.variants.pick_case``) draw one case of a
family whose keys are read off the chapter (``CASE_KEYS``); derived items
(``quiz_bank.derived``) draw one option or one pair of a fixed question, and
their key is read from that source question's answer in the instructor
bank's stop files.
"""

from __future__ import annotations

import functools
from typing import Any

from quiz_bank.instructor.key_registry import key

# The key of each case of a ``pick_case`` item (variants.pick_case), by case id
# "<family>/<n>": a family's string lists its cases' keys in order, "T"/"F" for a
# true/false item; a tuple lists option ids. Each is read off the chapter (the item's
# explanation quotes the sentence); tests/quiz/test_keys.py holds an independent copy.
CASE_KEYS: dict[str, Any] = {
    "collapse": "TFTF",          # big picture: unlucky batch → garbage → worse gradient; the flaw is step size
    "trpo": "TFTFTF",            # stop 1: works perfectly; second-order; painful to distribute
    "trade": "TFTTFF",           # stop 1: similar stability, 10× simpler, almost as well
    "caps": "TFTFTF",            # eq. 5.1 reading: caps at 1 + ε (good), 1 − ε (bad)
    "summary": "TFTF",           # §5.4.6
    "deriv": ("step1", "step6", "step2", "step3", "step4", "step5"),
    "phase": ("collect", "train", "purge", "collect", "train", "purge"),
    "kind": ("rollout", "replay", "replay", "rollout", "replay", "rollout"),
    "gen": "TFTF",               # 60–70% of wall-clock; continuous purging → continuous generation
    "contents": "TFTF",          # eq. 5.13
    "next": ("score", "kl", "final-reward", "gae", "update"),
    "tok": "TFTFTF",             # tokenization pitfalls box
    "walk": "TFTF",              # the 70B walkthrough
    "life": ("one", "drifts", "one", "drifts"),
    "nets": "TFTF",              # two parameter states
    "cfg": ("v02", "v02", "v01", "v005", "v10", "v095", "v10"),
    "map": ("stop2", "stop3", "stop4", "stop5", "walkthrough"),
    "loop": "TFTFTF",
    "danger": ("no-learning", "instability", "reward-hacking", "stuck-sft", "overfits", "wastes", "forgetting"),
    "typical": ("v02", "v001-01", "v4-8", "v4", "v64-256", "v07-10"),
    "dial": "TFTF",
    "soft": "TFTFTF",            # stop 2: ±20% per step; incentive, not ability; soft wall
    "tension": "TFTF",           # stop 8: one point inside the band; middle of the range
    "payoff": "TFTF",            # stop 5 payoff line (what it says, not whether it adds up)
    "store": "TFTF",             # stop 6: one forward pass per mini-batch, significant at 70B
    "spiral": ("garbage", "garbage", "low-rewards", "low-rewards", "worse-gradient", "worse-gradient"),  # stop 1 collapse
    "method": ("vanilla", "vanilla", "trpo", "trpo", "ppo", "ppo"),  # stop 1: no constraint / hard KL / soft clip
    "where": ("ch3", "ch3", "ch5", "ch5", "ch7", "ch7"),  # big picture: ch. 3 machinery, the clip, ch. 7 GRPO
    "which": ("trpo", "trpo", "ppo", "ppo", "both", "both", "neither", "neither"),  # stop 1: TRPO vs PPO
    "part": ("curvature", "curvature", "solves", "solves", "ppo", "ppo"),  # stop 1 box: Fisher, CG, the clip
    "hook": ("load", "load", "generate", "generate", "score", "score", "step", "step"),  # stop 7: the loop
}


@key("case_answer")
def case_answer(p: dict[str, Any]) -> Any:
    """The key of one drawn case: ``True``/``False`` or an option id, from ``CASE_KEYS``.

    Raises:
        KeyError: for an unknown family or a case number beyond its list (``quiz validate``
            checks every case of every item).
    """
    family, _, number = p["case"].partition("/")
    keys = CASE_KEYS[family]
    entry = keys[int(number) - 1]
    return entry == "T" if isinstance(keys, str) else entry


@functools.lru_cache(maxsize=None)
def _stop_answers(stop: str) -> dict[str, Any]:
    """Question id → fixed answer of one stop file of the instructor bank (read once per process)."""
    import yaml

    from quiz_bank.paths import BANK_DIR

    data = yaml.load((BANK_DIR / f"stop{stop}.yaml").read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return {q["id"]: q.get("answer") for q in data["questions"]}


def _source_answer(question_id: str) -> tuple:
    """The fixed answer of a source question (derived items, quiz_bank.derived), as a tuple."""
    answer = _stop_answers(question_id[4])[question_id]
    return tuple(answer) if isinstance(answer, list) else (answer,)


@key("multi_option")
def multi_option(p: dict[str, Any]) -> bool:
    """True when the drawn option ``<question>#<option>`` is in its multiple-select question's answer."""
    question_id, _, option = p["case"].partition("#")
    return option in _source_answer(question_id)


@key("ordering_pair")
def ordering_pair(p: dict[str, Any]) -> bool:
    """True when item ``first`` comes before ``second`` in its ordering question's answer."""
    question_id, first, second = p["case"].split("|")
    order = _source_answer(question_id)
    return order.index(first) < order.index(second)


@key("single_option")
def single_option(p: dict[str, Any]) -> bool:
    """True when the drawn option is (polarity "is") or is not (polarity "not") its single-choice question's key."""
    question_id, option, polarity = p["case"].split("|")
    return (option == _source_answer(question_id)[0]) == (polarity == "is")
