"""What exercise 5's tests read from a student's ``RolloutBuffer``, checked before they read it.

The tests (public and hidden) consume what ``minibatches()`` returns: an
iterator of mini-batches, each a dict ``{field name: tensor}`` (Book eq. 5.13,
§5.5; ARCHITECTURE.md's buffer API). A buffer that returns something else (a
string, None, a list of tuples) made the test code itself raise (``mb["ids"]``
on a str: TypeError), which the grader reported as its own failure
(``grader_error``: "fix the grader") instead of the student's mistake
Every read goes through here and a wrong structure is
``Mismatch("wrong_type")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from ppo_course.grading_kit.feedback import Mismatch


def _is_iterator(obj: Any) -> bool:
    """A sandbox handle (``RemoteObject``: ``.list()``/``.next()``) or a local iterator/list/tuple (not a str)."""
    return hasattr(type(obj), "list") or isinstance(obj, (Iterator, list, tuple))


def drain(iterator: Any, what: str = "minibatches(...)", need: tuple[str, ...] = ("ids",)) \
        -> list[dict[str, torch.Tensor]]:
    """All mini-batches of ``iterator``: one round trip for a sandbox handle, ``list()`` for a local one.

    Args:
        iterator: what ``minibatches()`` returned.
        what: the label of a failure.
        need: fields every mini-batch must hold (``ids``: a 1-D tensor, the tests' row numbers).

    Returns:
        a list of dicts with ``str`` keys and ``torch.Tensor`` values of one shared first (batch) dimension,
        whose ``need`` fields hold finite values only.

    Raises:
        Mismatch: ``wrong_type`` when ``iterator`` is not an iterator, an item is not such a dict, or a
            ``need`` field holds NaN or inf.
        Student errors raised while iterating propagate (the tests name them).
    """
    if not _is_iterator(iterator):
        raise Mismatch("wrong_type", f"expected an iterator of mini-batches, got {type(iterator).__name__}", what)
    items = iterator.list() if hasattr(type(iterator), "list") else list(iterator)
    if type(items) is not list:
        raise Mismatch("wrong_type", "the mini-batches did not come back as a sequence", what)
    for mb in items:
        if type(mb) is not dict or not all(type(k) is str and isinstance(v, torch.Tensor) for k, v in mb.items()):
            raise Mismatch("wrong_type", f"a mini-batch is a {type(mb).__name__}, not a dict {{field: tensor}}", what)
        missing = [name for name in need if name not in mb]
        if missing:
            raise Mismatch("wrong_type", f"a mini-batch lacks the field(s) {missing}", what)
        rows = {v.shape[0] if v.dim() else None for v in mb.values()}
        if None in rows or len(rows) > 1 or ("ids" in mb and mb["ids"].dim() != 1):
            raise Mismatch("wrong_type", "a mini-batch's fields do not share one batch dimension (rows first)", what)
        broken = [name for name in need if mb[name].is_floating_point() and not bool(torch.isfinite(mb[name]).all())]
        if broken:  # row numbers: a test reads them with int(), which raises on NaN/inf inside the grader
            raise Mismatch("wrong_type", f"a mini-batch's {broken} hold NaN or inf where the rows' numbers were", what)
    return items


def advance(iterator: Any, what: str = "next(mini-batch iterator)") -> Any:
    """``next(iterator)`` for a sandbox handle or a local iterator.

    Raises:
        Mismatch: ``wrong_type`` when ``iterator`` is not an iterator (``next`` of a str or None raised
            TypeError inside the test before).
    """
    if not (hasattr(type(iterator), "list") or isinstance(iterator, Iterator)):
        raise Mismatch("wrong_type", f"expected an iterator of mini-batches, got {type(iterator).__name__}", what)
    return next(iterator)


def order_diagnosis(got: list[list[int]], want: list[list[int]], mini_batch_size: int) -> str:
    """The name of an epoch whose mini-batches differ from the specified chunks (Book eq. 5.13; the docstring's
    "chunks perm[i : i + mini_batch_size] in order (the last may be smaller)").

    Args:
        got: the ids of each mini-batch the student's buffer yielded, in order.
        want: the ids of each specified chunk, in order.
        mini_batch_size: the size asked for.

    Returns:
        ``"buffer_drops_last_minibatch"`` when ``got`` is exactly ``want`` without its last chunk and that chunk
        is the smaller one (a ``drop_last`` habit); ``"buffer_wrong_minibatch_order"`` otherwise.
    """
    dropped = len(want) > 1 and len(want[-1]) < mini_batch_size and got == want[:-1]
    return "buffer_drops_last_minibatch" if dropped else "buffer_wrong_minibatch_order"
