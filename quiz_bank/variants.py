"""Per-student variants: the seed derivation and the parameter draws (public, key-free).

A variant is a pure function of (student, question, attempt):

    seed = first 8 bytes, big-endian, of
           SHA-256("ppo-course/quiz/v1" US student_id US question_id US str(attempt))
    rng  = random.Random(seed)

(US is the ASCII unit separator, chr(31), so "ab"+"c" and "a"+"bc" differ.)
SHA-256 and ``random.Random(int)`` are the same on every machine and every
CPython 3 run (``hash()`` is salted per process, so it is never used); the
draws below only use ``rng.choice``/``rng.sample``/``rng.shuffle`` over fixed
grids, whose results CPython keeps stable. A retry is attempt + 1, hence a
fresh variant.

Each generator returns the parameters shown to the student (numbers already
rounded to what the prompt prints). The *keys* for these parameters are
computed by ``quiz_bank.instructor.keys`` (instructor side, ``ppo_reference``); nothing
here knows an answer, so this module ships in the student bundle.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any, Callable

SEED_NAMESPACE = "ppo-course/quiz/v1"


def variant_seed(student_id: str, question_id: str, attempt: int) -> int:
    """The 64-bit seed of one variant (see the module docstring for the derivation).

    Raises:
        ValueError: if ``attempt`` < 1 or ``student_id`` is empty.
    """
    if attempt < 1:
        raise ValueError(f"attempt numbers start at 1, got {attempt}")
    if not student_id:
        raise ValueError("student_id must be a non-empty string")
    material = "\x1f".join([SEED_NAMESPACE, student_id, question_id, str(int(attempt))])
    return int.from_bytes(hashlib.sha256(material.encode("utf-8")).digest()[:8], "big")


def variant_rng(student_id: str, question_id: str, attempt: int) -> random.Random:
    """``random.Random(variant_seed(...))``: the only randomness a variant uses."""
    return random.Random(variant_seed(student_id, question_id, attempt))


def option_rng(student_id: str, question_id: str, attempt: int) -> random.Random:
    """The RNG of the order in which one attempt shows a question's options.

    Seeded like :func:`variant_seed` but on ``question_id + "#options"``, so the
    option order and the parameter draw are independent; ``attempt`` is the
    stop attempt, so each retry shows a fresh order, reproducibly.
    """
    return random.Random(variant_seed(student_id, question_id + "#options", attempt))


def _grid(lo: float, hi: float, step: float, digits: int = 4) -> list[float]:
    n = int(round((hi - lo) / step))
    return [round(lo + i * step, digits) for i in range(n + 1)]


def _away_from_clip_edges(r: float, eps: float, margin: float = 0.03) -> bool:
    # At r = 1 ± ε exactly the gradient case of eq. 5.9 is a matter of convention;
    # variants keep a margin so that every key is unambiguous.
    return abs(r - (1 + eps)) > margin and abs(r - (1 - eps)) > margin


GENERATORS: dict[str, Callable[[random.Random, dict[str, Any]], dict[str, Any]]] = {}


def generator(name: str):
    """Register a parameter draw ``fn(rng, args) -> params`` under ``name``."""

    def register(fn):
        GENERATORS[name] = fn
        return fn

    return register


# Share of draws in which the clip binds (the clipped term is the min) for the draws of
# clipped quantities: an answer that ignores the clip, or takes the max, then differs
# from the key in most draws; the rest keep r outside [1 − ε, 1 + ε] on the
# side where the unclipped term is the min, so that max and min still differ.
BINDING_SHARE = 0.85


def _clip_ratio(rng: random.Random, sign: int, eps: float, mode: str) -> float:
    """A ratio for one token of eq. 5.1 with advantage sign ``sign``.

    ``mode="edge"``: r drawn evenly on both sides of the edge that decides eq. 5.9's
    gradient case (1 + ε for Â > 0, 1 − ε for Â < 0), so the gradient flows in about
    half the draws. ``mode="binding"``: r outside [1 − ε, 1 + ε], on the clip's side
    in BINDING_SHARE of the draws. r is always kept off 1 ± ε (``_away_from_clip_edges``).
    """
    edge = 1 + eps if sign > 0 else 1 - eps
    if mode == "edge":
        side = rng.choice([1, -1])
    else:
        side = sign if rng.random() < BINDING_SHARE else -sign
        edge = 1 + eps if side > 0 else 1 - eps
    steps = _grid(0.05, 0.4, 0.05)
    r = round(edge + side * rng.choice(steps), 4)
    return r if r > 0.05 else round(edge + side * 0.05, 4)


@generator("clip_case")
def _clip_case(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """One token of eq. 5.1: ratio r, advantage adv (sign from args), ε; ``args.mode``: edge | binding."""
    eps = rng.choice(args.get("eps_choices", [0.1, 0.2, 0.3]))
    sign = args.get("advantage_sign", rng.choice([1, -1]))
    adv = sign * rng.choice(_grid(0.5, 3.0, 0.25))
    r = _clip_ratio(rng, sign, eps, args.get("mode", "binding"))
    return {"r": r, "adv": adv, "eps": eps}


@generator("clip_tokens")
def _clip_tokens(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Three tokens of eq. 5.1 sharing ε: ``r1, adv1 … r3, adv3`` and ``eps``.

    Each token is drawn like ``clip_case`` in edge mode (its own advantage sign; the gradient flows through it in
    about half the draws), and every ratio is kept off both clip edges. So no gradient at all flows in about one
    draw in eight, and through every token in about one in eight.
    """
    eps = rng.choice(args.get("eps_choices", [0.1, 0.2, 0.3]))
    out: dict[str, Any] = {"eps": eps}
    for i in (1, 2, 3):
        sign = rng.choice([1, -1])
        out[f"adv{i}"] = sign * rng.choice(_grid(0.5, 3.0, 0.25))
        r = _clip_ratio(rng, sign, eps, "edge")
        while not _away_from_clip_edges(r, eps):
            r = _clip_ratio(rng, sign, eps, "edge")
        out[f"r{i}"] = r
    return out


