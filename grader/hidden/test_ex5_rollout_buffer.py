"""Hidden graders, exercise 5 (stop 4): the rollout buffer's collect → train → purge clockwork (Book eq. 5.13, §5.5).

The API is ARCHITECTURE.md's (identical for the reference): `phase`, `add(**fields)`,
`len()`, `start_training()`, `minibatches(mini_batch_size, generator=None)`, `purge()`.
"""

from __future__ import annotations

import torch

from grader.hidden.buffer_cases import epochs_of, mb_generator, rollout
from ppo_course.grading_kit.buffer_data import advance, drain, order_diagnosis
from ppo_course.grading_kit.feedback import Mismatch, expect_raises

EXERCISE = "ex5_rollout_buffer"
KIND = "hidden"








def _phase(buf) -> str:
    phase = buf.phase
    return phase if isinstance(phase, str) else repr(phase)


def _expect(cond: bool, diagnosis: str, detail: str, what: str) -> None:
    if not cond:
        raise Mismatch(diagnosis, detail, what)


def test_buffer_lifecycle(student):
    """collect (add twice, len counts sequences) → start_training → train (len still counts them: the data is
    stored until purge) → purge → empty collect phase."""
    buf = student.new("RolloutBuffer")
    _expect(_phase(buf) == "collect", "wrong_value", f"phase {_phase(buf)!r}", "a new buffer's phase")
    _expect(len(buf) == 0, "buffer_wrong_length", f"len {len(buf)}", "len(new buffer)")
    buf.add(**rollout(3, seed=1))
    buf.add(**rollout(2, seed=2, start=3))
    _expect(len(buf) == 5, "buffer_wrong_length", f"len {len(buf)} after adding 3 + 2 sequences", "len(buffer)")
    buf.start_training()
    _expect(_phase(buf) == "train", "wrong_value", f"phase {_phase(buf)!r}", "phase after start_training()")
    _expect(len(buf) == 5, "buffer_wrong_length", f"len {len(buf)} in the train phase (5 sequences stored)",
            "len(buffer) after start_training()")
    buf.purge()
    _expect(_phase(buf) == "collect", "buffer_use_after_purge", f"phase {_phase(buf)!r}", "phase after purge()")
    _expect(len(buf) == 0, "buffer_use_after_purge", f"len {len(buf)}", "len(buffer) after purge()")


def test_add_during_train_raises(student, error_name):
    """add() in the train phase raises RuntimeError (the cycle's data is frozen while training on it)."""
    buf = student.new("RolloutBuffer")
    buf.add(**rollout(3, seed=3))
    buf.start_training()
    expect_raises(lambda: buf.add(**rollout(2, seed=4)), ("RuntimeError",), "buffer_add_during_train",
                  what="add() in the train phase", is_error=error_name)


def _raises_at_call(call, drain_it, error_names, diagnosis: str, what: str, error_name) -> None:
    """The docstring's "raised at call time": `call()` itself must raise one of `error_names`.

    An error raised only at the first `next()` (a generator method that validates inside its
    body) is named `buffer_errors_not_at_call`; no error at all is `diagnosis`.
    """
    try:
        iterator = call()
    except Exception as exc:  # the student's exception, reported by type name
        name = error_name(exc)
        if name is None:
            raise
        if name in error_names:
            return
        if name == "NotImplementedError":
            raise Mismatch("not_implemented", name, what) from None
        raise Mismatch(diagnosis, f"expected {' or '.join(error_names)}, got {name}", what) from None
    try:
        drain_it(iterator)
    except Mismatch:  # the call returned and its mini-batches are malformed: still, nothing was raised
        raise Mismatch(diagnosis, f"expected {' or '.join(error_names)}, but nothing was raised (the mini-batches it "
                       "gave are malformed too)", what) from None
    except Exception as exc:  # raised later, at the first next()
        if error_name(exc) in error_names:
            raise Mismatch("buffer_errors_not_at_call", "raised at the first next(), not when called", what) from None
        if error_name(exc) is None:
            raise
    raise Mismatch(diagnosis, f"expected {' or '.join(error_names)}, but nothing was raised", what)


def test_minibatches_during_collect_raise(student, error_name):
    """Calling minibatches() in the collect phase raises RuntimeError at call time (the docstring's
    "RuntimeError: if not in the train phase (at call time)"), not at the first next()."""
    buf = student.new("RolloutBuffer")
    buf.add(**rollout(4, seed=5))
    _raises_at_call(lambda: buf.minibatches(2, generator=mb_generator(0)), drain, ("RuntimeError",),
                    "buffer_minibatches_during_collect", "minibatches() in the collect phase", error_name)


