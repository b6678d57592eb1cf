"""Probes: run one exercise module on fixed, nasty inputs and record what it does.

`probe(exercise, module)` returns a flat record {name: value} where a value is
a tensor (padding set to 0 so that only real positions are compared), a float,
a string (a dtype, or "raised TypeError" when the call raised) or a bool.
`differences(a, b)` lists the names whose values disagree. The catalogue's
sanity test uses them to show that each buggy entry differs from the oracle
(and from the solution) somewhere, and that each correct variant does not.

The inputs follow the contract's conventions: right-padded prefix masks given
as bool, int and float, finite junk (|x| ≤ 20) in padding, a full row (no
padding: a truncated response) and a one-token row, float32 and float64.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import torch

Record = dict[str, Any]

LENGTHS = (5, 1, 3, 6)  # B=4, T=6: a mid row, a one-token row, a short row, a full (truncated) row
T = 6


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def make_mask(kind: str, lengths=LENGTHS, t: int = T) -> torch.Tensor:
    """[B, T] prefix mask of the given lengths, as "bool", "int" (long) or "float"."""
    m = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]
    return {"bool": m, "int": m.long(), "float": m.float()}[kind]


def with_junk(x: torch.Tensor, mask: torch.Tensor, seed: int) -> torch.Tensor:
    """Copy of x whose padding holds junk in [-20, 20] (contract: never 0 by courtesy)."""
    junk = (torch.rand(x.shape, generator=_gen(seed), dtype=torch.float64) * 40 - 20).to(x.dtype)
    return torch.where(mask.bool(), x, junk)


def _randn(*shape, seed: int, dtype=torch.float32, scale=1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=_gen(seed), dtype=torch.float64) * scale).to(dtype)


def _zero_pad(x, mask):
    return torch.where(mask.bool(), x, torch.zeros_like(x))


def _call(rec: Record, name: str, fn: Callable[[], Any]) -> Any:
    """Run fn; on an exception record "raised <type>" under name and return None."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - a student's code may raise anything
        rec[name] = f"raised {type(exc).__name__}"
        return None


def _put(rec: Record, name: str, value: Any, mask=None) -> None:
    if isinstance(value, torch.Tensor):
        rec[name + ".dtype"] = str(value.dtype)
        rec[name + ".requires_grad"] = bool(value.requires_grad)
        v = value.detach()
        if mask is not None and v.shape == mask.shape:
            v = _zero_pad(v, mask)
        rec[name] = v.to(torch.float64)
    else:
        rec[name] = value


def _grad_of(rec, name, out, wrt: dict[str, torch.Tensor], mask=None):
    """Gradients of sum(out · w) for a fixed w, recorded per input (None = no graph)."""
    if not isinstance(out, torch.Tensor):
        return
    if not out.requires_grad:
        rec[name + ".grad"] = "no graph"
        return
    w = _randn(*out.shape, seed=99, dtype=out.dtype) if out.dim() else torch.ones((), dtype=out.dtype)
    grads = torch.autograd.grad((out * w).sum(), list(wrt.values()), allow_unused=True)
    for key, g in zip(wrt, grads):
        g = torch.zeros_like(wrt[key]) if g is None else g
        _put(rec, f"{name}.grad[{key}]", g, mask)


