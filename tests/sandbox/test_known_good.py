"""Exercise 7 grading: known-good proxies for exercises 1-6 and the ppo_step harness."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import torch

import ppo_reference
from grader.sandbox import KnownGood, Limits, Sandbox, StudentError

REPO = Path(__file__).resolve().parents[2]

# The harness's tiny PPOConfig is deliberately outside the book's bands.
pytestmark = pytest.mark.filterwarnings("ignore::ppo_course.config.HyperparameterWarning")

#: Broken exercises 1-6: if any of them were used instead of a proxy, the tests fail.
BROKEN = {f"{stem}.py": "raise RuntimeError('the student version must not be imported in known-good mode')\n"
          for stem in ("ex1_ratio", "ex2_clipped_loss", "ex3_full_loss", "ex4_gae", "ex5_rollout_buffer", "ex6_kl_reward")}

GLUE = {
    "ex7_ppo_step.py": '''
        import torch
        import ex1_ratio, ex3_full_loss, ex4_gae, ex5_rollout_buffer, ex6_kl_reward

        def are_proxies():
            return [getattr(m, "__known_good__", False) for m in (ex1_ratio, ex3_full_loss, ex4_gae, ex5_rollout_buffer, ex6_kl_reward)]

        def loss_and_grads(logits, tokens, logp_old, advantages, values, old_values, returns, mask):
            logits = logits.clone().requires_grad_(True)
            values = values.clone().requires_grad_(True)
            logp = ex1_ratio.logprobs_from_logits(logits, tokens)
            loss, stats = ex3_full_loss.ppo_loss(logp, logp_old, advantages, values, old_values, returns, logits, mask)
            (2.0 * loss).backward()
            return loss.detach(), stats, logits.grad, values.grad

        def gae_no_grad(rewards, values, mask):
            with torch.no_grad():
                return ex4_gae.compute_gae(rewards, values, mask, 1.0, 0.95)

        def buffer_epochs(data, mini_batch_size, seed):
            g = torch.Generator().manual_seed(seed)
            buf = ex5_rollout_buffer.RolloutBuffer()
            buf.add(**data)
            phase_before = buf.phase
            buf.start_training()
            epochs = [[mb for mb in buf.minibatches(mini_batch_size, g)] for _ in range(2)]
            after = torch.rand(3, generator=g)  # must continue from where the buffer's randperm left g
            n = len(buf)
            it = buf.minibatches(mini_batch_size, g)
            buf.purge()
            try:
                next(it)
                stale = "no error"
            except RuntimeError as exc:
                stale = "RuntimeError"
            return {"epochs": epochs, "after": after, "len": n, "phases": [phase_before, buf.phase], "stale": stale}

        def buffer_listed(data, mini_batch_size, seed):
            g = torch.Generator().manual_seed(seed)
            buf = ex5_rollout_buffer.RolloutBuffer()
            buf.add(**data)
            buf.start_training()
            it = buf.minibatches(mini_batch_size, g)
            try:
                len(it)
                length = "no error"
            except TypeError:
                length = "TypeError"
            return {"listed": list(it), "len_of_iterator": length}

        def controller(kl, n):
            ctl = ex6_kl_reward.AdaptiveKLController(0.05, 6.0, 10000)
            ctl.update(kl, n)
            return ctl.value

        def given_helpers(x, mask):
            import ex2_clipped_loss
            return ex2_clipped_loss.masked_mean(x, mask), ex3_full_loss.masked_mean(x, mask)

        def reference_error():
            return ex4_gae.whiten(torch.ones(1, 1), torch.ones(1, 1))

        def reach_for_internals():
            buf = ex5_rollout_buffer.RolloutBuffer()
            return buf._data
        ''',
}


@pytest.fixture
def glue(load):
    return load({**BROKEN, **GLUE}, "ex7_ppo_step", known_good=True)


def test_sibling_imports_are_proxies(glue):
    assert glue.are_proxies() == [True] * 5


def test_proxies_forward_and_backward_match_the_reference_locally(glue):
    g = torch.Generator().manual_seed(3)
    B, T, V = 3, 5, 7
    logits = torch.randn(B, T, V, generator=g)
    tokens = torch.randint(0, V, (B, T), generator=g)
    logp_old = torch.randn(B, T, generator=g) * 0.1 - 2
    advantages, values, old_values, returns = (torch.randn(B, T, generator=g) for _ in range(4))
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]], dtype=torch.bool)
    loss, stats, logits_grad, values_grad = glue.loss_and_grads(logits, tokens, logp_old, advantages, values, old_values,
                                                                returns, mask)
    # The same computation on this side, with local autograd through the reference.
    lg, vl = logits.clone().requires_grad_(True), values.clone().requires_grad_(True)
    logp = ppo_reference.logprobs_from_logits(lg, tokens)
    want_loss, want_stats = ppo_reference.ppo_loss(logp, logp_old, advantages, vl, old_values, returns, lg, mask)
    (2.0 * want_loss).backward()
    torch.testing.assert_close(loss, want_loss.detach())
    assert stats == pytest.approx(want_stats) and all(type(v) is float for v in stats.values())
    # float32, one recomputation of the same ops: rounding differences stay below 1e-6.
    torch.testing.assert_close(logits_grad, lg.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(values_grad, vl.grad, rtol=1e-5, atol=1e-6)


def test_every_public_name_of_a_stub_is_served(glue):
    """A ppo_step may call any name of a sibling stub's ``__all__``, the given ``masked_mean`` of exercises 2 and 3
    included: the known-good modules serve them all (an unserved one raised AttributeError, graded 0/20)."""
    import ast

    from grader.sandbox.known_good import PUBLIC_NAMES

    for stem, kinds in PUBLIC_NAMES.items():
        tree = ast.parse((REPO / "exercises" / f"{stem}.py").read_text())
        stub_all = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                        and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets))
        assert sorted(stub_all) == sorted(kinds["functions"] + kinds["classes"]), stem
    x = torch.tensor([[1.0, 3.0, 7.0], [2.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    # Hand computation: (1 + 3 + 7 + 2) / 4 = 3.25 (the stubs' own docstring example).
    assert [float(v) for v in glue.given_helpers(x, mask)] == [3.25, 3.25]


def test_no_grad_calls_are_plain_remote_calls(glue):
    g = torch.Generator().manual_seed(4)
    rewards, values = torch.randn(2, 4, generator=g), torch.randn(2, 4, generator=g)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    adv, ret = glue.gae_no_grad(rewards, values, mask)
    want_adv, want_ret = ppo_reference.compute_gae(rewards, values, mask, 1.0, 0.95)
    torch.testing.assert_close(adv[mask.bool()], want_adv[mask.bool()])
    torch.testing.assert_close(ret[mask.bool()], want_ret[mask.bool()])


def test_remote_buffer_keeps_the_students_generator_in_step(glue):
    data = {"x": torch.arange(10.0).reshape(5, 2), "y": torch.arange(5)}
    got = glue.buffer_epochs(data, 2, seed=11)
    g = torch.Generator().manual_seed(11)
    buf = ppo_reference.RolloutBuffer()
    buf.add(**data)
    buf.start_training()
    want_epochs = [[mb for mb in buf.minibatches(2, g)] for _ in range(2)]
    want_after = torch.rand(3, generator=g)
    assert got["len"] == 5 and got["phases"] == ["collect", "collect"] and got["stale"] == "RuntimeError"
    assert len(got["epochs"]) == 2
    for got_epoch, want_epoch in zip(got["epochs"], want_epochs):
        assert len(got_epoch) == len(want_epoch) == 3
        for got_mb, want_mb in zip(got_epoch, want_epoch):
            assert torch.equal(got_mb["x"], want_mb["x"]) and torch.equal(got_mb["y"], want_mb["y"])
    assert torch.equal(got["after"], want_after)


def test_remote_minibatch_iterator_can_be_listed(glue):
    """`list(buf.minibatches(...))` works on a known-good buffer as on a local one: `len()` of the remote
    iterator (which `list` asks for a size hint) raises TypeError, as len() of a generator does, not the
    AttributeError that `list` would pass on to the student as a crash."""
    data = {"x": torch.arange(10.0).reshape(5, 2)}
    got = glue.buffer_listed(data, 2, seed=3)
    buf = ppo_reference.RolloutBuffer()
    buf.add(**data)
    buf.start_training()
    want = list(buf.minibatches(2, torch.Generator().manual_seed(3)))
    assert got["len_of_iterator"] == "TypeError"
    assert len(got["listed"]) == len(want) == 3
    assert all(torch.equal(a["x"], b["x"]) for a, b in zip(got["listed"], want))


def test_remote_controller_matches_the_contract_formula(glue):
    # e = clip(12/6 − 1, −0.2, 0.2) = 0.2; value = 0.05·(1 + 0.2·64/10000) (CONTRACT, ex6).
    assert glue.controller(12.0, 64) == pytest.approx(0.05 * (1 + 0.2 * 64 / 10000))


def test_reference_errors_arrive_as_builtin_types_without_tracebacks(glue):
    with pytest.raises(StudentError) as err:
        glue.reference_error()
    assert err.value.type_name == "ValueError" and "known-good" in err.value.message
    # Only the type and message cross: no reference source line or path.
    assert "ppo_reference/" not in err.value.traceback and "ppo_reference/" not in err.value.message


def test_callbacks_cannot_reach_private_attributes(glue):
    with pytest.raises(StudentError) as err:
        glue.reach_for_internals()
    assert err.value.type_name == "AttributeError"


IMPORT_TIME_OBJECTS = {
    "ex7_ppo_step.py": '''
        import ex5_rollout_buffer, ex6_kl_reward

        _BUFFER = ex5_rollout_buffer.RolloutBuffer()  # built while the module is imported
        _CONTROLLER = ex6_kl_reward.AdaptiveKLController(0.05, 6.0, 10000)

        def state():
            return _BUFFER.phase, len(_BUFFER), _CONTROLLER.value
        ''',
}


def test_a_module_that_builds_sibling_objects_at_import_time_imports(load):
    """A module-level object of another exercise (legal Python; a buffer kept across calls is a mistake its own
    tests name) is built through known-good callbacks during the import: the import must not be reported as
    broken (it was "sent another message instead of its ready message")."""
    module = load({**BROKEN, **IMPORT_TIME_OBJECTS}, "ex7_ppo_step", known_good=True)
    assert module.state() == ("collect", 0, 0.05)


def test_forged_callbacks_are_refused():
    session = KnownGood.reference().session()
    for op, fields in [("kg_call", {"module": "ex4_gae", "name": "__globals__"}),
                       ("kg_call", {"module": "os", "name": "system", "args": ["true"]}),
                       ("kg_new", {"module": "ex4_gae", "name": "compute_gae"}),
                       ("getattr", {"handle": 99, "name": "x"}),
                       ("kg_vjp", {"token": 12345, "grad_outputs": []}),
                       ("eval", {})]:
        header, _ = session.handle(1, op, fields, {})
        assert header["m"] == "cb_err", (op, fields)
    buf_header, _ = session.handle(2, "kg_new", {"module": "ex5_rollout_buffer", "name": "RolloutBuffer"}, {})
    hid = buf_header["value"]["id"]
    for name in ("__class__", "_data", "__init__"):
        header, _ = session.handle(3, "getattr", {"handle": hid, "name": name}, {})
        assert header["m"] == "cb_err", name
    header, _ = session.handle(4, "call", {"handle": hid, "name": "__reduce__"}, {})
    assert header["m"] == "cb_err"


# ---------------------------------------------------------------------------
# The ppo_step harness (needs the package's model and the solutions)
# ---------------------------------------------------------------------------


def _setting():
    from ppo_course import toy_task
    from ppo_course.config import PPOConfig
    from ppo_course.model import CausalLMWithValueHead

    model_config = toy_task.policy_config()
    torch.manual_seed(0)
    state = CausalLMWithValueHead(model_config).state_dict()
    config = PPOConfig.toy(batch_size=8, mini_batch_size=2, gradient_accumulation_steps=2, ppo_epochs=2, max_new_tokens=6)
    queries = toy_task.PROMPTS[:8]
    return model_config, state, config, queries


def _reference_step(model_config, state, config, queries, seed):
    from ppo_course import toy_task
    from ppo_course.model import CausalLMWithValueHead

    policy = CausalLMWithValueHead(model_config)
    policy.load_state_dict(state)
    ref = copy.deepcopy(policy).eval()
    ref.requires_grad_(False)
    opt = torch.optim.Adam(policy.parameters(), lr=config.learning_rate)
    ctl = ppo_reference.AdaptiveKLController(config.init_kl_coef, config.target_kl, config.kl_horizon)
    stats = ppo_reference.ppo_step(policy, ref, opt, queries, toy_task.score, ctl,
                                   config, torch.Generator().manual_seed(seed))
    return policy.state_dict(), stats, ctl.value


@pytest.mark.parametrize("known_good", [False, True], ids=["own-exercises", "known-good"])
def test_harness_runs_the_solution_and_matches_the_reference(tmp_path, server, known_good):
    solutions = sorted((REPO / "solutions").glob("ex*.py"))
    if len(solutions) < 7:
        pytest.skip("solutions/ not complete yet")
    sub = tmp_path / "submissions" / "sol"
    sub.mkdir(parents=True)
    for path in solutions:
        if known_good and path.name != "ex7_ppo_step.py":
            (sub / path.name).write_text(BROKEN[path.name])  # must not be used
        else:
            shutil.copy(path, sub / path.name)
    model_config, state, config, queries = _setting()
    with Sandbox(sub, limits=Limits(call_timeout_s=60), known_good=known_good, server=server) as sb:
        ex7 = sb.load("ex7_ppo_step")
        got = ex7.ppo_step_harness(model_config.model_dump(), state, queries, config.model_dump(), seed=5)
    want_state, want_stats, want_kl = _reference_step(model_config, state, config, queries, seed=5)
    assert set(got["state_dict"]) == set(want_state)
    moved = False
    for name, want in want_state.items():
        # float32, identical op order; only gradient-accumulation order may differ: ≤ 1e-5.
        torch.testing.assert_close(got["state_dict"][name], want, rtol=1e-4, atol=1e-5, msg=name)
        moved |= not torch.equal(want, state[name])
    assert moved  # the step did update the policy, so the comparison means something
    assert got["kl_coef"] == pytest.approx(want_kl, rel=1e-5)
    for key in ("ppo/mean_scores", "objective/kl", "ppo/loss/total"):
        assert got["stats"][key] == pytest.approx(want_stats[key], rel=1e-4, abs=1e-6), key