def test_use_after_purge_raises(student, error_name):
    """After purge(): an iterator made before it raises RuntimeError when advanced; new mini-batches too. Nothing
    of the purged cycle survives: the next cycle's first add() may use another trailing shape (longer responses
    in the next PPO step), since the keys and shapes are those of "the first call of this cycle"."""
    buf = student.new("RolloutBuffer")
    buf.add(**rollout(6, seed=6))
    buf.start_training()
    stale = buf.minibatches(2, generator=mb_generator(1))
    advance(stale)  # one mini-batch while the data is live
    buf.purge()
    expect_raises(lambda: advance(stale), ("RuntimeError",), "buffer_use_after_purge",
                  what="advancing a mini-batch iterator made before purge()", is_error=error_name)
    # After purge the buffer is collecting again: minibatches() raises when called.
    _raises_at_call(lambda: buf.minibatches(2), drain, ("RuntimeError",), "buffer_use_after_purge",
                    "minibatches() after purge()", error_name)
    what = "add() of a new cycle with another trailing shape (T = 6 after T = 4), after purge()"
    try:
        buf.add(**rollout(3, T=6, seed=23))
        buf.start_training()
        batches = drain(buf.minibatches(3, generator=mb_generator(4)))
    except Exception as exc:  # the student's exception, reported by type name
        if error_name(exc) is None:
            raise
        raise Mismatch("buffer_use_after_purge", f"raised {error_name(exc)}: the purged cycle's shapes still bind",
                       what) from None
    shapes = [tuple(mb["responses"].shape) for mb in batches] if all(isinstance(mb, dict) for mb in batches) else []
    _expect(shapes == [(3, 6)], "buffer_use_after_purge", f"mini-batch response shapes {shapes}", what)



def test_cycle_rules(student, error_name):
    """The cycle's rules across two cycles: an iterator made before purge() still raises RuntimeError when
    advanced after the NEXT cycle has started training (the data it was made for is gone, whatever the phase
    is now); len() is 0 after purge() and counts the new cycle's rows only; the new cycle's mini-batches hold
    the new rows only; a purge() while collecting wipes the rows added before it too."""
    buf = student.new("RolloutBuffer")
    buf.add(**rollout(4, seed=31))
    buf.start_training()
    stale = buf.minibatches(2, generator=mb_generator(31))
    advance(stale)
    buf.purge()
    _expect(len(buf) == 0, "buffer_use_after_purge", f"len {len(buf)}", "len(buffer) right after purge()")
    what = "the second cycle: add() and start_training() after purge()"
    try:
        buf.add(**rollout(3, seed=32, start=100))
        _expect(len(buf) == 3, "buffer_wrong_length", f"len {len(buf)} after adding 3 sequences to a purged buffer",
                "len(buffer) in the second cycle")
        buf.start_training()
    except Mismatch:
        raise
    except Exception as exc:  # the student's exception, reported by type name
        if error_name(exc) is None:
            raise
        raise Mismatch("buffer_use_after_purge", f"raised {error_name(exc)}: the purged cycle still binds", what) from None
    expect_raises(lambda: advance(stale), ("RuntimeError",), "buffer_use_after_purge",
                  what="advancing an iterator of the first cycle while the second cycle trains", is_error=error_name)
    rows = drain(buf.minibatches(2, generator=mb_generator(32)))
    ids = sorted(int(i) for mb in rows if isinstance(mb, dict) and isinstance(mb.get("ids"), torch.Tensor)
                 for i in mb["ids"].reshape(-1).tolist())
    stale_rows = any(i < 100 for i in ids)
    perm = [100 + i for i in torch.randperm(3, generator=mb_generator(32)).tolist()]  # the specified chunks
    order = order_diagnosis([mb["ids"].tolist() for mb in rows], [perm[:2], perm[2:]], 2)
    _expect(ids == [100, 101, 102], "buffer_use_after_purge" if stale_rows else order,
            f"the second cycle served sequences {ids}", "mini-batches of the second cycle (its 3 sequences, each once)")
    _purge_while_collecting(student, error_name)


