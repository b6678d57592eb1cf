"""Exercise 7's stub rules, checked stage by stage on the observed trace, without any reference.

The public test of exercise 7 (run by ``ppo-course check``, student side) must
catch the step mistakes of the catalogue without the trusted implementation:
it runs the student's step with the observer's deep mode
(``ppo_course.sandbox.observe``) and checks here that each stage did what the
stub's numbered steps fix, from the step's own measured quantities:

1. one ``generate`` with the config's temperature, top-p, length and the given generator;
2. one ``reward_fn`` call on exactly the generated responses;
3. every forward pass at ``config.temperature``; the stored ``logp_old``/``values`` are
   the policy's no-grad pass, ``ref_logp`` the reference policy's;
4. ``kl_shaped_rewards`` with ``kl_ctl.value`` (before its update), the config's
   placement, (logp_old, ref_logp) in that order; reward whitening only if configured,
   with ``shift_mean=False``;
5. ``compute_gae`` with the config's γ and λ on those rewards and values; the
   buffer holds ``whiten(advantages)`` and the returns of GAE;
6-7. ``ppo_epochs`` passes of ``minibatches(config.mini_batch_size, generator)``;
   ``ppo_loss`` with the config's hyper-parameters and the stored ``logp_old``;
   ``optimizer.step()`` after every ``gradient_accumulation_steps`` losses, no
   ``zero_grad`` inside a group, the gradient clipped to ``max_grad_norm`` first, and
   the gradient at the step the mean (not the sum) of the group's loss gradients;
   weights moved by the optimizer only;
8-9. one ``kl_ctl.update`` after the updates, in TRL's units (mean summed KL, B);
   ``purge`` at the end;
and the stats agree with what the step did.

The ids are the hidden grader's (``grader/mistakes/ppo_step_diagnosis.py`` names the
same mistakes from its reference comparisons, and runs these checks too), so
``check`` and the graded feedback name a mistake alike. Sources: the stub's
docstring (solutions/ex7_ppo_step.py), Book fig. 5.1, §5.5-§5.8.
"""

from __future__ import annotations

import math
import re
from typing import Any

import torch

from ppo_course.grading_kit.compare import all_finite, close

#: Tolerances: the step's own quantities against themselves (same float ops) or a recomputation.
TOL = 1e-4


def _num(a: Any, b: float, tol: float = 1e-9) -> bool:
    return isinstance(a, (int, float)) and not isinstance(a, bool) and math.isfinite(a) \
        and abs(a - b) <= tol * (1.0 + abs(b))


def _same(a: Any, b: Any, mask: torch.Tensor | None = None) -> bool:
    """Tensors of one shape within atol + rtol·|b| on the mask's positions (when it fits), through
    ``ppo_course.grading_kit.compare.close``; a NaN or ±inf on either side differs."""
    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return False
    compared = b[mask.bool()] if mask is not None and mask.shape == b.shape else b
    return (all_finite(compared)  # close() would call a NaN in b a grader bug: here b may be the student's
            and close(a, b, rtol=TOL, atol=TOL, mask=mask))


def rollout_pass(events: list[dict], who: str) -> dict | None:
    """The no-grad forward pass of ``who`` ("policy" or "ref") over the whole rollout: ``{"logp", "values"}``.

    The contract allows the rollout's forward passes to run in chunks (TRL's ``batched_forward_pass`` runs
    them by mini-batch size): the chunks' outputs, concatenated in order over the rows, are the pass. Only
    forwards before the first ``kl_rewards`` (else ``add``) event count, so the training passes never do; a
    policy pass with gradient is not the rollout's.
    None when no such pass covers the rollout's rows.
    """
    rows = next((e["mask"].shape[0] for e in events if e["ev"] == "generate"), None)
    stop = next((i for i, e in enumerate(events) if e["ev"] in ("kl_rewards", "add")), len(events))
    passes = [e for e in events[:stop] if e["ev"] == "forward" and e["who"] == who
              and not (who == "policy" and e.get("grad")) and isinstance(e.get("logp"), torch.Tensor)]
    full = next((e for e in passes if e["logp"].shape[0] == rows), None)
    if full is not None or not passes:
        return full
    if sum(e["logp"].shape[0] for e in passes) != rows:
        return None
    values = [e.get("values") for e in passes]
    return {"logp": torch.cat([e["logp"] for e in passes]),
            "values": torch.cat(values) if all(isinstance(v, torch.Tensor) for v in values) else None}


