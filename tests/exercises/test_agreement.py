"""solutions/ex1-ex6 agree with ppo_reference (written independently) on generated inputs.

Inputs (hypothesis): batch 1–4 × resp_len 1–7, float32 and float64,
bool/int/float prefix masks with at least one real token per row, finite
junk (|x| ≤ 20) in every padding position, and non-default hyper-parameters.
Outputs are compared on real positions, except where the contract says
"0 on padding" (per_token_kl, kl_shaped_rewards): there on every position.
Gradients of the losses are compared too (random upstream weights).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ppo_reference = pytest.importorskip("ppo_reference", reason="ppo_reference/ not importable yet")

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# float32: two independent summation orders over ≤ 28 tokens (and log-softmax over
# ≤ 11 classes of logits up to 1e3) differ by a few ulps of the largest term.
TOL = {torch.float32: dict(rtol=1e-5, atol=1e-4), torch.float64: dict(rtol=1e-10, atol=1e-9)}


@dataclass
class Case:
    """One generated batch: shapes, dtype, a prefix mask in the requested kind, and a seeded RNG."""

    batch: int
    resp_len: int
    dtype: torch.dtype
    mask: torch.Tensor  # [batch, resp_len] bool/int/float
    gen: torch.Generator

    @property
    def real(self) -> torch.Tensor:
        return self.mask.bool()

    def tokens_tensor(self, scale: float = 1.0, shift: float = 0.0) -> torch.Tensor:
        """[batch, resp_len] data on real tokens, uniform junk in [-20, 20] on padding."""
        data = shift + scale * torch.randn(self.batch, self.resp_len, generator=self.gen, dtype=torch.float64)
        junk = torch.empty(self.batch, self.resp_len, dtype=torch.float64).uniform_(-20, 20, generator=self.gen)
        return torch.where(self.real, data, junk).to(self.dtype)


@st.composite
def cases(draw, min_total_real: int = 1) -> Case:
    batch = draw(st.integers(1, 4))
    resp_len = draw(st.integers(1, 7))
    lengths = draw(st.lists(st.integers(1, resp_len), min_size=batch, max_size=batch))
    if sum(lengths) < min_total_real:
        lengths = [resp_len] * batch
    real = torch.arange(resp_len)[None, :] < torch.tensor(lengths)[:, None]  # (B, T) prefix
    kind = draw(st.sampled_from(["bool", "int", "float"]))
    mask = {"bool": real, "int": real.long(), "float": real.double() if draw(st.booleans()) else real.float()}[kind]
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    return Case(batch, resp_len, dtype, mask, gen)


def close_on_real(got, want, case: Case, what: str):
    assert got.dtype == case.dtype, f"{what}: dtype {got.dtype}, expected {case.dtype}"
    torch.testing.assert_close(got[case.real], want[case.real], **TOL[case.dtype], msg=lambda m: f"{what}: {m}")


def close(got, want, case: Case, what: str):
    torch.testing.assert_close(got, want, **TOL[case.dtype], msg=lambda m: f"{what}: {m}")


def grads(fn, inputs: dict[str, torch.Tensor], wrt: tuple[str, ...]):
    """(output, {name: grad}) of a scalar-valued fn, on fresh leaf copies of the inputs."""
    leaves = {k: (v.detach().clone().requires_grad_(k in wrt) if torch.is_tensor(v) and v.is_floating_point() else v)
              for k, v in inputs.items()}
    out = fn(**leaves)
    loss = out[0] if isinstance(out, tuple) else out
    loss.backward()
    return out, {k: leaves[k].grad for k in wrt}


# ---------------------------------------------------------------- ex1


@SETTINGS
@given(case=cases(), vocab=st.integers(2, 11), scale=st.sampled_from([1.0, 30.0, 1e3]))
def test_logprobs_from_logits(solutions, case, vocab, scale):
    logits = (scale * torch.randn(case.batch, case.resp_len, vocab, generator=case.gen, dtype=torch.float64)).to(case.dtype)
    tokens = torch.randint(vocab, (case.batch, case.resp_len), generator=case.gen)
    mine, ref = solutions["ex1_ratio"].logprobs_from_logits, ppo_reference.logprobs_from_logits
    close_on_real(mine(logits, tokens), ref(logits, tokens), case, "logprobs")
    # Gradient of the sum over real tokens (padding positions are unspecified, so left out).
    _, mine_grad = grads(lambda logits: mine(logits, tokens)[case.real].sum(), {"logits": logits}, ("logits",))
    _, ref_grad = grads(lambda logits: ref(logits, tokens)[case.real].sum(), {"logits": logits}, ("logits",))
    close(mine_grad["logits"], ref_grad["logits"], case, "d logprobs / d logits")


@SETTINGS
@given(case=cases())
def test_probability_ratio(solutions, case):
    logp_old = case.tokens_tensor(scale=2.0, shift=-3.0)
    logp_new = logp_old + case.tokens_tensor(scale=0.3)
    close_on_real(solutions["ex1_ratio"].probability_ratio(logp_new, logp_old),
                  ppo_reference.probability_ratio(logp_new, logp_old), case, "ratio")


# ---------------------------------------------------------------- ex2, ex3


def _loss_inputs(case: Case, vocab: int = 5) -> dict[str, torch.Tensor]:
    logp_old = case.tokens_tensor(scale=1.0, shift=-2.0)
    return dict(
        logp_new=logp_old + case.tokens_tensor(scale=0.3),  # ratios on both sides of 1 ± ε
        logp_old=logp_old,
        advantages=case.tokens_tensor(),
        values=case.tokens_tensor(),
        old_values=case.tokens_tensor(),
        returns=case.tokens_tensor(),
        logits=(3 * torch.randn(case.batch, case.resp_len, vocab, generator=case.gen, dtype=torch.float64)).to(case.dtype),
        mask=case.mask,
    )


@SETTINGS
@given(case=cases(), clip_eps=st.sampled_from([0.1, 0.2, 0.35]))
def test_clipped_surrogate_loss(solutions, case, clip_eps):
    x = _loss_inputs(case)
    args = {k: x[k] for k in ("logp_new", "logp_old", "advantages", "mask")}
    wrt = ("logp_new", "logp_old", "advantages")
    mine, g_mine = grads(lambda **a: solutions["ex2_clipped_loss"].clipped_surrogate_loss(**a, clip_eps=clip_eps), args, wrt)
    ref, g_ref = grads(lambda **a: ppo_reference.clipped_surrogate_loss(**a, clip_eps=clip_eps), args, wrt)
    assert mine.dim() == 0 and mine.dtype == case.dtype
    close(mine, ref, case, "clipped surrogate loss")
    close(g_mine["logp_new"], g_ref["logp_new"], case, "d loss / d logp_new")
    for name in ("logp_old", "advantages"):  # constants: no gradient on either side
        assert g_mine[name] is None and g_ref[name] is None, name


@SETTINGS
@given(case=cases(), clip_range_value=st.sampled_from([0.05, 0.2, 1.0]))
def test_clipped_value_loss(solutions, case, clip_range_value):
    x = _loss_inputs(case)
    args = {k: x[k] for k in ("values", "old_values", "returns", "mask")}
    mine, g_mine = grads(lambda **a: solutions["ex3_full_loss"].clipped_value_loss(**a, clip_range_value=clip_range_value), args, ("values",))
    ref, g_ref = grads(lambda **a: ppo_reference.clipped_value_loss(**a, clip_range_value=clip_range_value), args, ("values",))
    close(mine, ref, case, "clipped value loss")
    close(g_mine["values"], g_ref["values"], case, "d value loss / d values")


@SETTINGS
@given(case=cases(), scale=st.sampled_from([1.0, 50.0]))
def test_entropy_from_logits(solutions, case, scale):
    logits = (scale * torch.randn(case.batch, case.resp_len, 7, generator=case.gen, dtype=torch.float64)).to(case.dtype)
    mine, g_mine = grads(lambda logits: solutions["ex3_full_loss"].entropy_from_logits(logits, case.mask), {"logits": logits}, ("logits",))
    ref, g_ref = grads(lambda logits: ppo_reference.entropy_from_logits(logits, case.mask), {"logits": logits}, ("logits",))
    close(mine, ref, case, "entropy")
    close(g_mine["logits"], g_ref["logits"], case, "d entropy / d logits")


@SETTINGS
@given(case=cases(), eps=st.sampled_from([0.1, 0.3]), c=st.sampled_from([0.1, 0.5]),
       vf_coef=st.sampled_from([0.1, 0.7]), ent_coef=st.sampled_from([0.0, 0.05]))
def test_ppo_loss(solutions, case, eps, c, vf_coef, ent_coef):
    x = _loss_inputs(case)
    hp = dict(clip_eps=eps, clip_range_value=c, vf_coef=vf_coef, ent_coef=ent_coef)
    wrt = ("logp_new", "values", "logits")
    (mine, mine_stats), g_mine = grads(lambda **a: solutions["ex3_full_loss"].ppo_loss(**a, **hp), x, wrt)
    (ref, ref_stats), g_ref = grads(lambda **a: ppo_reference.ppo_loss(**a, **hp), x, wrt)
    close(mine, ref, case, "ppo_loss")
    for name in wrt:
        close(g_mine[name], g_ref[name], case, f"d ppo_loss / d {name}")
    for key in ("approx_kl", "clipfrac"):
        assert isinstance(mine_stats[key], float) and isinstance(ref_stats[key], float), key
        assert mine_stats[key] == pytest.approx(ref_stats[key], rel=1e-4, abs=1e-6), key


# ---------------------------------------------------------------- ex4


@SETTINGS
@given(case=cases(), gamma=st.sampled_from([1.0, 0.9]), lam=st.sampled_from([0.95, 0.5, 1.0]))
def test_compute_gae(solutions, case, gamma, lam):
    rewards, values = case.tokens_tensor(), case.tokens_tensor()
    adv, ret = solutions["ex4_gae"].compute_gae(rewards, values, case.mask, gamma=gamma, lam=lam)
    ref_adv, ref_ret = ppo_reference.compute_gae(rewards, values, case.mask, gamma=gamma, lam=lam)
    close_on_real(adv, ref_adv, case, "advantages")
    close_on_real(ret, ref_ret, case, "returns")
    assert not adv.requires_grad and not ret.requires_grad


@SETTINGS
@given(case=cases(), shift_mean=st.booleans())
def test_whiten(solutions, case, shift_mean):
    x = case.tokens_tensor(scale=3.0, shift=1.5)
    if int(case.real.sum()) < 2:  # both must refuse: the unbiased variance is undefined
        with pytest.raises(ValueError):
            solutions["ex4_gae"].whiten(x, case.mask, shift_mean=shift_mean)
        with pytest.raises(ValueError):
            ppo_reference.whiten(x, case.mask, shift_mean=shift_mean)
        return
    close_on_real(solutions["ex4_gae"].whiten(x, case.mask, shift_mean=shift_mean),
                  ppo_reference.whiten(x, case.mask, shift_mean=shift_mean), case, "whiten")


# ---------------------------------------------------------------- ex6


@SETTINGS
@given(case=cases(), kl_coef=st.sampled_from([0.05, 0.2, 1.5]), placement=st.sampled_from(["per_token", "last_token"]))
def test_kl_and_shaped_rewards(solutions, case, kl_coef, placement):
    logp, ref_logp = case.tokens_tensor(shift=-2.0), case.tokens_tensor(shift=-2.0)
    scores = 3 * torch.randn(case.batch, generator=case.gen, dtype=torch.float64).to(case.dtype)
    mine = solutions["ex6_kl_reward"]
    close(mine.per_token_kl(logp, ref_logp, case.mask), ppo_reference.per_token_kl(logp, ref_logp, case.mask), case, "per_token_kl")
    close(mine.kl_shaped_rewards(scores, logp, ref_logp, case.mask, kl_coef, placement),
          ppo_reference.kl_shaped_rewards(scores, logp, ref_logp, case.mask, kl_coef, placement), case,
          f"kl_shaped_rewards({placement})")


@SETTINGS
@given(kls=st.lists(st.floats(-5, 50, allow_nan=False), min_size=1, max_size=8),
       n_steps=st.integers(1, 512), init=st.sampled_from([0.05, 0.2]), target=st.sampled_from([6.0, 2.0]),
       horizon=st.sampled_from([10000, 500]))
def test_adaptive_kl_controller(solutions, kls, n_steps, init, target, horizon):
    mine = solutions["ex6_kl_reward"].AdaptiveKLController(init, target, horizon)
    ref = ppo_reference.AdaptiveKLController(init, target, horizon)
    for kl in kls:
        mine.update(kl, n_steps)
        ref.update(kl, n_steps)
        assert isinstance(mine.value, float)
        assert mine.value == pytest.approx(ref.value, rel=1e-12)


# ---------------------------------------------------------------- ex5


@pytest.mark.parametrize("mini_batch_size", [1, 3, 5, 8])
def test_rollout_buffer_same_minibatches(solutions, mini_batch_size):
    """Same data and generator seed → the same mini-batches, in order, over two epochs and two cycles."""
    mine, ref = solutions["ex5_rollout_buffer"].RolloutBuffer(), ppo_reference.RolloutBuffer()
    gen = torch.Generator().manual_seed(3)
    for cycle in range(2):
        chunks = [dict(logp_old=torch.randn(n, 4, generator=gen, dtype=torch.float64),
                       responses=torch.randint(9, (n, 4), generator=gen),
                       mask=torch.rand(n, 4, generator=gen) < 0.7) for n in (3, 2)]
        for buf in (mine, ref):
            for fields in chunks:
                buf.add(**fields)
            assert len(buf) == 5 and buf.phase == "collect"
            buf.start_training()
            assert buf.phase == "train"
        g_mine, g_ref = torch.Generator().manual_seed(10 + cycle), torch.Generator().manual_seed(10 + cycle)
        for _epoch in range(2):
            got = list(mine.minibatches(mini_batch_size, g_mine))
            want = list(ref.minibatches(mini_batch_size, g_ref))
            assert len(got) == len(want)
            for a, b in zip(got, want):
                assert a.keys() == b.keys()
                for key in a:
                    assert torch.equal(a[key], b[key]), key
        mine.purge(), ref.purge()
        assert len(mine) == len(ref) == 0 and mine.phase == ref.phase == "collect"


def _error_type(action):
    try:
        action()
    except Exception as exc:  # the type is what is compared
        return type(exc).__name__
    return None


def test_rollout_buffer_same_errors(solutions):
    """Misuse raises the same exception types as the reference (ARCHITECTURE.md's table)."""
    results = {}
    for side, cls in (("mine", solutions["ex5_rollout_buffer"].RolloutBuffer), ("ref", ppo_reference.RolloutBuffer)):
        outcome = []
        buf = cls()
        outcome.append(_error_type(buf.start_training))  # empty
        outcome.append(_error_type(lambda: buf.minibatches(2)))  # collect phase
        outcome.append(_error_type(lambda: buf.add()))  # no fields
        outcome.append(_error_type(lambda: buf.add(a=torch.zeros(2, 3), b=torch.zeros(3, 3))))  # batch sizes
        buf.add(a=torch.zeros(2, 3))
        outcome.append(_error_type(lambda: buf.add(b=torch.zeros(2, 3))))  # other keys
        outcome.append(_error_type(lambda: buf.add(a=torch.zeros(2, 4))))  # other trailing shape
        buf.start_training()
        outcome.append(_error_type(lambda: buf.add(a=torch.zeros(1, 3))))  # train phase
        outcome.append(_error_type(buf.start_training))  # already training
        outcome.append(_error_type(lambda: buf.minibatches(0)))
        iterator = buf.minibatches(1)
        next(iterator)
        buf.purge()
        outcome.append(_error_type(lambda: next(iterator)))  # purged
        results[side] = outcome
    want = ["RuntimeError", "RuntimeError", "ValueError", "ValueError", "ValueError", "ValueError",
            "RuntimeError", "RuntimeError", "ValueError", "RuntimeError"]
    assert results["mine"] == want
    assert results["ref"] == want


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_clip_boundaries_agree(solutions, dtype):
    """At r = 1 ± ε exactly (and just inside/outside), loss and gradient match the reference (eq. 5.9's ≥ and ≤)."""
    eps = 0.2
    ratios = torch.tensor([0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3], dtype=dtype)
    ratios = torch.cat([ratios, ratios])  # each ratio with Â = +1 and Â = −1
    logp_new = torch.log(ratios).view(1, -1)
    assert torch.equal(torch.exp(logp_new), ratios.view(1, -1))  # the boundaries are hit exactly
    zeros = torch.zeros_like(logp_new)
    adv = torch.cat([torch.ones(7, dtype=dtype), -torch.ones(7, dtype=dtype)]).view(1, -1)
    mask = torch.ones(1, 14, dtype=torch.bool)
    args = dict(logp_new=logp_new, logp_old=zeros, advantages=adv, mask=mask)
    mine, g_mine = grads(lambda **a: solutions["ex2_clipped_loss"].clipped_surrogate_loss(**a, clip_eps=eps), args, ("logp_new",))
    ref, g_ref = grads(lambda **a: ppo_reference.clipped_surrogate_loss(**a, clip_eps=eps), args, ("logp_new",))
    torch.testing.assert_close(mine, ref)
    torch.testing.assert_close(g_mine["logp_new"], g_ref["logp_new"])