def _purge_while_collecting(student, error_name) -> None:
    """purge() wipes everything in any phase: rows added before a purge in the collect phase never come back."""
    buf = student.new("RolloutBuffer")
    what = "add() 2 rows, purge() while collecting, add() 3 new rows, start_training()"
    try:
        buf.add(**rollout(2, seed=41))
        buf.purge()
        buf.add(**rollout(3, seed=42, start=200))
        buf.start_training()
        rows = drain(buf.minibatches(3, generator=mb_generator(41)))
    except Exception as exc:  # the student's exception, reported by type name
        if error_name(exc) is None:
            raise
        raise Mismatch("buffer_use_after_purge", f"raised {error_name(exc)}", what) from None
    ids = sorted(int(i) for mb in rows if isinstance(mb, dict) and isinstance(mb.get("ids"), torch.Tensor)
                 for i in mb["ids"].reshape(-1).tolist())
    _expect(ids == [200, 201, 202], "buffer_use_after_purge", f"the cycle served sequences {ids} (the purged rows "
            "were 0 and 1)", what)




def test_minibatch_order_matches_reference(student, reference):
    """Every minibatches() call draws perm = randperm(len, generator); mini-batch i = rows
    perm[i·mbs:(i+1)·mbs] of every field. Four epochs over one buffer, each with its own generator."""
    rollouts = [rollout(4, seed=7), rollout(3, seed=8, start=4)]
    plan = ((2, 11), (3, 12), (7, 13), (1, 14))
    got_epochs = epochs_of(lambda: student.new("RolloutBuffer"), rollouts, plan)
    want_epochs = epochs_of(reference.RolloutBuffer, rollouts, plan)
    for (mbs, seed), got, want in zip(plan, got_epochs, want_epochs):
        what = f"minibatches({mbs}) over 7 sequences"
        if not isinstance(got, list) or not all(isinstance(mb, dict) for mb in got):
            raise Mismatch("wrong_type", "mini-batches must be dicts {field: tensor}", what)
        got_ids = [mb.get("ids").tolist() if isinstance(mb.get("ids"), torch.Tensor) else None for mb in got]
        want_ids = [mb["ids"].tolist() for mb in want]
        _expect(got_ids == want_ids, order_diagnosis(got_ids, want_ids, mbs), f"ids {got_ids} vs {want_ids}", what)
        for mb_got, mb_want in zip(got, want):
            for name, tensor in mb_want.items():
                other = mb_got.get(name)
                ok = isinstance(other, torch.Tensor) and other.shape == tensor.shape and other.dtype == tensor.dtype \
                    and bool(torch.equal(other, tensor))
                # A field shuffled on its own keeps the ids in order but breaks the rows' pairing.
                _expect(ok, "buffer_wrong_minibatch_order", f"field {name!r} differs", what)


def test_minibatches_hold_added_rows(student):
    """(0 points, reported; the phase, cycle and error tests count once it passes) One epoch holds a row, and each
    field of each row it holds is that field of some added sequence (any order or pairing): storing nothing fails."""
    rollouts = [rollout(4, seed=21), rollout(3, seed=22, start=4)]
    buf = student.new("RolloutBuffer")
    for fields in rollouts:
        buf.add(**fields)
    buf.start_training()
    batches = drain(buf.minibatches(2, generator=mb_generator(21)))
    what = "one epoch of minibatches(2) over 7 added sequences"
    if not isinstance(batches, list) or not all(isinstance(mb, dict) for mb in batches):
        raise Mismatch("wrong_type", "mini-batches must be dicts {field: tensor}", what)
    rows_of = {name: [f[name][k] for f in rollouts for k in range(len(f["ids"]))] for name in rollouts[0]}
    n_rows = 0
    for mb in batches:
        for name, added in rows_of.items():
            got = mb.get(name)
            ok = isinstance(got, torch.Tensor) and got.dim() >= 1 and got.shape[1:] == added[0].shape \
                and got.shape[0] <= len(added) and got.dtype == added[0].dtype \
                and all(any(torch.equal(row, a) for a in added) for row in got)
            _expect(ok, "buffer_stores_no_rows", f"field {name!r} holds a row that no add() gave", what)
        n_rows += len(mb["ids"])
    _expect(n_rows > 0, "buffer_stores_no_rows", "no row at all", what)