# ---------------------------------------------------------------- ex1
def probe_ex1(mod) -> Record:
    rec: Record = {}
    for dtype in (torch.float32, torch.float64):
        for scale, tag in ((1.0, "normal"), (300.0, "huge")):
            logits = _randn(4, T, 11, seed=1, dtype=dtype, scale=scale).requires_grad_(True)
            tokens = torch.randint(0, 11, (4, T), generator=_gen(2))
            before = logits.detach().clone()
            name = f"logprobs[{dtype}][{tag}]"
            out = _call(rec, name, lambda: mod.logprobs_from_logits(logits, tokens))
            rec[name + ".inputs_unchanged"] = bool(torch.equal(before, logits.detach()))
            if out is not None:
                _put(rec, name, out)
                _grad_of(rec, name, out, {"logits": logits})
        tokens = torch.randint(0, 11, (4, T), generator=_gen(2))
        name = f"logprobs[{dtype}][float_tokens]"
        rec[name] = "accepted"  # overwritten by "raised <type>" when refused (the contract: ValueError)
        _call(rec, name, lambda: mod.logprobs_from_logits(_randn(4, T, 11, seed=1, dtype=dtype), tokens.to(dtype)))
        lp_new = _randn(4, T, seed=3, dtype=dtype, scale=0.3) - 2.0
        lp_old = _randn(4, T, seed=4, dtype=dtype, scale=0.3) - 2.0
        for tag, a, b in (("normal", lp_new, lp_old), ("tiny", lp_new * 0 - 1000.0, lp_old * 0 - 1000.0),
                          ("far", lp_new - 200.0, lp_old), ("far_up", lp_old + 25.0, lp_old)):
            a = a.clone().requires_grad_(True)
            b = b.clone().requires_grad_(True)
            name = f"ratio[{dtype}][{tag}]"
            out = _call(rec, name, lambda: mod.probability_ratio(a, b))
            if out is not None:
                _put(rec, name, out)
                # in log space: a ratio e^−25 that comes out 0 (or e^−200 in float64) differs from e^Δ here
                rec[name + ".log"] = torch.log(out.detach().to(torch.float64))
                _grad_of(rec, name, out, {"logp_new": a, "logp_old": b})
        name = f"ratio[{dtype}][shapes]"  # [2,3] against [1,3]: a ValueError, not a broadcast
        rec[name] = "accepted"  # overwritten by "raised <type>" when refused (the contract: ValueError)
        _call(rec, name, lambda: mod.probability_ratio(torch.zeros(2, 3, dtype=dtype), torch.zeros(1, 3, dtype=dtype)))
    return rec


# ---------------------------------------------------------------- ex2
def _policy_batch(dtype, seed, mask):
    logp_old = _randn(4, T, seed=seed, dtype=dtype, scale=0.5) - 1.5
    logp_new = logp_old + _randn(4, T, seed=seed + 1, dtype=dtype, scale=0.35)
    adv = _randn(4, T, seed=seed + 2, dtype=dtype)
    return (with_junk(logp_new, mask, seed + 3), with_junk(logp_old, mask, seed + 4),
            with_junk(adv, mask, seed + 5))


def probe_ex2(mod) -> Record:
    rec: Record = {}
    for dtype in (torch.float32, torch.float64):
        for kind in ("bool", "int", "float"):
            mask = make_mask(kind)
            for eps in (0.2, 0.1):
                lp_new, lp_old, adv = _policy_batch(dtype, 10, mask)
                lp_new.requires_grad_(True)
                lp_old.requires_grad_(True)
                adv.requires_grad_(True)
                name = f"surrogate[{dtype}][{kind}][{eps}]"
                before = [t.detach().clone() for t in (lp_new, lp_old, adv, mask)]
                out = _call(rec, name, lambda: mod.clipped_surrogate_loss(lp_new, lp_old, adv, mask, clip_eps=eps))
                after = [t.detach() for t in (lp_new, lp_old, adv, mask)]
                rec[name + ".inputs_unchanged"] = all(torch.equal(x, y) for x, y in zip(before, after))
                if out is not None:
                    _put(rec, name, out)
                    _grad_of(rec, name, out, {"logp_new": lp_new, "logp_old": lp_old, "advantages": adv}, mask)
        lp = torch.zeros(4, T, dtype=dtype)
        name = f"surrogate[{dtype}][advantages_shape]"
        rec[name] = "accepted"  # overwritten by "raised <type>" when refused (the contract: ValueError)
        _call(rec, name, lambda: mod.clipped_surrogate_loss(lp, lp, torch.ones(4, 1, dtype=dtype), make_mask("bool")))
        name = f"surrogate[{dtype}][mask_shape]"  # a [4, 1] mask: a ValueError, not a broadcast
        rec[name] = "accepted"  # overwritten by "raised <type>" when refused (the contract: ValueError)
        _call(rec, name, lambda: mod.clipped_surrogate_loss(lp, lp, lp, torch.ones(4, 1, dtype=torch.bool)))
        # |log r| = 25 where the unclipped term is the smaller one (r = e^25 with Â < 0): nothing may clamp r.
        far = torch.tensor([[25.0, -25.0, 0.1]], dtype=dtype)
        name = f"surrogate[{dtype}][far]"
        out = _call(rec, name, lambda: mod.clipped_surrogate_loss(far, torch.zeros_like(far),
                                                                  torch.tensor([[-1.0, 2.0, 0.5]], dtype=dtype),
                                                                  torch.ones(1, 3)))
        if out is not None:
            _put(rec, name, out)
    # A float64 mask beside float32 data: the loss keeps the data's dtype (CONTRACT: never the mask's).
    wide = make_mask("float").double()
    lp_new, lp_old, adv = _policy_batch(torch.float32, 10, wide)
    name = "surrogate[float32][float64 mask]"
    out = _call(rec, name, lambda: mod.clipped_surrogate_loss(lp_new, lp_old, adv, wide))
    if out is not None:
        _put(rec, name, out)
    return rec