class _T:
    """The validated trace with look-ups by event kind."""

    def __init__(self, events: list[dict]):
        self.events = events

    def all(self, ev: str) -> list[dict]:
        return [e for e in self.events if e["ev"] == ev]

    def first(self, ev: str) -> dict | None:
        return next((e for e in self.events if e["ev"] == ev), None)

    def index(self, ev: str, start: int = 0) -> int | None:
        return next((i for i, e in enumerate(self.events) if i >= start and e["ev"] == ev), None)


def check_step(trace: list[dict] | None, cfg: dict, batch: int, kl_coef_before: float, stats: Any = None,
               kl_coef_after: Any = None) -> tuple[str, str] | None:
    """(diagnosis id, what was observed) for the first stage that breaks the stub's rules, else None.

    Args:
        trace: a validated deep-mode trace (``step_trace.validate_result(...)["trace"]``); None says nothing.
        cfg: the PPOConfig dict of the run; ``batch``: the number of prompts (B).
        kl_coef_before: ``kl_ctl.value`` when the step started (``cfg["init_kl_coef"]`` for a fresh one).
        stats: the step's returned stats; ``kl_coef_after``: ``kl_ctl.value`` after the step.

    Returns:
        ``(id of ppo_course.grading_kit.diagnoses.DIAGNOSES, detail)`` or None. Never raises on a
        validated trace.
    """
    if not trace:
        return None
    t = _T(trace)
    try:
        for stage in (_generation, _rollout, _rewards, _advantages, _training, _optimizer, _controller):
            found = stage(t, cfg, batch, kl_coef_before)
            if found:
                return found
        return _stats(t, cfg, kl_coef_before, stats, kl_coef_after)
    except Exception:  # noqa: BLE001 - e.g. a stage left out (no mask): these checks then say nothing
        return None


def _generation(t: _T, cfg: dict, batch: int, coef: float) -> tuple[str, str] | None:
    gens = t.all("generate")
    if len(gens) != 1:
        return "ppo_step_generation_differs", f"step 1: {len(gens)} generate call(s), expected one"
    g = gens[0]
    if not (_num(g["temperature"], cfg["temperature"]) and _num(g["top_p"], cfg["top_p"])
            and _num(g["max_new_tokens"], cfg["max_new_tokens"])):
        return "ppo_step_generation_differs", (f"step 1: generate(temperature={g['temperature']}, top_p={g['top_p']}, "
                                               f"max_new_tokens={g['max_new_tokens']}) is not the config's")
    if not g["given_generator"]:
        return "ppo_step_generation_differs", "step 1: generate was not given the step's generator"
    rewards = t.all("reward")
    if len(rewards) != 1 or not rewards[0]["same_responses"]:
        return "ppo_step_scores_wrong", "step 2: reward_fn was not called once on the generated responses and mask"
    return None


def _rollout(t: _T, cfg: dict, batch: int, coef: float) -> tuple[str, str] | None:
    for e in t.all("forward"):
        if not _num(e["temperature"], cfg["temperature"]):
            return "ppo_step_temperature_ignored", (f"a {e['who']} forward_response ran at temperature "
                                                    f"{e['temperature']}, the config's is {cfg['temperature']}")
    pol, ref = rollout_pass(t.events, "policy"), rollout_pass(t.events, "ref")
    add, mask = t.first("add"), t.first("generate")["mask"]
    if pol is None or add is None:
        return None
    fields = add["fields"]
    if not _same(fields.get("logp_old"), pol["logp"], mask):
        if ref is not None and _same(fields.get("logp_old"), ref["logp"], mask):
            return "ppo_step_logp_old_from_reference", "step 3: the stored logp_old are the reference policy's"
        return "ppo_step_logp_old_wrong", "step 3: the stored logp_old are not the policy's no-grad log-probs"
    if not _same(fields.get("values"), pol["values"], mask):
        return "ppo_step_values_wrong", "step 3: the stored values are not the policy's value head on the rollout"
    return None


