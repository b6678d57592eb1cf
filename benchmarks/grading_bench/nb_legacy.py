"""The earlier nbgrader comparison's cells: exercises 1-6 on fixed seeds against ``ppo_reference``.

These are NOT the grader's tests: a few seeded inputs per exercise, all-or-nothing
cells, no hypothesis examples, no gradient-case, in-place or diagnosis checks, and
no exercise 7 (it needs sibling modules, which these cells, holding module code in
the notebook's one namespace, do not have). ``bench_grading.py`` keeps it as a
second, labelled line (``nbgrader-legacy-ex1-6``); the comparison that counts runs
the same tests (``grading_bench.nbgrader_course``).
"""

from ppo_course.syllabus import EXERCISES

NB_STEMS = list(EXERCISES[:6])  # exercises 1-6: these cells have no exercise 7

# Autograded test cells: the same behaviours as the hidden tests, on seeded inputs, against the reference.
NB_SETUP = """\
import torch
import ppo_reference as ref
torch.manual_seed(0)
def case(B=3, T=6, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]
    junk = lambda: torch.where(mask, torch.randn(B, T, generator=g, dtype=dtype), 17 + 3 * torch.randn(B, T, generator=g, dtype=dtype))
    return mask, junk
def close(a, b, mask=None, tol=1e-6):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    if mask is not None:
        a, b = a[mask.bool()], b[mask.bool()]
    assert a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol), (a, b)
"""
NB_TESTS = {
    "ex1_ratio": """\
for seed in range(4):
    mask, junk = case(seed=seed)
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(3, 6, 7, generator=g, dtype=torch.float64) * (1 if seed < 2 else 1000)
    tokens = torch.randint(0, 7, (3, 6), generator=g)
    close(logprobs_from_logits(logits, tokens), ref.logprobs_from_logits(logits, tokens), tol=1e-6)
    a, b = junk(), junk()
    close(probability_ratio(a, b), ref.probability_ratio(a, b), mask)
close(probability_ratio(torch.full((1, 2), -1000.0), torch.full((1, 2), -1000.0)), torch.ones(1, 2))
""",
    "ex2_clipped_loss": """\
for seed in range(4):
    mask, junk = case(seed=seed)
    args = (junk() * 0.3, junk() * 0.3, junk(), mask)
    close(clipped_surrogate_loss(*args), ref.clipped_surrogate_loss(*args))
    new = args[0].clone().requires_grad_(True)
    clipped_surrogate_loss(new, *args[1:]).backward()
    new_ref = args[0].clone().requires_grad_(True)
    ref.clipped_surrogate_loss(new_ref, *args[1:]).backward()
    close(new.grad, new_ref.grad, mask)
""",
    "ex3_full_loss": """\
for seed in range(3):
    mask, junk = case(seed=seed)
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(3, 6, 5, generator=g, dtype=torch.float64)
    v = (junk(), junk(), junk(), mask)
    close(clipped_value_loss(*v), ref.clipped_value_loss(*v))
    close(entropy_from_logits(logits, mask), ref.entropy_from_logits(logits, mask))
    args = (junk() * 0.3, junk() * 0.3, junk(), junk(), junk(), junk(), logits, mask)
    loss, stats = ppo_loss(*args)
    loss_ref, stats_ref = ref.ppo_loss(*args)
    close(loss, loss_ref)
    close(stats["approx_kl"], stats_ref["approx_kl"]); close(stats["clipfrac"], stats_ref["clipfrac"])
""",
    "ex4_gae": """\
for seed in range(4):
    mask, junk = case(seed=seed)
    r, v = junk(), junk()
    for a, b in zip(compute_gae(r, v, mask, 0.99, 0.95), ref.compute_gae(r, v, mask, 0.99, 0.95)):
        close(a, b, mask)
    close(whiten(r, mask), ref.whiten(r, mask), mask)
    close(whiten(r, mask, shift_mean=False), ref.whiten(r, mask, shift_mean=False), mask)
""",
    "ex5_rollout_buffer": """\
buf = RolloutBuffer()
assert buf.phase == "collect"
buf.add(x=torch.arange(10.0).reshape(5, 2), y=torch.arange(5))
assert len(buf) == 5
buf.start_training()
g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
r1 = RolloutBuffer(); r1.add(x=torch.arange(10.0).reshape(5, 2), y=torch.arange(5)); r1.start_training()
got = [mb["y"].tolist() for mb in buf.minibatches(2, generator=g1)]
want_buf = ref.RolloutBuffer(); want_buf.add(x=torch.arange(10.0).reshape(5, 2), y=torch.arange(5)); want_buf.start_training()
want = [mb["y"].tolist() for mb in want_buf.minibatches(2, generator=g2)]
assert got == want, (got, want)
try:
    buf.add(x=torch.zeros(1, 2), y=torch.zeros(1)); raise AssertionError("add during training must raise")
except RuntimeError:
    pass
buf.purge()
assert buf.phase == "collect" and len(buf) == 0
""",
    "ex6_kl_reward": """\
for seed in range(3):
    mask, junk = case(seed=seed)
    a, b = junk(), junk()
    close(per_token_kl(a, b, mask), ref.per_token_kl(a, b, mask))
    scores = torch.randn(3, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    for placement in ("per_token", "last_token"):
        close(kl_shaped_rewards(scores, a, b, mask, 0.05, placement), ref.kl_shaped_rewards(scores, a, b, mask, 0.05, placement), mask)
ctl, ctl_ref = AdaptiveKLController(0.05, 6.0, 10000), ref.AdaptiveKLController(0.05, 6.0, 10000)
for kl in (1.0, 12.0, 6.5):
    ctl.update(kl, 64); ctl_ref.update(kl, 64)
close(ctl.value, ctl_ref.value)
""",
}