def test_minibatches_cover_rollout_once(student):
    """One epoch yields every sequence exactly once; the last mini-batch may be smaller. Without a generator
    the epoch is still shuffled, from torch's global RNG (the docstring's "None: global RNG"): over 16
    sequences, two epochs both in storage order (chance 1/16!² for a shuffle) mean no shuffle at all."""
    buf = student.new("RolloutBuffer")
    buf.add(**rollout(5, seed=9))
    buf.start_training()
    batches = drain(buf.minibatches(2, generator=mb_generator(2)))
    ids = sorted(i for mb in batches for i in mb["ids"].tolist())
    sizes = [len(mb["ids"]) for mb in batches]
    perm = torch.randperm(5, generator=mb_generator(2)).tolist()  # the specified chunks (ids 0..4 in storage order)
    diagnosis = order_diagnosis([mb["ids"].tolist() for mb in batches], [perm[i:i + 2] for i in (0, 2, 4)], 2)
    _expect(ids == [0, 1, 2, 3, 4] and sizes == [2, 2, 1], diagnosis,
            f"ids {ids}, sizes {sizes}", "minibatches(2) over 5 sequences")
    buf = student.new("RolloutBuffer")
    buf.add(**rollout(16, seed=13))
    buf.start_training()
    orders = []
    for _ in range(2):
        batches = drain(buf.minibatches(16))
        order = [i for mb in batches for i in mb["ids"].tolist()]
        _expect(sorted(order) == list(range(16)), "buffer_wrong_minibatch_order", f"ids {order}",
                "minibatches(16) over 16 sequences, no generator")
        orders.append(order)
    _expect(orders != [list(range(16))] * 2, "buffer_wrong_minibatch_order",
            "two epochs in storage order: generator=None must shuffle with torch's global RNG",
            "minibatches(16) over 16 sequences, no generator")


def test_buffer_keeps_copies(student):
    """add() stores copies: the caller overwriting its tensors after add() changes no mini-batch.

    In the sandbox the arguments of add() live in memory shared with the grading
    process (`grader.sandbox.shared_args`), which overwrites them after the call,
    as a caller reusing its tensors between steps would; locally the tensors
    themselves are overwritten. The ids are left alone, so that rows are matched by id.
    """
    original = rollout(4, seed=12)
    caller = {k: v.clone() for k, v in original.items()}
    reused = {"responses": caller["responses"] + 1, "logp_old": caller["logp_old"] - 7.0,
              "values": caller["values"] + 7.0, "mask": ~caller["mask"]}
    buf = student.new("RolloutBuffer")
    buf.add(**caller)
    if callable(getattr(type(student), "last_shared_arguments", None)):
        shared = student.last_shared_arguments()
        if shared is None:
            raise Mismatch("grader_error", "add()'s arguments were not in shared memory", "RolloutBuffer.add")
        for name, value in reused.items():
            shared.overwrite(f"kwargs[{name!r}]", value)
    else:
        for name, value in reused.items():
            caller[name].copy_(value)
    buf.start_training()
    batches = drain(buf.minibatches(4, generator=mb_generator(3)))
    what = "mini-batches after the caller changed its tensors"
    if not isinstance(batches, list) or not all(isinstance(mb, dict) for mb in batches):
        raise Mismatch("wrong_type", "mini-batches must be dicts {field: tensor}", what)
    try:
        got = {k: torch.cat([mb[k] for mb in batches]) for k in original}
    except Exception:  # noqa: BLE001 - a missing field or a non-tensor: the order test names it
        raise Mismatch("wrong_type", "mini-batches do not hold every added field as tensors", what) from None
    order = torch.argsort(got["ids"])
    _expect(got["ids"][order].tolist() == [0, 1, 2, 3], "buffer_wrong_minibatch_order",
            f"ids {got['ids'].tolist()}", what)
    for name, value in reused.items():
        rows = got[name][order]
        if rows.shape == value.shape and bool(torch.equal(rows, value)):
            raise Mismatch("buffer_aliases_inputs", f"field {name!r} followed the caller's change", what)
        _expect(rows.shape == original[name].shape and bool(torch.equal(rows, original[name])),
                "buffer_aliases_inputs" if rows.shape == value.shape and bool((rows == value).any())
                else "buffer_wrong_minibatch_order", f"field {name!r} differs from what was added", what)