@generator("clip_case_logprobs")
def _clip_case_logprobs(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Like clip_case (mode edge), but the ratio is given as two stored/live log-probs (eq. 5.20)."""
    import math

    eps = rng.choice(args.get("eps_choices", [0.2]))
    sign = args.get("advantage_sign", rng.choice([1, -1]))
    adv = sign * rng.choice(_grid(0.5, 2.0, 0.5))
    edge = math.log(1 + eps if sign > 0 else 1 - eps)
    side = rng.choice([1, -1])
    # Log-ratio steps of 0.05–0.3 nats past or short of the deciding edge, rounded to the
    # 0.01 grid the prompt prints; log π ≤ 0 keeps log π_old ≤ −0.05 − max(delta, 0).
    delta = round(edge + side * rng.choice(_grid(0.05, 0.3, 0.05)), 2)
    logp_old = rng.choice([x for x in _grid(-3.0, -0.5, 0.1) if x + delta <= -0.05 + 1e-9])
    return {"logp_old": logp_old, "logp_new": round(logp_old + delta, 4), "adv": adv, "eps": eps}


@generator("logprob_pair")
def _logprob_pair(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Stored log π_old and live log π_θ of one token; ``args.mode="binding"`` puts r outside the clip range."""
    import math

    eps = rng.choice(args.get("eps_choices", [0.2]))
    if args.get("mode") == "binding":
        # |log r| past the nearer edge's log by 0.05–0.4 nats: clip(r) ≠ r in every draw.
        side = rng.choice([1, -1])
        delta = round(math.log(1 + side * eps) + side * rng.choice(_grid(0.05, 0.4, 0.05)), 2)
    else:
        delta = rng.choice([d for d in _grid(-0.6, 0.6, 0.05) if d != 0.0])
    # A log-probability is ≤ 0 (a probability is ≤ 1): keep log π_θ = log π_old + delta ≤ −0.05.
    logp_old = rng.choice([x for x in _grid(-4.0, -0.2, 0.1) if x + delta <= -0.05 + 1e-9])
    return {"logp_old": logp_old, "logp_new": round(logp_old + delta, 4), "eps": eps}


@generator("value_loss")
def _value_loss(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """V_old, V, return R and the value clip c; V moved by more than c.

    In BINDING_SHARE of the draws R lies beyond V (seen from V_old), so the clipped
    error is the larger and the max keeps it; otherwise R lies on V_old's side. The two
    squared errors differ by at least 0.01 in every draw.
    """
    c = 0.2
    v_old = rng.choice(_grid(-0.5, 1.0, 0.1))
    move = rng.choice([1, -1])
    v = round(v_old + move * rng.choice(_grid(0.3, 0.6, 0.05)), 4)
    v_clip = v_old + move * c
    far = rng.random() < BINDING_SHARE
    candidates = [x for x in _grid(-2.0, 3.0, 0.1)
                  if ((x - v_clip) ** 2 > (x - v) ** 2) == far and abs((x - v_clip) ** 2 - (x - v) ** 2) >= 0.01]
    return {"v": v, "v_old": v_old, "ret": rng.choice(candidates), "c": c}


@generator("distribution3")
def _distribution3(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """A policy over a 3-token vocabulary: probabilities p1, p2, p3 (multiples of 0.05)."""
    p1 = rng.choice(_grid(0.2, 0.8, 0.05))
    p2 = rng.choice(_grid(0.05, round(0.95 - p1, 2), 0.05))
    return {"p1": p1, "p2": p2, "p3": round(1.0 - p1 - p2, 4)}


@generator("full_objective")
def _full_objective(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """One token of eq. 5.2 over a 2-token vocabulary: π_θ(a) = p, π_old(a) = q, Â, V, V_target.

    The ratio p/q lies outside [0.8, 1.2], on the clip's side in BINDING_SHARE of the draws.
    """
    adv = rng.choice([x for x in _grid(-2.0, 2.0, 0.5) if x != 0.0])
    sign = 1 if adv > 0 else -1
    side = sign if rng.random() < BINDING_SHARE else -sign
    ratio = rng.choice(_grid(1.25, 1.5, 0.05) if side > 0 else _grid(0.55, 0.75, 0.05))
    p = rng.choice([x for x in _grid(0.2, 0.8, 0.05) if 0.0 < x / ratio < 0.95])
    v = rng.choice(_grid(-0.5, 1.0, 0.1))
    v_target = rng.choice([x for x in _grid(-1.0, 2.0, 0.1) if x != v])
    return {"p": p, "q": round(p / ratio, 4), "adv": adv, "v": v, "v_target": v_target}


@generator("gae3")
def _gae3(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """A 3-token response: rewards (KL-shaped: small, score on the last), values, γ, λ."""
    rewards = [rng.choice(_grid(-0.1, 0.1, 0.05)), rng.choice(_grid(-0.1, 0.1, 0.05)), rng.choice(_grid(-1.0, 2.0, 0.5))]
    values = [rng.choice(_grid(0.0, 1.0, 0.1)) for _ in range(3)]
    return {"rewards": rewards, "values": values, "gamma": 1.0, "lam": rng.choice([0.9, 0.95])}


@generator("kl_tokens")
def _kl_tokens(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """A response of n tokens: reward-model score, log π and log π_ref per token, KL coefficient."""
    n = args.get("n_tokens", rng.choice([3, 4]))
    ref_logp = [rng.choice(_grid(-3.0, -0.5, 0.1)) for _ in range(n)]
    # log π ≤ 0 always (a probability is ≤ 1): the shift is drawn only among those keeping log π ≤ −0.05.
    logp = [round(x + rng.choice([d for d in _grid(-0.2, 0.8, 0.1) if x + d <= -0.05 + 1e-9]), 4) for x in ref_logp]
    score = rng.choice(_grid(-1.0, 3.0, 0.5))
    kl_coef = rng.choice(args.get("kl_coef_choices", [0.05]))
    return {"logp": logp, "ref_logp": ref_logp, "score": score, "kl_coef": kl_coef}


@generator("whiten3")
def _whiten3(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Three advantages (not all equal) to whiten with the unbiased variance."""
    values = rng.sample(_grid(-2.0, 2.0, 0.5), 3)
    return {"advantages": values}


@generator("logits3")
def _logits3(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Logits over a 3-token vocabulary (old and new), and the sampled token index (0-based)."""
    z_old = [rng.choice(_grid(-2.0, 2.0, 0.5)) for _ in range(3)]
    z_new = [round(z + rng.choice(_grid(-0.5, 0.5, 0.25)), 4) for z in z_old]
    return {"z_old": z_old, "z_new": z_new, "token": rng.randrange(3)}


@generator("gaussian_action")
def _gaussian_action(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """A continuous action a, old and new Gaussian policy heads (µ, σ) (eq. 5.22)."""
    mu_old = rng.choice(_grid(-1.0, 1.0, 0.1))
    mu_new = round(mu_old + rng.choice([x for x in _grid(-0.2, 0.2, 0.05) if x != 0.0]), 4)
    sigma_old = rng.choice([0.5, 0.8, 1.0])
    sigma_new = rng.choice([sigma_old, round(sigma_old * 0.9, 4), round(sigma_old * 1.1, 4)])
    action = round(mu_old + rng.choice(_grid(-1.0, 1.0, 0.1)), 4)
    return {"mu_old": mu_old, "sigma_old": sigma_old, "mu_new": mu_new, "sigma_new": sigma_new, "action": action}


@generator("adaptive_kl")
def _adaptive_kl(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Adaptive-KL controller state (value, target, horizon) and one batch's KL and size.

    The KL is above the target in half the draws and below it in the other half; it lies
    within ±20% of the target (where the controller's clip on e does not bind) in 15% of
    the draws, so an answer that forgets that clip differs from the key in most draws.
    """
    target = rng.choice(args.get("target_choices", [4.0, 6.0, 8.0]))
    above = rng.random() < 0.5
    inside = rng.random() < 1 - BINDING_SHARE
    grid = [x for x in _grid(1.0, 14.0, 0.5) if (x > target) == above and x != target
            and (abs(x / target - 1) < 0.2) == inside]
    return {
        "value": rng.choice([0.02, 0.05, 0.1]),
        "target": target,
        "horizon": rng.choice([1000, 2000, 10000]),
        "kl": rng.choice(grid),
        "n_steps": rng.choice([64, 128, 256]),
        "n_updates": args.get("n_updates", 1),
    }


@generator("minibatches")
def _minibatches(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """One cycle's sizes: batch B, mini-batch size, epochs K, gradient-accumulation steps."""
    batch = rng.choice([64, 96, 128, 192, 256])
    mbs = rng.choice([8, 16, 32])
    gas = rng.choice([1, 2, 4])
    while batch % (mbs * gas):
        gas //= 2
    return {"batch_size": batch, "mini_batch_size": mbs, "ppo_epochs": rng.choice([2, 3, 4, 5, 6, 8, 10]), "gas": gas}


@generator("clip_batch")
def _clip_batch(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Four tokens (ratio, advantage) and a clip range ε, every ratio off the clip edges."""
    eps = rng.choice(args.get("eps_choices", [0.05, 0.1, 0.2, 0.3]))
    ratios = [r for r in _grid(0.6, 1.4, 0.05) if _away_from_clip_edges(r, eps, 0.02)]
    return {
        "eps": eps,
        "ratios": [rng.choice(ratios) for _ in range(4)],
        "advantages": [rng.choice([-1.0, -0.5, 0.5, 1.0, 2.0]) for _ in range(4)],
    }


@generator("trpo_step")
def _trpo_step(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Old and new policies over 3 actions (probabilities, multiples of 0.05) and a trust-region size δ.

    δ is drawn among those at least 25% away from the step's KL (in either direction), so
    that the inside/outside verdict never hangs on rounding; the KL computed here only
    filters δ and is not returned.
    """
    import math

    while True:
        old = rng.choice([[0.5, 0.3, 0.2], [0.6, 0.3, 0.1], [0.4, 0.4, 0.2], [0.7, 0.2, 0.1], [0.5, 0.25, 0.25]])
        shift = rng.choice([0.05, 0.1, 0.15])
        i, j = rng.sample(range(3), 2)
        new = list(old)
        move = min(shift, round(new[j] - 0.05, 4))
        new[i], new[j] = round(new[i] + move, 4), round(new[j] - move, 4)
        kl = sum(o * math.log(o / n) for o, n in zip(old, new))
        inside = rng.random() < 0.5  # the step is inside the trust region in half the draws
        deltas = [d for d in (0.002, 0.005, 0.01, 0.02, 0.05, 0.1)
                  if abs(kl - d) >= 0.25 * d and (kl <= d) == inside]
        if deltas:
            return {"old": old, "new": new, "delta": rng.choice(deltas)}


@generator("buffer_size")
def _buffer_size(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """A collect phase: prompts per batch and max tokens per response."""
    return {"batch_size": rng.choice([32, 64, 96, 128, 256]), "max_tokens": rng.choice([128, 256, 384, 512, 1024])}


@generator("pick_case")
def _pick_case(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """One case of a finite list: ``args.cases`` maps a case id to its prompt fields.

    A case given as a string is the field ``statement``. The parameters are the case's
    fields plus ``case`` (its id, which ``quiz_bank.instructor.keys`` looks the key up by). Case ids
    are drawn uniformly, in sorted order, so the draw does not depend on YAML order.
    """
    cases = args["cases"]
    case = rng.choice(sorted(cases))
    return _case_params(case, cases[case])


def _case_params(case: str, fields: Any) -> dict[str, Any]:
    return {"case": case, **(fields if isinstance(fields, dict) else {"statement": str(fields)})}


@generator("ordered_pair")
def _ordered_pair(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """Two distinct items of an ordering question, in a random order (``args.items``: id → text).

    Both orders are equally likely, so "first comes before second" is true in half the draws.
    """
    first, second = rng.sample(sorted(args["items"]), 2)
    return {"case": f"{args['question']}|{first}|{second}", "first": args["items"][first], "second": args["items"][second]}


@generator("judge_option")
def _judge_option(rng: random.Random, args: dict[str, Any]) -> dict[str, Any]:
    """One option of a single-choice question (``args.options``: id → text) and a polarity, "" or "not "."""
    option = rng.choice(sorted(args["options"]))
    polarity = rng.choice(["", "not "])
    return {"case": f"{args['question']}|{option}|{polarity.strip() or 'is'}", "option": args["options"][option], "polarity": polarity}


def enumerate_cases(generator_name: str, args: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Every possible draw of a finite generator (``pick_case``), or None for the others.

    ``quiz validate`` checks each case's prompt fields and key, not one probe draw only.
    """
    if generator_name == "judge_option":
        return [{"case": f"{args['question']}|{o}|{pol.strip() or 'is'}", "option": text, "polarity": pol}
                for o, text in sorted(args["options"].items()) for pol in ("", "not ")]
    if generator_name == "ordered_pair":
        items = args["items"]
        return [{"case": f"{args['question']}|{a}|{b}", "first": items[a], "second": items[b]}
                for a in sorted(items) for b in sorted(items) if a != b]
    if generator_name != "pick_case":
        return None
    return [_case_params(case, fields) for case, fields in sorted(args["cases"].items())]


def draw(generator_name: str, args: dict[str, Any], student_id: str, question_id: str, attempt: int) -> dict[str, Any]:
    """The parameters of one variant.

    Raises:
        KeyError: if ``generator_name`` is not registered (``quiz validate`` catches this).
    """
    if generator_name not in GENERATORS:
        raise KeyError(f"unknown parametric generator {generator_name!r}; known: {', '.join(sorted(GENERATORS))}")
    return GENERATORS[generator_name](variant_rng(student_id, question_id, attempt), dict(args))