def _rewards(t: _T, cfg: dict, batch: int, coef: float) -> tuple[str, str] | None:
    kr, gae, add = t.first("kl_rewards"), t.first("gae"), t.first("add")
    mask = t.first("generate")["mask"]
    if kr is None or gae is None:
        return None
    update_at, rewards_at = t.index("kl_update"), t.index("kl_rewards")
    if update_at is not None and update_at < rewards_at:
        return "ppo_step_wrong_order", "steps 4 and 8: kl_ctl.update ran before the rewards were shaped"
    if not _num(kr["kl_coef"], coef):
        return "ppo_step_kl_coef_wrong", f"step 4: kl_coef={kr['kl_coef']}, kl_ctl.value was {coef}"
    if kr["placement"] != cfg["kl_placement"]:
        return "ppo_step_rewards_wrong", f"step 4: placement={kr['placement']!r}, the config's is {cfg['kl_placement']!r}"
    ref = rollout_pass(t.events, "ref")
    logp_old = add["fields"].get("logp_old") if add else None
    if logp_old is not None and not _same(kr["logp"], logp_old, mask) or \
            ref is not None and not _same(kr["ref_logp"], ref["logp"], mask):
        return "ppo_step_rewards_wrong", "step 4: kl_shaped_rewards did not get (logp_old, ref_logp) in that order"
    whitened = [e for e in t.events[rewards_at:t.index("gae")] if e["ev"] == "whiten"]
    if cfg["whiten_rewards"]:
        if whitened and whitened[-1]["shift_mean"]:
            return "ppo_step_whiten_rewards_shifted", "step 4: the rewards were whitened with shift_mean=True"
        expected = whitened[-1]["out"] if whitened else None
    else:
        expected = kr["out"]
    if not _same(gae["rewards"], expected, mask):
        return "ppo_step_rewards_wrong", ("step 4: the rewards fed to compute_gae are not kl_shaped_rewards' output"
                                          + (", whitened with shift_mean=False" if cfg["whiten_rewards"] else
                                             " (whiten_rewards is off)"))
    return None


def _advantages(t: _T, cfg: dict, batch: int, coef: float) -> tuple[str, str] | None:
    gae, add = t.first("gae"), t.first("add")
    if gae is None or add is None:
        return None
    mask = t.first("generate")["mask"]
    if not (_num(gae["gamma"], cfg["gamma"]) and _num(gae["lam"], cfg["lam"])):
        return "ppo_step_gae_arguments", f"step 5: compute_gae(gamma={gae['gamma']}, lam={gae['lam']})"
    fields = add["fields"]
    if not _same(gae["values"], fields.get("values"), mask):
        return "ppo_step_values_wrong", "step 5: compute_gae did not get the stored rollout values"
    if len(t.all("gae")) > 1:
        return "ppo_step_advantages_recomputed", f"step 5: compute_gae ran {len(t.all('gae'))} times, expected once"
    after_gae = [e for e in t.events[t.index("gae"):t.index("add")] if e["ev"] == "whiten"]
    if _same(fields.get("advantages"), gae["advantages"], mask) or not after_gae \
            or any(e["ev"] == "whiten" for e in t.events[t.index("add"):]):
        return "ppo_step_no_advantage_whitening", "step 5: the buffer does not hold whiten(advantages) of the rollout"
    if not _same(fields.get("advantages"), after_gae[-1]["out"], mask) or after_gae[-1]["shift_mean"] is not True:
        return "ppo_step_no_advantage_whitening", "step 5: the stored advantages are not whiten(advantages, mask)"
    if not _same(fields.get("returns"), gae["returns"], mask):
        return "ppo_step_returns_wrong", "step 6: the stored returns are not compute_gae's returns"
    return None


