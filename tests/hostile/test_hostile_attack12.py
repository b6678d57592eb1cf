"""Red-team round 12: what a hostile child's messages may cost the trusted grader.

a02 (one wire buffer, many values): a frame's tensor nodes name their bytes by buffer index. The decoder
copied a buffer for every node after the first that named it ("so that no two decoded tensors share
memory"), so a child that rewrote its own encoder (it runs in the student's process) sent 8 MiB named by
128 nodes and the grader decoded 1 GiB per call: `ppo-course grade` of /work/wt/attack12/attacks/a02 peaked
at 7.6 GB resident (a correct submission: 0.33 GB), and a header of 16 MiB holds ~300,000 such nodes, far
past any machine's memory. Every limit on the channel counts wire bytes (`max_message_bytes`, exercise 7's
`max_callback_bytes`). The rule tested here: a buffer backs one value at most; a message naming one twice
is malformed (the child's crash, never the grader's memory).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from grader.sandbox import ForkServerClient, Limits, Sandbox, StudentCrash
from grader.sandbox.known_good import KnownGood
from sandbox_child import codec

_ALIASING_MODULE = '''
import torch
from sandbox_child import codec

_plain = codec.Encoder._tensor


def _aliasing(self, value):
    memo = self.__dict__.setdefault("_memo", {})
    if id(value) not in memo:
        memo[id(value)] = _plain(self, value)
    return dict(memo[id(value)])


codec.Encoder._tensor = _aliasing
_T = torch.arange(256, dtype=torch.float32)


def many():
    return [_T] * 8


def one():
    return [_T]
'''


def _aliased_frame(n: int) -> tuple[dict, list[bytearray]]:
    node = {"t": "tensor", "dtype": "float32", "shape": [4], "b": 0}
    return [dict(node) for _ in range(n)], [bytearray(torch.ones(4).numpy().tobytes())]


def test_a_buffer_named_twice_is_malformed():
    """One buffer named by two nodes: a ProtocolError (before: two tensors, the second a copy)."""
    nodes, buffers = _aliased_frame(2)
    with pytest.raises(codec.ProtocolError, match="more than one value"):
        codec.Decoder(buffers).decode(nodes)
    assert codec.Decoder(*_aliased_frame(1)[1:]).decode(_aliased_frame(1)[0])[0].tolist() == [1.0] * 4


def test_a_generator_and_a_tensor_cannot_share_a_buffer():
    state = torch.Generator().get_state()
    nodes = [{"t": "generator", "b": 0, "id": -1}, {"t": "tensor", "dtype": "uint8", "shape": [state.numel()], "b": 0}]
    with pytest.raises(codec.ProtocolError, match="more than one value"):
        codec.Decoder([bytearray(state.numpy().tobytes())]).decode(nodes)


def test_a_known_good_callback_naming_a_buffer_twice_is_refused():
    """Exercise 7's callbacks: the bytes budget counts wire bytes, so aliased arguments are refused at decode."""
    session = KnownGood.reference(["ex4_gae"]).session()
    nodes, buffers = _aliased_frame(3)
    with pytest.raises(codec.ProtocolError, match="more than one value"):
        session.decoder(buffers).decode({"t": "dict", "v": {"args": nodes}})


def test_a_child_reply_with_aliased_buffers_is_its_crash(tmp_path: Path):
    """End to end: a child whose encoder names one buffer for many values is stopped as a malformed reply."""
    sub = tmp_path / "submissions" / "student"
    sub.mkdir(parents=True)
    (sub / "aliasing.py").write_text(_ALIASING_MODULE)
    with Sandbox(sub, limits=Limits(call_timeout_s=10.0, import_timeout_s=10.0),
                 server=ForkServerClient.shared(share=True)) as box:
        mod = box.load("aliasing")
        assert [t.tolist() for t in mod.one()] == [list(range(256))]  # one use of a buffer is fine
        with pytest.raises(StudentCrash, match="malformed value"):
            mod.many()


# a03 (a known-good reply too large to frame): exercise 7's child asked the grader's TrackingBuffer for `added`
# after two `add`s of 60,000 one-element fields; the reply held 120,000 tensors, more than a frame's
# `MAX_BUFFERS`, and `frames.pack_frame` raised ProtocolError inside the grader: the submission was
# "NOT graded: the grader itself failed" (a grader fault of the student's making, no score published).
# Now the child is stopped, naming why: its import (or call) fails, and the exercise scores 0.

def many_tensors(n: int) -> list:
    """A trusted piece whose reply size the child chooses."""
    return [torch.zeros(1) for _ in range(int(n))]


_WIDE_CALLER = '''
import widen


def go(n):
    return len(widen.many_tensors(n))
'''


def test_a_known_good_reply_too_large_to_frame_is_the_childs_crash(tmp_path: Path):
    from sandbox_child import frames

    sub = tmp_path / "submissions" / "student"
    sub.mkdir(parents=True)
    (sub / "caller.py").write_text(_WIDE_CALLER)
    table = KnownGood({"widen": {"many_tensors": many_tensors}})
    with Sandbox(sub, limits=Limits(call_timeout_s=60.0, import_timeout_s=10.0), known_good=table,
                 server=ForkServerClient.shared(share=True)) as box:
        mod = box.load("caller")
        assert mod.go(3) == 3
        with pytest.raises(StudentCrash, match="larger than one message"):
            mod.go(frames.MAX_BUFFERS + 1)