# ---------------------------------------------------------------- ex3
def probe_ex3(mod) -> Record:
    rec: Record = {}
    for dtype in (torch.float32, torch.float64):
        for kind in ("bool", "int", "float"):
            mask = make_mask(kind)
            old_values = with_junk(_randn(4, T, seed=20, dtype=dtype), mask, 21)
            values = with_junk(old_values + _randn(4, T, seed=22, dtype=dtype, scale=0.4), mask, 23)
            returns = with_junk(old_values + _randn(4, T, seed=24, dtype=dtype), mask, 25)
            for c in (0.2, 0.5):
                v = values.clone().requires_grad_(True)
                ov = old_values.clone().requires_grad_(True)
                r = returns.clone().requires_grad_(True)
                name = f"value_loss[{dtype}][{kind}][{c}]"
                out = _call(rec, name, lambda: mod.clipped_value_loss(v, ov, r, mask, clip_range_value=c))
                if out is not None:
                    _put(rec, name, out)
                    _grad_of(rec, name, out, {"values": v, "old_values": ov, "returns": r}, mask)
            for scale, tag in ((1.0, "normal"), (300.0, "huge")):
                logits = with_junk(_randn(4, T, 9, seed=26, dtype=dtype, scale=scale),
                                   mask[:, :, None].expand(4, T, 9), 27).requires_grad_(True)
                name = f"entropy[{dtype}][{kind}][{tag}]"
                out = _call(rec, name, lambda: mod.entropy_from_logits(logits, mask))
                if out is not None:
                    _put(rec, name, out)
                    _grad_of(rec, name, out, {"logits": logits})
            lp_new, lp_old, adv = _policy_batch(dtype, 30, mask)
            logits = with_junk(_randn(4, T, 9, seed=36, dtype=dtype), mask[:, :, None].expand(4, T, 9), 37)
            for kwargs in ({}, {"clip_eps": 0.1, "clip_range_value": 0.5, "vf_coef": 0.7, "ent_coef": 0.3}):
                a = lp_new.clone().requires_grad_(True)
                v = values.clone().requires_grad_(True)
                lg = logits.clone().requires_grad_(True)
                name = f"ppo_loss[{dtype}][{kind}][{sorted(kwargs.items())}]"
                res = _call(rec, name, lambda: mod.ppo_loss(a, lp_old, adv, v, old_values, returns, lg, mask, **kwargs))
                if res is None:
                    continue
                loss, stats = res
                _put(rec, name, loss)
                _grad_of(rec, name, loss, {"logp_new": a, "values": v, "logits": lg}, mask)
                for key in ("approx_kl", "clipfrac"):
                    val = stats.get(key) if isinstance(stats, dict) else None
                    rec[f"{name}.stats[{key}].is_float"] = isinstance(val, float)
                    if isinstance(val, torch.Tensor):
                        val = val.detach()
                    rec[f"{name}.stats[{key}]"] = float(val) if val is not None else "missing"
        _probe_far_ratio_ppo_loss(mod, rec, dtype)
    _probe_wide_mask_losses(mod, rec)
    return rec


def _probe_wide_mask_losses(mod, rec: Record) -> None:
    """The value loss and the entropy with float32 data beside a float64 mask: the data's dtype (CONTRACT)."""
    wide = make_mask("float").double()
    old_values = with_junk(_randn(4, T, seed=20), wide, 21)
    values = with_junk(old_values + _randn(4, T, seed=22, scale=0.4), wide, 23)
    returns = with_junk(old_values + _randn(4, T, seed=24), wide, 25)
    name = "value_loss[float32][float64 mask]"
    out = _call(rec, name, lambda: mod.clipped_value_loss(values, old_values, returns, wide))
    if out is not None:
        _put(rec, name, out)
    logits = with_junk(_randn(4, T, 9, seed=26), wide[:, :, None].expand(4, T, 9), 27)
    name = "entropy[float32][float64 mask]"
    out = _call(rec, name, lambda: mod.entropy_from_logits(logits, wide))
    if out is not None:
        _put(rec, name, out)


