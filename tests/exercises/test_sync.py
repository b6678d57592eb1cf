"""exercises/ is exactly what tools/make_exercises.py derives from solutions/, and leaks nothing.

Checks: the committed stubs are not stale; generation is deterministic; every
stub imports and every contract name raises NotImplementedError with a message
naming it; no line of solution code reaches exercises/; malformed markup is
refused with the file and line.
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from exercises_support import CONTRACT_NAMES, EXERCISES, REPO_ROOT, SOLUTIONS, load_folder, mk


def test_committed_stubs_are_up_to_date():
    stale = mk.stale_files(SOLUTIONS, EXERCISES)
    assert stale == [], f"exercises/ drifted from solutions/ in {stale}: run `make exercises` and commit"


def test_check_mode_exit_codes(tmp_path):
    """--check exits 0 on a fresh copy and 1 once a stub is edited by hand."""
    mk.make_exercises(SOLUTIONS, tmp_path)
    assert mk.main(["--src", str(SOLUTIONS), "--dst", str(tmp_path), "--check"]) == 0
    stub = tmp_path / "ex4_gae.py"
    stub.write_text(stub.read_text(encoding="utf-8") + "# edited by hand\n", encoding="utf-8")
    assert mk.main(["--src", str(SOLUTIONS), "--dst", str(tmp_path), "--check"]) == 1


def test_check_mode_flags_leftover_module(tmp_path):
    mk.make_exercises(SOLUTIONS, tmp_path)
    (tmp_path / "ex9_old.py").write_text("x = 1\n", encoding="utf-8")
    assert mk.stale_files(SOLUTIONS, tmp_path) == ["ex9_old.py"]
    mk.make_exercises(SOLUTIONS, tmp_path)  # regenerating removes it
    assert not (tmp_path / "ex9_old.py").exists()


def test_generation_is_deterministic(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    mk.make_exercises(SOLUTIONS, a)
    mk.make_exercises(SOLUTIONS, b)
    names = sorted(p.name for p in a.glob("*.py"))
    assert names == sorted(f"{m}.py" for m in CONTRACT_NAMES)
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_command_line_check_passes():
    """The `make exercises` script itself, as CI would run it."""
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "tools" / "make_exercises.py"), "--check"],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr


def _dummy_call(obj):
    """Call ``obj`` with None for every required parameter (the stub raises before looking at them)."""
    params = [p for p in inspect.signature(obj).parameters.values()
              if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return obj(*[None] * len(params))


def _stub_callables(module_name, module):
    """(qualified name, zero-argument thunk) for every contract function and every method/property of contract classes."""
    for name in CONTRACT_NAMES[module_name]:
        obj = getattr(module, name)
        if not inspect.isclass(obj):
            yield f"{module_name}.{name}", lambda o=obj: _dummy_call(o)
            continue
        yield f"{module_name}.{name}.__init__", lambda cls=obj: _dummy_call(cls)
        instance = object.__new__(obj)  # bypass __init__, which is a stub too
        for attr, member in vars(obj).items():
            if attr.startswith("_") and attr != "__len__":
                continue
            if isinstance(member, property):
                yield f"{module_name}.{name}.{attr}", lambda m=member, i=instance: m.fget(i)
            elif inspect.isfunction(member):
                yield f"{module_name}.{name}.{attr}", lambda m=member, i=instance: _dummy_call(m.__get__(i))


@pytest.mark.parametrize("module_name", list(CONTRACT_NAMES))
def test_stub_imports_and_every_name_raises_not_implemented(module_name):
    stubs = load_folder(EXERCISES, names=tuple(CONTRACT_NAMES))
    module = stubs[module_name]
    assert not isinstance(module, BaseException), f"exercises/{module_name}.py does not import: {module!r}"
    checked = []
    for qualname, thunk in _stub_callables(module_name, module):
        with pytest.raises(NotImplementedError) as info:
            thunk()
        message = str(info.value)
        assert message.startswith(qualname + ": implement"), f"{qualname}: message {message!r} must name it"
        assert len(message) > len(qualname) + 30, f"{qualname}: message too thin to act on: {message!r}"
        checked.append(qualname)
    want = {f"{module_name}.{n}" for n in CONTRACT_NAMES[module_name]}
    assert want <= {q if q.count(".") == 1 else q.rsplit(".", 1)[0] for q in checked}, checked


def _code_lines_of_regions(text):
    lines = text.splitlines()
    for region in mk.find_regions(text):
        for line in lines[region.begin + 1 : region.end]:
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                yield stripped


@pytest.mark.parametrize("module_name", list(CONTRACT_NAMES))
def test_no_solution_code_leaks_into_the_stub(module_name):
    solution = (SOLUTIONS / f"{module_name}.py").read_text(encoding="utf-8")
    stub_lines = {ln.strip() for ln in (EXERCISES / f"{module_name}.py").read_text(encoding="utf-8").splitlines()}
    # Lines too generic to be a leak (they occur outside regions too).
    generic = {")", "]", "}", "else:", "return loss, stats", "):", "with torch.no_grad():"}
    leaked = [ln for ln in _code_lines_of_regions(solution) if ln in stub_lines and ln not in generic]
    assert leaked == [], f"solution lines found in exercises/{module_name}.py: {leaked}"
    assert mk.BEGIN not in "\n".join(stub_lines) and mk.END not in "\n".join(stub_lines)


MALFORMED = {
    "no_todo": "def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n",
    "unclosed": "def f():\n    ### BEGIN SOLUTION\n    # TODO: x\n    return 1\n",
    "end_without_begin": "def f():\n    return 1\n    ### END SOLUTION\n",
    "nested": "def f():\n    ### BEGIN SOLUTION\n    # TODO: x\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n",
    "misindented": "def f():\n    ### BEGIN SOLUTION\n    # TODO: x\n    return 1\n  ### END SOLUTION\n",
    "module_level": "### BEGIN SOLUTION\n# TODO: x\nX = 1\n### END SOLUTION\n",
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_markup_is_refused_with_its_line(case):
    with pytest.raises(mk.SolutionMarkupError, match=r"bad\.py:\d+"):
        mk.strip_solutions(MALFORMED[case], "bad", "bad.py")


def test_strip_solutions_on_a_small_example():
    """Hand-written expected stub: TODO kept, code replaced, qualified name in the message."""
    source = (
        "class C:\n"
        "    def f(self, x):\n"
        "        \"\"\"Doc.\"\"\"\n"
        "        ### BEGIN SOLUTION\n"
        "        # TODO: implement twice x,\n"
        "        #   as an int\n"
        "        return 2 * x\n"
        "        ### END SOLUTION\n"
    )
    want = (
        "class C:\n"
        "    def f(self, x):\n"
        "        \"\"\"Doc.\"\"\"\n"
        "        # TODO: implement twice x,\n"
        "        #   as an int\n"
        "        raise NotImplementedError('m.C.f: implement twice x, as an int')\n"
    )
    assert mk.strip_solutions(source, "m") == want