def _training(t: _T, cfg: dict, batch: int, coef: float) -> tuple[str, str] | None:
    mbs, losses = t.all("minibatches"), t.all("loss")
    # With lr 0 the policy never moves, so logp == logp_old all along and says nothing.
    norms = [e["grad_norm"] for e in t.all("step")]
    if losses and norms and cfg["learning_rate"] > 0 and all(n == 0.0 for n in norms) \
            and any(abs(e["loss"]) > 1e-6 for e in losses if isinstance(e["loss"], float)):
        return "ppo_step_zero_gradient_steps", "step 7: every optimizer.step() ran on a zero gradient"
    moved = any(n > 0 for n in norms)
    if len(t.all("add")) > 1 or (losses and moved and cfg["learning_rate"] > 0 and all(e["old_is_new"] for e in losses)):
        return "ppo_step_logp_old_recomputed", "step 7: logp_old was refreshed from the policy during training"
    if any(not _num(e["size"], cfg["mini_batch_size"]) for e in mbs):
        return "ppo_step_minibatch_size", f"step 7: minibatches({[e['size'] for e in mbs]}), " \
                                          f"the config's mini_batch_size is {cfg['mini_batch_size']}"
    if any(not e["given_generator"] for e in mbs):
        return "ppo_step_wrong_order", "step 7: minibatches(...) was not given the step's generator"
    per_epoch = -(-batch // cfg["mini_batch_size"])
    if mbs and (len(mbs) != cfg["ppo_epochs"] or len(losses) != cfg["ppo_epochs"] * per_epoch):
        if len(losses) == cfg["ppo_epochs"] * per_epoch:  # the right number of updates from too few draws
            return "ppo_step_wrong_epochs", (f"step 7: {len(mbs)} minibatches(...) call(s) for {cfg['ppo_epochs']} "
                                             "epochs: each epoch must draw its own mini-batches")
        return "ppo_step_wrong_epochs", (f"step 7: {len(mbs)} pass(es) over the buffer and {len(losses)} losses, "
                                         f"expected {cfg['ppo_epochs']} and {cfg['ppo_epochs'] * per_epoch}")
    for e in losses:
        for key, name in (("clip_eps", "cliprange"), ("clip_range_value", "cliprange_value"),
                          ("vf_coef", "vf_coef"), ("ent_coef", "ent_coef")):
            if not _num(e[key], cfg[name]):
                return "ppo_step_loss_hyperparameters", f"step 7: ppo_loss({key}={e[key]}), config.{name}={cfg[name]}"
    return None


def _expected_steps(t: _T, cfg: dict) -> list[int]:
    """Losses per optimizer step the stub makes: ``(i + 1) % gas == 0`` within each pass over the buffer."""
    gas = cfg["gradient_accumulation_steps"]
    starts = [i for i, e in enumerate(t.events) if e["ev"] == "minibatches"] + [len(t.events)]
    out: list[int] = []
    for a, b in zip(starts, starts[1:]):
        n = sum(e["ev"] == "loss" for e in t.events[a:b])
        out += [gas] * (n // gas)
    return out


def _optimizer(t: _T, cfg: dict, batch: int, coef: float) -> tuple[str, str] | None:
    gas, since = cfg["gradient_accumulation_steps"], 0
    pattern, count = [], 0
    for e in t.events:
        if e["ev"] == "loss":
            since, count = since + 1, count + 1
        elif e["ev"] == "step":
            pattern.append(count)
            since = count = 0
        elif e["ev"] == "zero_grad" and 0 < since < gas and gas > 1:
            return "ppo_step_accumulation_broken", "step 7: optimizer.zero_grad() inside an accumulation group"
    if t.all("minibatches") and pattern != _expected_steps(t, cfg):
        return "ppo_step_optimizer_steps", f"step 7: losses per optimizer.step(): {pattern}, " \
                                           f"expected {_expected_steps(t, cfg)}"
    for e in t.all("step") + t.all("end"):
        if e.get("moved"):
            return "ppo_step_params_outside_optimizer", "the weights changed outside optimizer.step()"
    return _gradients(t, cfg)


def _gradients(t: _T, cfg: dict) -> tuple[str, str] | None:
    """The accumulation scaling (what each ``backward()`` ran on, against the mini-batch's ``ppo_loss``) and
    the clip (``clip_grad_norm_(..., config.max_grad_norm)`` right before every step, or a gradient norm
    within ``max_grad_norm`` at the step where the clip call was not observed)."""
    gas, max_norm = cfg["gradient_accumulation_steps"], cfg["max_grad_norm"]
    last_loss = None
    for e in t.events:
        if e["ev"] == "loss":
            last_loss = e["loss"]
        elif e["ev"] == "backward" and isinstance(last_loss, float) and abs(last_loss) > 1e-6 \
                and isinstance(e["value"], float) and gas > 1 and _num(e["value"] / last_loss, 1.0, 1e-4):
            return "ppo_step_no_accumulation_scaling", (f"step 7: backward() on the full mini-batch loss, not on "
                                                        f"loss / gradient_accumulation_steps ({gas})")
    clips = t.all("clip")
    for i, e in enumerate(t.events):
        if e["ev"] != "step":
            continue
        before = next((c for c in reversed(t.events[:i]) if c["ev"] in ("clip", "step", "loss")), None)
        if before is not None and before["ev"] == "clip":
            if not _num(before["max_norm"], max_norm):
                return "ppo_step_no_grad_clip", f"step 7: clip_grad_norm_(max_norm={before['max_norm']})"
        elif clips:
            return "ppo_step_no_grad_clip", "step 7: the gradient was not clipped right before optimizer.step()"
        elif e["grad_norm"] > max_norm * (1 + 1e-4):
            return "ppo_step_no_grad_clip", f"step 7: gradient norm {e['grad_norm']:.4g} > max_grad_norm {max_norm}"
    return None


def _controller(t: _T, cfg: dict, batch: int, coef: float) -> tuple[str, str] | None:
    updates = t.all("kl_update")
    if not updates:
        return "ppo_step_kl_controller_not_updated", "step 8: kl_ctl.update was never called"
    steps = [i for i, e in enumerate(t.events) if e["ev"] == "step"]
    if len(updates) != 1 or (steps and t.index("kl_update") < steps[-1]):
        return "ppo_step_wrong_order", "step 8: kl_ctl.update must run once, after the updates"
    u = updates[0]
    if not _num(u["n_steps"], batch):
        return "ppo_step_kl_units", f"step 8: kl_ctl.update(..., n_steps={u['n_steps']}), B is {batch}"
    kr, mask = t.first("kl_rewards"), t.first("generate")["mask"]
    if kr is not None and isinstance(kr["logp"], torch.Tensor) and isinstance(kr["ref_logp"], torch.Tensor):
        m = mask.double()
        kl = float((((kr["logp"].double() - kr["ref_logp"].double()) * m).sum(1)).mean())
        if not _num(u["current"], kl, 1e-4):
            return "ppo_step_kl_units", f"step 8: current_kl={u['current']:.6g}, the mean summed KL is {kl:.6g}"
    if t.all("purge") == [] or t.index("purge") < (steps[-1] if steps else 0):
        return "ppo_step_no_purge", "step 9: buf.purge() was not called after training"
    return None


def _stats(t: _T, cfg: dict, coef: float, stats: Any, after: Any) -> tuple[str, str] | None:
    if not isinstance(stats, dict):
        return None
    got = stats.get("objective/kl_coef")
    if isinstance(got, float) and not _num(got, coef):
        if _num(got, after if isinstance(after, float) else math.nan):
            return "ppo_step_kl_coef_reported_after_update", "stats['objective/kl_coef'] is the updated value"
        return "ppo_step_stats_inconsistent", "stats['objective/kl_coef'] is not kl_ctl.value used for the rewards"
    reward, kr, mask = t.first("reward"), t.first("kl_rewards"), t.first("generate")["mask"]
    checks = []
    if reward is not None and isinstance(reward["scores"], torch.Tensor):
        checks.append(("ppo/mean_scores", float(reward["scores"].double().mean())))
    if kr is not None and isinstance(kr["logp"], torch.Tensor) and isinstance(kr["ref_logp"], torch.Tensor):
        m = mask.double()
        checks.append(("objective/kl", float((((kr["logp"].double() - kr["ref_logp"].double()) * m).sum(1)).mean())))
    losses = [e["loss"] for e in t.all("loss")]
    if losses and all(isinstance(x, float) for x in losses):
        checks.append(("ppo/loss/total", sum(losses) / len(losses)))
    for key, want in checks:
        if not _num(stats.get(key), want, TOL):
            return "ppo_step_stats_inconsistent", f"stats[{key!r}]={stats.get(key)!r}, the step's own value is {want:.6g}"
    return None


#: The stubs' message: ``NotImplementedError("<module>.<qualname>: <TODO>")`` (tools/make_exercises.py).
_STUB_PLACE = re.compile(r"^(?:NotImplementedError: )?(ex[1-6]_[a-z0-9_]+)\.([A-Za-z_][\w.]{0,80}):")


def unimplemented_dependency(exc: BaseException) -> tuple[str, str] | None:
    """(diagnosis id, detail) when ``exc`` is an earlier exercise's stub raising inside exercise 7, else None
    (a finished step is not reported "not implemented" because ex5 is still a stub).

    Reads the exception's type name and message only: a ``NotImplementedError`` from ``ppo-course check``, or
    the sandbox's ``StudentError`` (``type_name``, ``message``) in grading, whose message starts with the
    stub's ``<module>.<qualname>:``.

    Returns:
        ``("ex7_needs_<exN>", "<module>.<qualname> is not implemented yet; exercise 7 uses it")``.
    """
    name = getattr(exc, "type_name", None) or type(exc).__name__
    message = getattr(exc, "message", None)
    text = message if isinstance(message, str) else str(exc)
    if name != "NotImplementedError":
        return None
    found = _STUB_PLACE.match(text.strip())
    if found is None:
        return None
    stem, where = found.group(1), found.group(2)
    return f"ex7_needs_{stem.split('_')[0]}", f"{stem}.{where} is not implemented yet; exercise 7 uses it"