def _probe_far_ratio_ppo_loss(mod, rec: Record, dtype) -> None:
    """ppo_loss at |log r| = 25 where the unclipped term is the smaller one (r = e^25, Â < 0): nothing may clamp r."""
    far = torch.tensor([[25.0, -25.0, 0.1]], dtype=dtype)
    zero, small = torch.zeros(1, 3, dtype=dtype), torch.tensor([[0.3, -0.1, 0.2]], dtype=dtype)
    res = _call(rec, f"ppo_loss[{dtype}][far]", lambda: mod.ppo_loss(
        far, zero, torch.tensor([[-1.0, 2.0, 0.5]], dtype=dtype), small, zero, small, torch.zeros(1, 3, 4, dtype=dtype),
        torch.ones(1, 3)))
    if isinstance(res, tuple) and res:
        _put(rec, f"ppo_loss[{dtype}][far]", res[0])


# ---------------------------------------------------------------- ex4
def probe_ex4(mod) -> Record:
    rec: Record = {}
    for dtype in (torch.float32, torch.float64):
        for kind in ("bool", "int", "float"):
            mask = make_mask(kind)
            rewards = with_junk(_randn(4, T, seed=40, dtype=dtype), mask, 41)
            values = with_junk(_randn(4, T, seed=42, dtype=dtype), mask, 43)
            for gamma, lam in ((1.0, 0.95), (0.9, 0.8), (0.5, 1.0)):
                v = values.clone().requires_grad_(True)
                r = rewards.clone().requires_grad_(True)
                before = [t.detach().clone() for t in (r, v, mask)]
                name = f"gae[{dtype}][{kind}][{gamma},{lam}]"
                res = _call(rec, name, lambda: mod.compute_gae(r, v, mask, gamma=gamma, lam=lam))
                after = [t.detach() for t in (r, v, mask)]
                rec[name + ".inputs_unchanged"] = all(torch.equal(x, y) for x, y in zip(before, after))
                if res is not None:
                    adv, ret = res
                    _put(rec, name + ".advantages", adv, mask)
                    _put(rec, name + ".returns", ret, mask)
            x = with_junk(_randn(4, T, seed=44, dtype=dtype, scale=3.0) + 2.0, mask, 45)
            for shift in (True, False):
                name = f"whiten[{dtype}][{kind}][{shift}]"
                out = _call(rec, name, lambda: mod.whiten(x, mask, shift_mean=shift))
                if out is not None:
                    _put(rec, name, out, mask)
            # near-constant data (σ² ≈ 1e-8): where sqrt(var + 1e-8) and std + 1e-8 part ways.
            # float64 only: in float32 the cancellation around 3.0 costs ~0.4 % and an
            # implementation that computes in float64 inside is more accurate, not wrong.
            if dtype == torch.float64:
                flat = with_junk(3.0 + 1e-4 * _randn(4, T, seed=46, dtype=dtype), mask, 47)
                name = f"whiten_near_constant[{kind}]"
                out = _call(rec, name, lambda: mod.whiten(flat, mask))
                if out is not None:
                    _put(rec, name, out, mask)
            one = make_mask(kind, lengths=(1, 0, 0, 0))
            name = f"whiten_one_element[{kind}]"
            out = _call(rec, name, lambda: mod.whiten(x, one))
            if out is not None:
                rec[name] = "returned"
    return rec


# ---------------------------------------------------------------- ex5
def _cat(batches, key):
    """Concatenation of one field over mini-batches ("empty" when there are none)."""
    return torch.cat([b[key] for b in batches]).to(torch.float64) if batches else "empty"