# a04 (a generator state torch refuses with TypeError): a callback's "gens" are the child's generator states;
# a float tensor there made `torch.Generator.set_state` raise TypeError, which the session let through (it
# ignored ValueError and RuntimeError only): every exercise-7 test of the submission became grader_error, and
# `ppo-course grade` published nothing ("the grader itself failed on 8 test(s)").

@pytest.mark.parametrize("state", [torch.zeros(3), torch.zeros(5056, dtype=torch.bool),
                                   torch.zeros(7, dtype=torch.uint8)], ids=["float", "bool", "short"])
def test_a_refused_generator_state_is_ignored_not_raised(state):
    session = KnownGood.reference(["ex1_ratio"]).session()
    logp = torch.zeros(1, 2)
    header, _ = session.handle(7, "kg_call", {"module": "ex1_ratio", "name": "probability_ratio",
                                              "args": [logp, logp]}, {"1": state})
    assert header["id"] == 7 and header["m"] == "cb_ok"


# A callback's id is echoed into the reply frame and its op was str()-ed in the grader: a child-chosen nested
# list there (json.loads accepts ~1000 levels) could fail the grader's own json.dumps or repr with a
# RecursionError, another grader fault of the child's making. Both must now be plain (an int, a str).

@pytest.mark.parametrize("reply", [{"m": "cb", "id": [[1]], "op": "kg_call"}, {"m": "cb", "id": 1, "op": [["x"]]},
                                   {"m": "cb", "id": "1", "op": "kg_call"}], ids=["list-id", "list-op", "str-id"])
def test_a_callback_with_a_structured_id_or_op_ends_the_child(reply):
    from grader.sandbox.process import ChildProcess

    child = ChildProcess.__new__(ChildProcess)
    child.on_callback = KnownGood.reference(["ex1_ratio"]).session()
    with pytest.raises(Exception, match="malformed callback") as info:
        child._serve_callback_unbudgeted(dict(reply, fields={"t": "dict", "v": {}}, gens={"t": "dict", "v": {}}), [])
    assert type(info.value).__name__ == "_Died"  # the child's end, not an error inside the grader


# a05 (a message that makes NFC quadratic): the parent NFC-normalised a child's whole exception message before
# capping it at 500 characters. Canonical reordering sorts a run of combining marks by insertion, so "a" +
# 60,000 × U+0301 (class 230) + 60,000 × U+0316 (class 220) took ~30 CPU-s per reply inside the grader (a forged
# `describe_exception` in ex2's child: `ppo-course grade` was still running after 300 CPU-s, 40,000 marks of each
# measured 12.6 s, i.e. hours for a message of a few MB). Normalisation now sees a bounded prefix.

def test_a_childs_message_is_cut_before_it_is_normalised(monkeypatch):
    import unicodedata

    from grader.sandbox import errors

    seen: list[int] = []
    real = unicodedata.normalize

    def spy(form, text):
        seen.append(len(text))
        return real(form, text)

    monkeypatch.setattr(errors.unicodedata, "normalize", spy)
    slow = "a" + "\u0301" * 60_000 + "\u0316" * 60_000
    shown = errors.safe_message(slow)
    assert seen and max(seen) <= 4 * errors.MAX_MESSAGE_CHARS + 1
    assert shown.endswith("… (truncated)") and len(shown) <= errors.MAX_MESSAGE_CHARS + len("… (truncated)")
    assert errors.StudentError("ValueError", slow).message == shown
    assert errors.safe_message("e\u0301t\u00e9") == "\u00e9t\u00e9"  # still NFC (a short message whole)


# a06 (zip entry names of 64 KiB of combining marks): the intake NFC-normalised every entry's name (`collision`)
# before anything bounded its length; a 5 MB zip of the solutions plus 40 such names held `ppo-course grade` for
# 82 CPU-s before it was rejected ("File name too long", at extraction); 500 entries (`max_files`) would be
# ~17 CPU-minutes in the trusted intake. A name no disk can hold is now refused before NFC sees it.

def test_an_overlong_zip_name_is_refused_before_nfc(tmp_path: Path, monkeypatch):
    import unicodedata
    import zipfile

    from ppo_course import submission_names
    from ppo_course.submission_rules import Entry, Rejected, SubmissionLimits, stage_submission

    seen: list[int] = []
    real = unicodedata.normalize
    monkeypatch.setattr(submission_names.unicodedata, "normalize", lambda form, text: seen.append(len(text))
                        or real(form, text))
    zpath = tmp_path / "s1.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("ex1_ratio.py", "x = 1\n")
        z.writestr("a" + "\u0301" * 2000 + "\u0316" * 2000 + ".txt", b"")  # 8 KB of UTF-8 in one name
    with pytest.raises(Rejected, match="a name is over 255 bytes"):
        stage_submission(Entry("s1", [zpath], "zip"), tmp_path / "staged", SubmissionLimits())
    assert all(n <= submission_names.NAME_MAX for n in seen)
    assert submission_names.overlong(["e" * 255]) is False and submission_names.overlong(["é" * 128]) is True