def test_invalid_use_raises(student, error_name):
    """start_training() on an empty buffer or twice: RuntimeError; add() with mismatched batch sizes or no fields:
    ValueError."""
    buf = student.new("RolloutBuffer")
    expect_raises(lambda: buf.start_training(), ("RuntimeError",), "buffer_start_training_empty",
                  what="start_training() on an empty buffer", is_error=error_name)
    buf.add(**rollout(2, seed=11))
    buf.start_training()
    expect_raises(lambda: buf.start_training(), ("RuntimeError",), "buffer_start_training_empty",
                  what="start_training() twice (already in the train phase)", is_error=error_name)
    buf = student.new("RolloutBuffer")
    fields = rollout(3, seed=10)
    fields["values"] = fields["values"][:2]  # batch of 2 beside batches of 3
    expect_raises(lambda: buf.add(**fields), ("ValueError",), "buffer_no_validation",
                  what="add() with different batch sizes", is_error=error_name)
    expect_raises(lambda: buf.add(), ("ValueError",), "buffer_no_validation", what="add() with no fields",
                  is_error=error_name)


def test_add_inconsistent_fields_raises(student, error_name):
    """Every add() of a cycle must use the first call's keys and trailing shapes: other keys or another
    trailing shape raise ValueError (the docstring of add, "Raises")."""
    cases = {
        "a missing key": lambda f: {k: v for k, v in f.items() if k != "values"},
        "an extra key": lambda f: {**f, "returns": f["values"].clone()},
        "another trailing shape": lambda f: {**f, "logp_old": torch.cat([f["logp_old"], f["logp_old"][:, :1]], 1)},
    }
    for label, change in cases.items():
        buf = student.new("RolloutBuffer")
        buf.add(**rollout(3, seed=20))
        second = change(rollout(2, seed=21, start=3))
        expect_raises(lambda: buf.add(**second), ("ValueError",), "buffer_inconsistent_fields",
                      what=f"a second add() with {label}", is_error=error_name)


def test_invalid_mini_batch_size_raises(student, error_name):
    """minibatches(mini_batch_size) with mini_batch_size < 1 raises ValueError, at call time."""
    for size in (-2, 0):
        buf = student.new("RolloutBuffer")
        buf.add(**rollout(4, seed=22))
        buf.start_training()
        _raises_at_call(lambda: buf.minibatches(size, generator=mb_generator(0)), drain,
                        ("ValueError",), "buffer_bad_minibatch_size", f"minibatches({size})", error_name)


def test_buffer_stores_detached(student):
    """(0 points, reported) add() stores detached copies: a field that carries the caller's autograd graph
    comes back from minibatches() without it (the docstring: "stores copies"; the stub: detached copies).

    The graph exists only where the student's buffer runs, so the child runs a probe (captured before the
    student's import, `ppo_course.sandbox.harness.trusted_operations`) on inputs drawn from the grader's
    secret, and the verdict is computed here from its raw reply (`grader.hidden.probes`). Student code runs
    in that process too and can reach the probe (closure cells through `gc`) or recognise it as its caller,
    so the verdict is feedback only: no point rests on it (the copies are graded from shared memory by
    `test_buffer_keeps_copies`).
    """
    from grader.hidden.probes import buffer_graph_plan, judge_buffer_graph
    from ppo_course.sandbox import harness

    plan = buffer_graph_plan()
    if callable(getattr(type(student), "buffer_graph_probe", None)):
        raw = student.buffer_graph_probe(plan)  # the sandbox (RemoteModule, or the provider's GuardedModule)
    else:
        raw = harness.buffer_graph_probe(student._module, plan)  # ppo-course check's local module
    judge_buffer_graph(plan, raw)


def test_add_rejects_malformed_fields(student, error_name):
    """(0.25 points, once the values are computed) add()'s other ValueErrors: a field that is not a tensor, a 0-dim tensor (no batch
    dimension), a second add() with another dtype ("the same trailing shapes (and dtypes)"; torch.cat would promote)."""
    from grader.hidden.documented_errors import expect_value_errors

    def add(**fields):
        return lambda: student.new("RolloutBuffer").add(**fields)

    expect_value_errors({"a list field": add(ids=torch.arange(2), values=[1.0, 2.0]),
                         "a 0-dim field": add(ids=torch.arange(2), values=torch.tensor(1.0))},
                        error_name, "RolloutBuffer.add")
    buf = student.new("RolloutBuffer")
    first = rollout(3, seed=24)
    buf.add(**{**first, "logp_old": first["logp_old"].float()})  # float32 first
    second = rollout(2, seed=25, start=3)  # float64 logp_old
    expect_raises(lambda: buf.add(**second), ("ValueError",), "buffer_inconsistent_fields",
                  what="a second add() with another dtype (float64 after float32)", is_error=error_name)