def probe_ex5(mod) -> Record:
    rec: Record = {}

    def fields(start, n, seed):
        return {
            "ids": torch.arange(start, start + n),
            "logp_old": _randn(n, 3, seed=seed),
            "mask": torch.ones(n, 3, dtype=torch.bool),
        }

    buf = _call(rec, "new", lambda: mod.RolloutBuffer())
    if buf is None:
        return rec
    rec["phase.initial"] = _call(rec, "phase.initial", lambda: str(buf.phase))
    rec["len.empty"] = _call(rec, "len.empty", lambda: len(buf))
    _call(rec, "start_training.empty", lambda: buf.start_training()) or rec.setdefault("start_training.empty", "ok")
    first = fields(0, 4, 50)
    _call(rec, "add.1", lambda: buf.add(**first)) or rec.setdefault("add.1", "ok")
    first["logp_old"].add_(100.0)  # the caller reuses its tensor: the buffer must hold a copy
    _call(rec, "add.2", lambda: buf.add(**fields(4, 3, 51))) or rec.setdefault("add.2", "ok")
    _call(rec, "add.bad_keys", lambda: buf.add(ids=torch.arange(2))) or rec.setdefault("add.bad_keys", "ok")
    _call(rec, "add.empty", lambda: buf.add()) or rec.setdefault("add.empty", "ok")
    # Same keys, another trailing shape than this cycle's: a ValueError (the docstring's promise).
    _call(rec, "add.bad_trailing", lambda: buf.add(ids=torch.arange(2), logp_old=_randn(2, 4, seed=54),
                                                   mask=torch.ones(2, 3, dtype=torch.bool))) \
        or rec.setdefault("add.bad_trailing", "ok")
    # Same keys and shapes, another dtype than this cycle's: a ValueError (the docstring's promise).
    _call(rec, "add.bad_dtype", lambda: buf.add(ids=torch.arange(2),
                                                logp_old=_randn(2, 3, seed=55, dtype=torch.float64),
                                                mask=torch.ones(2, 3, dtype=torch.bool))) \
        or rec.setdefault("add.bad_dtype", "ok")
    rec["len.7"] = _call(rec, "len.7", lambda: len(buf))
    _call(rec, "minibatches.collect", lambda: next(iter(buf.minibatches(2)))) or rec.setdefault(
        "minibatches.collect", "ok")
    _called(rec, "minibatches.collect.call", lambda: buf.minibatches(2))  # the error at the call, not at next()
    _call(rec, "start_training", lambda: buf.start_training()) or rec.setdefault("start_training", "ok")
    rec["phase.train"] = _call(rec, "phase.train", lambda: str(buf.phase))
    rec["len.train"] = _call(rec, "len.train", lambda: len(buf))  # the data stays stored until purge()
    _call(rec, "start_training.again", lambda: buf.start_training()) or rec.setdefault("start_training.again", "ok")
    _call(rec, "add.train", lambda: buf.add(**fields(7, 1, 52))) or rec.setdefault("add.train", "ok")
    _call(rec, "minibatches.zero", lambda: next(iter(buf.minibatches(0)))) or rec.setdefault(
        "minibatches.zero", "ok")
    _called(rec, "minibatches.zero.call", lambda: buf.minibatches(0))
    _call(rec, "minibatches.negative", lambda: next(iter(buf.minibatches(-1)))) or rec.setdefault(
        "minibatches.negative", "ok")
    for epoch, seed in enumerate((0, 1)):
        batches = _call(rec, f"epoch{epoch}", lambda: list(buf.minibatches(3, generator=_gen(seed))))
        if batches is None:
            continue
        rec[f"epoch{epoch}.sizes"] = str([len(b["ids"]) for b in batches])
        rec[f"epoch{epoch}.ids"] = _cat(batches, "ids")
        rec[f"epoch{epoch}.logp_old"] = _cat(batches, "logp_old")
    it = _call(rec, "iter.before_purge", lambda: iter(buf.minibatches(2, generator=_gen(3))))
    if it is not None:
        _call(rec, "iter.first", lambda: next(it)) is not None and rec.setdefault("iter.first", "ok")
    _call(rec, "purge", lambda: buf.purge()) or rec.setdefault("purge", "ok")
    if it is not None:
        _call(rec, "iter.after_purge", lambda: next(it)) is not None and rec.setdefault("iter.after_purge", "ok")
    rec["len.purged"] = _call(rec, "len.purged", lambda: len(buf))
    rec["phase.purged"] = _call(rec, "phase.purged", lambda: str(buf.phase))
    _call(rec, "minibatches.purged", lambda: next(iter(buf.minibatches(2)))) or rec.setdefault(
        "minibatches.purged", "ok")
    _call(rec, "cycle2.add", lambda: buf.add(**fields(100, 2, 53))) or rec.setdefault("cycle2.add", "ok")
    _call(rec, "cycle2.start", lambda: buf.start_training()) or rec.setdefault("cycle2.start", "ok")
    got = _call(rec, "cycle2.epoch", lambda: list(buf.minibatches(5, generator=_gen(4))))
    if got is not None:
        rec["cycle2.ids"] = _cat(got, "ids")
    _probe_global_rng(mod, rec, fields(0, 16, 55))
    _probe_new_cycle_shape(mod, rec, fields(0, 2, 56))
    _probe_purge_while_collecting(mod, rec, fields(0, 2, 58), fields(200, 3, 59))
    # A field that carries the caller's autograd graph must come back detached ("stores detached copies").
    graph = _call(rec, "graph.new", lambda: mod.RolloutBuffer())
    if graph is not None:
        leaf = torch.ones(2, 3, requires_grad=True)
        _call(rec, "graph.add", lambda: graph.add(ids=torch.arange(2), logp_old=leaf * 2.0,
                                                  mask=torch.ones(2, 3, dtype=torch.bool)))
        _call(rec, "graph.start", lambda: graph.start_training())
        mb = _call(rec, "graph.minibatch", lambda: next(iter(graph.minibatches(2, generator=_gen(5)))))
        if isinstance(mb, dict) and isinstance(mb.get("logp_old"), torch.Tensor):
            rec["graph.keeps_graph"] = bool(mb["logp_old"].requires_grad or mb["logp_old"].grad_fn is not None)
    return rec


def _training_buffer(mod, rec: Record, name: str, rollout: dict):
    """A new RolloutBuffer holding ``rollout``, in its training phase (each step recorded under ``name.*``);
    None when it cannot be made."""
    buf = _call(rec, f"{name}.new", lambda: mod.RolloutBuffer())
    if buf is not None:
        _call(rec, f"{name}.add", lambda: buf.add(**rollout))
        _call(rec, f"{name}.start", lambda: buf.start_training())
    return buf


def _probe_global_rng(mod, rec: Record, rollout: dict) -> None:
    """generator=None shuffles with torch's global RNG: two epochs over 16 rows both in storage order mean none."""
    buf = _training_buffer(mod, rec, "global_rng", rollout)
    if buf is None:
        return
    epochs = [_call(rec, f"global_rng.epoch{k}", lambda: list(buf.minibatches(16))) for k in range(2)]
    if all(e is not None for e in epochs):
        rec["global_rng.storage_order"] = all(_cat(e, "ids").tolist() == list(range(16)) for e in epochs)


def _probe_new_cycle_shape(mod, rec: Record, rollout: dict) -> None:
    """After purge() a new cycle may use another trailing shape (keys and shapes bind within a cycle only)."""
    buf = _training_buffer(mod, rec, "new_cycle", rollout)
    if buf is None:
        return
    _call(rec, "new_cycle.purge", lambda: buf.purge())
    longer = {**rollout, "logp_old": _randn(2, 5, seed=57), "mask": torch.ones(2, 5, dtype=torch.bool)}
    _called(rec, "new_cycle.add_longer", lambda: buf.add(**longer))


def _probe_purge_while_collecting(mod, rec: Record, before: dict, after: dict) -> None:
    """purge() in the collect phase wipes the rows added before it ("Wipe everything")."""
    buf = _call(rec, "collect_purge.new", lambda: mod.RolloutBuffer())
    if buf is None:
        return
    _called(rec, "collect_purge.add_before", lambda: buf.add(**before))
    _called(rec, "collect_purge.purge", lambda: buf.purge())
    _called(rec, "collect_purge.add_after", lambda: buf.add(**after))
    _called(rec, "collect_purge.start", lambda: buf.start_training())
    got = _call(rec, "collect_purge.epoch", lambda: list(buf.minibatches(5, generator=_gen(6))))
    if got is not None:
        ids = _cat(got, "ids")
        rec["collect_purge.ids"] = sorted(ids.tolist()) if isinstance(ids, torch.Tensor) else ids


def _called(rec: Record, name: str, fn: Callable[[], Any]) -> None:
    """Record "ok" when fn() returns (whatever it returns), else what it raised (`_call`)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - a student's code may raise anything
        rec[name] = f"raised {type(exc).__name__}"
    else:
        rec[name] = "ok"


# ---------------------------------------------------------------- ex6
def probe_ex6(mod) -> Record:
    rec: Record = {}
    for dtype in (torch.float32, torch.float64):
        for kind in ("bool", "int", "float"):
            mask = make_mask(kind)
            logp = with_junk(_randn(4, T, seed=60, dtype=dtype, scale=0.5) - 1.0, mask, 61).requires_grad_(True)
            ref = with_junk(_randn(4, T, seed=62, dtype=dtype, scale=0.5) - 1.0, mask, 63).requires_grad_(True)
            # Scores that carry a graph (a reward model output): the rewards must come back detached.
            scores = _randn(4, seed=64, dtype=dtype, scale=2.0).requires_grad_(True)
            name = f"kl[{dtype}][{kind}]"
            out = _call(rec, name, lambda: mod.per_token_kl(logp, ref, mask))
            if out is not None:
                # "0 on padding": compared everywhere, padding included.
                _put(rec, name, out)
            for placement in ("per_token", "last_token"):
                for coef in (0.05, 0.3):
                    name = f"shaped[{dtype}][{kind}][{placement}][{coef}]"
                    out = _call(rec, name, lambda: mod.kl_shaped_rewards(scores, logp, ref, mask, kl_coef=coef,
                                                                          placement=placement))
                    if out is not None:
                        _put(rec, name, out)
    # float64 scores with float32 log-probs: the rewards keep logp's dtype.
    mask = make_mask("bool")
    logp = _randn(4, T, seed=65, dtype=torch.float32, scale=0.5) - 1.0
    for placement in ("per_token", "last_token"):
        name = f"shaped[float64_scores][{placement}]"
        out = _call(rec, name, lambda: mod.kl_shaped_rewards(_randn(4, seed=66, dtype=torch.float64), logp,
                                                              logp - 0.1, mask, kl_coef=0.1, placement=placement))
        if out is not None:
            _put(rec, name, out)
    # A float64 mask beside float32 log-probs decides nothing ("mask: bool/int/float").
    out = _call(rec, "kl[float64_mask]", lambda: mod.per_token_kl(logp, logp - 0.1, mask.double()))
    if out is not None:
        _put(rec, "kl[float64_mask]", out)
    # A 0-dim tensor KL ("float or 0-dim tensor") leaves value a Python float.
    tensor_ctl = _call(rec, "ctl.tensor_kl", lambda: mod.AdaptiveKLController(0.05, 6.0, 10000))
    if tensor_ctl is not None:
        _call(rec, "ctl.tensor_kl.update", lambda: tensor_ctl.update(torch.tensor(6.5, dtype=torch.float64), 64))
        rec["ctl.tensor_kl.value_is_float"] = isinstance(tensor_ctl.value, float)
    for init, target, horizon in ((0.05, 6.0, 10000), (0.2, 1.0, 100)):
        ctl = _call(rec, f"ctl[{init}]", lambda: mod.AdaptiveKLController(init, target, horizon))
        if ctl is None:
            continue
        for i, (kl, n) in enumerate(((6.0, 64), (7.0, 64), (100.0, 128), (0.0, 32), (5.5, 1), (-3.0, 16))):
            _call(rec, f"ctl[{init}].update{i}", lambda: ctl.update(kl, n))
            rec[f"ctl[{init}].value{i}"] = float(ctl.value)
    for target, horizon in ((0.0, 10000), (6.0, -5)):
        name = f"ctl.bad[{target}][{horizon}]"
        rec[name] = "accepted"  # overwritten by "raised <type>" when refused (the contract: ValueError)
        _call(rec, name, lambda: mod.AdaptiveKLController(0.05, target, horizon))
    ctl = _call(rec, "ctl.defaults", lambda: mod.AdaptiveKLController())
    if ctl is not None:
        rec["ctl.defaults.value"] = float(ctl.value)
        ctl.update(12.0, 256)
        rec["ctl.defaults.after"] = float(ctl.value)
    return rec


PROBES = {"ex1_ratio": probe_ex1, "ex2_clipped_loss": probe_ex2, "ex3_full_loss": probe_ex3,
          "ex4_gae": probe_ex4, "ex5_rollout_buffer": probe_ex5, "ex6_kl_reward": probe_ex6}


def probe(exercise: str, module) -> Record:
    """Record what `module` (an exercise module or namespace) does on the fixed probes."""
    return PROBES[exercise](module)


def _same(a, b, rtol=1e-4, atol=1e-5) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        if a.shape != b.shape:
            return False
        return bool(torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    return a == b


def differences(a: Record, b: Record) -> list[str]:
    """Names whose recorded values disagree (missing on one side counts)."""
    return sorted(k for k in set(a) | set(b) if k not in a or k not in b or not _same(a[k], b[k]))


# ---------------------------------------------------------------- ex7
def probe_ex7(mod, steps: int = 2) -> Record:
    """Two PPO steps on the toy task (batch 16, temperature 0.7); records parameters, stats, β and purges.

    The module's `ex5_rollout_buffer` is swapped for a recording subclass, so
    that a step that never purges its buffer shows up even though its numbers
    are right.
    """
    import types

    from ppo_course import toy_task
    from ppo_course.config import PPOConfig

    rec: Record = {}
    events = {"purges": 0, "buffers": 0}
    real = mod.ex5_rollout_buffer.RolloutBuffer

    class RecordingBuffer(real):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            events["buffers"] += 1

        def purge(self):
            events["purges"] += 1
            return super().purge()

    saved = mod.ex5_rollout_buffer
    mod.ex5_rollout_buffer = types.SimpleNamespace(RolloutBuffer=RecordingBuffer)
    try:
        policy, ref = toy_task.sft_policy(seed=0), toy_task.sft_policy(seed=0)
        with warnings.catch_warnings():  # a deliberately small batch (fast probe), outside the book's band
            warnings.simplefilter("ignore")
            # temperature 0.7 (the book's), not the toy's 1.0: a step that forgets to pass the
            # temperature to forward_response is invisible at 1.0
            cfg = PPOConfig.toy(batch_size=16, mini_batch_size=4, gradient_accumulation_steps=2, temperature=0.7)
        opt = torch.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
        gen = _gen(0)
        queries = toy_task.sample_queries(cfg.batch_size, gen)
        kl_ctl = mod.ex6_kl_reward.AdaptiveKLController(cfg.init_kl_coef, cfg.target_kl, cfg.kl_horizon)
        for step in range(steps):
            stats = _call(rec, f"step{step}", lambda: mod.ppo_step(policy, ref, opt, queries, toy_task.score,
                                                                  kl_ctl, cfg, gen))
            if stats is None:
                break
            for key, value in stats.items():
                if not key.startswith("time/"):
                    rec[f"step{step}.{key}"] = float(value)
            rec[f"step{step}.kl_coef_after"] = float(kl_ctl.value)
        rec["params"] = torch.cat([p.detach().flatten() for p in policy.parameters()]).to(torch.float64)
        # One more step in a setting where every config field differs from a default (γ, λ, placement,
        # reward whitening off, the loss coefficients, top-p 0.9 against the toy's 1.0): a step that ignores
        # one of them shows here. Mini-batches of 2, 4 accumulated, no effective clipping: 8 mini-batches per
        # epoch against 4 accumulation steps, so that the accumulated gradient's scale shows.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            other = PPOConfig.toy(batch_size=16, mini_batch_size=2, gradient_accumulation_steps=4, temperature=0.7,
                                  gamma=0.9, lam=0.8, kl_placement="last_token", whiten_rewards=False,
                                  cliprange=0.15, cliprange_value=0.3, vf_coef=0.3, ent_coef=0.02, init_kl_coef=0.1,
                                  top_p=0.9, max_grad_norm=1e6)
        policy2, ref2 = toy_task.sft_policy(seed=0), toy_task.sft_policy(seed=1)
        opt2 = torch.optim.Adam(policy2.parameters(), lr=other.learning_rate)
        kl_ctl2 = mod.ex6_kl_reward.AdaptiveKLController(other.init_kl_coef, other.target_kl, other.kl_horizon)
        updates: list = []
        real_update = kl_ctl2.update

        def recording_update(*args, **kwargs):
            updates.append([float(v) for v in [*args, *kwargs.values()]])
            return real_update(*args, **kwargs)

        kl_ctl2.update = recording_update
        stats = _call(rec, "other", lambda: mod.ppo_step(policy2, ref2, opt2, queries, toy_task.score, kl_ctl2,
                                                         other, _gen(1)))
        # what the controller was given (a step whose β ends right because the error is clipped shows here)
        rec["other.kl_update"] = (torch.tensor(updates[0], dtype=torch.float64) if len(updates) == 1
                                  else f"{len(updates)} updates")
        if stats is not None:
            rec["other.params"] = torch.cat([p.detach().flatten() for p in policy2.parameters()]).to(torch.float64)
    finally:
        mod.ex5_rollout_buffer = saved
    rec["buffers_made"] = events["buffers"]
    rec["purges"] = events["purges"]
    return rec


PROBES["ex7_ppo_step"] = probe_ex7
