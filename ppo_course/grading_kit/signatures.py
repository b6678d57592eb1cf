"""The stubs' signatures, and a comparison of a student's module with them read by `ast` (never imported).

`ppo-course check` and the graders compare each exercise function's parameters
with the stub's before running anything, so that a changed signature (e.g.
``def probability_ratio(logp_new, logp_old, clamp)``) is reported as such
("`probability_ratio` has an extra required parameter `clamp`; keep the stub's
signature") rather than as an exception deep inside the test machinery. The
student's file is only parsed (`ast.parse`), so this is safe in a trusted
process. `STUB_SIGNATURES` is kept equal to `exercises/` by
`tests/exercises/test_stub_signatures.py`.
"""

from __future__ import annotations

import ast
from pathlib import Path

#: {module stem: {function or "Class.method": ((parameter, default source or None), ...)}}, `self` left out.
#: Generated from the stubs in exercises/ (see `stub_signatures`); keyword-only and ** parameters are
#: not listed (the stubs' only one, RolloutBuffer.add's **fields, accepts anything).
STUB_SIGNATURES: dict[str, dict[str, tuple[tuple[str, str | None], ...]]] = {
    "ex1_ratio": {
        "logprobs_from_logits": (("logits", None), ("tokens", None)),
        "probability_ratio": (("logp_new", None), ("logp_old", None)),
    },
    "ex2_clipped_loss": {
        "masked_mean": (("x", None), ("mask", None)),
        "clipped_surrogate_loss": (("logp_new", None), ("logp_old", None), ("advantages", None), ("mask", None),
                                   ("clip_eps", "0.2")),
    },
    "ex3_full_loss": {
        "masked_mean": (("x", None), ("mask", None)),
        "clipped_value_loss": (("values", None), ("old_values", None), ("returns", None), ("mask", None),
                               ("clip_range_value", "0.2")),
        "entropy_from_logits": (("logits", None), ("mask", None)),
        "ppo_loss": (("logp_new", None), ("logp_old", None), ("advantages", None), ("values", None),
                     ("old_values", None), ("returns", None), ("logits", None), ("mask", None), ("clip_eps", "0.2"),
                     ("clip_range_value", "0.2"), ("vf_coef", "0.1"), ("ent_coef", "0.01")),
    },
    "ex4_gae": {
        "compute_gae": (("rewards", None), ("values", None), ("mask", None), ("gamma", "1.0"), ("lam", "0.95")),
        "whiten": (("x", None), ("mask", None), ("shift_mean", "True")),
    },
    "ex5_rollout_buffer": {
        "RolloutBuffer.__init__": (),
        "RolloutBuffer.start_training": (),
        "RolloutBuffer.minibatches": (("mini_batch_size", None), ("generator", "None")),
        "RolloutBuffer.purge": (),
    },
    "ex6_kl_reward": {
        "per_token_kl": (("logp", None), ("ref_logp", None), ("mask", None)),
        "kl_shaped_rewards": (("scores", None), ("logp", None), ("ref_logp", None), ("mask", None),
                              ("kl_coef", "0.05"), ("placement", "'per_token'")),
        "AdaptiveKLController.__init__": (("init_kl_coef", "0.05"), ("target", "6.0"), ("horizon", "10000")),
        "AdaptiveKLController.update": (("current_kl", None), ("n_steps", None)),
    },
    "ex7_ppo_step": {
        "ppo_step": (("policy", None), ("ref_policy", None), ("optimizer", None), ("queries", None),
                     ("reward_fn", None), ("kl_ctl", None), ("config", None), ("generator", None)),
    },
}

#: Largest module file parsed (bytes); a larger one is left to the import to judge.
MAX_SOURCE_BYTES = 2 * 2**20


class SignatureProblem(str):
    """What differs from the stub, as a sentence; `blocking` when no call made with the stub's arguments can
    be right (an extra required parameter, a missing one, a changed order): such a function is not run.
    A renamed parameter or a missing default only breaks the calls that use it: the function runs, and a
    call that fails to bind (TypeError) is reported with this sentence."""

    blocking: bool

    def __new__(cls, text: str, blocking: bool) -> "SignatureProblem":
        obj = super().__new__(cls, text)
        obj.blocking = blocking
        return obj


class WrongSignature(Exception):
    """A function's parameters differ from the stub's; raised instead of calling it."""

    def __init__(self, name: str, problem: str):
        self.name = name
        self.problem = problem
        super().__init__(problem)


def _positional(args: ast.arguments) -> list[tuple[str, str | None, bool]]:
    """[(name, default source or None, required)] of the positional parameters."""
    params = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(params) - len(args.defaults)) + [ast.unparse(d) for d in args.defaults]
    return [(p.arg, d, d is None) for p, d in zip(params, defaults)]


def _definitions(tree: ast.Module) -> dict[str, ast.arguments]:
    """{"name" or "Class.method": its arguments} of the module's top-level defs (the last one wins)."""
    found: dict[str, ast.arguments] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = node.args
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[f"{node.name}.{item.name}"] = item.args
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            for t in targets:
                if isinstance(t, ast.Name):
                    found.pop(t.id, None)  # rebound to something we cannot read: not judged
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    found.pop(alias.asname or alias.name, None)
    return found


#: Public methods of the stub classes whose signatures are not compared (``add(**fields)``), by "stem.Class".
UNCOMPARED_METHODS: dict[str, tuple[str, ...]] = {"ex5_rollout_buffer.RolloutBuffer": ("add",)}


def stub_methods(stem: str, class_name: str) -> frozenset[str]:
    """The public methods the stub's class `class_name` of module `stem` defines (``__init__`` aside).

    Test code calls these on a student's object; `GuardedModule.new` hands them to the `RemoteObject`,
    which then always calls them in the child (read back as data, an attribute ``update = 5`` would make
    the test's own ``ctl.update(...)`` raise TypeError in the grader: ``grader_error``).
    """
    prefix = f"{class_name}."
    names = {n[len(prefix):] for n in STUB_SIGNATURES.get(stem, {}) if n.startswith(prefix)}
    return frozenset((names - {"__init__"}) | set(UNCOMPARED_METHODS.get(f"{stem}.{class_name}", ())))


def stub_signatures(source: str) -> dict[str, tuple[tuple[str, str | None], ...]]:
    """The `STUB_SIGNATURES` entry of one stub module's source (used to keep the table in sync)."""
    out = {}
    for name, args in _definitions(ast.parse(source)).items():
        if name.split(".")[-1].startswith("_") and not name.endswith("__init__"):
            continue
        params = _positional(args)
        if "." in name and params and params[0][0] == "self":
            params = params[1:]
        if name.endswith((".phase", ".__len__", ".add")):
            continue  # properties and **fields: nothing to compare
        out[name] = tuple((n, d) for n, d, _ in params)
    return out


def _compare(name: str, stub: tuple[tuple[str, str | None], ...], args: ast.arguments,
             method: bool) -> SignatureProblem | None:
    """The first difference between the student's `args` and the stub's parameters, as a sentence, or None."""
    params = _positional(args)
    if method and params and params[0][0] in ("self", "cls"):
        params = params[1:]
    mine = [n for n, _, _ in params]
    theirs = [n for n, _ in stub]
    kwonly = {a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults)}
    short = name.split(".")[-1] if not name.endswith("__init__") else name.split(".")[0]
    keep = f"; keep the stub's signature `{short}({', '.join(n if d is None else f'{n}={d}' for n, d in stub)})`"
    for i, (want, default) in enumerate(stub):
        if want in mine:
            continue
        if args.vararg is not None or args.kwarg is not None:
            continue  # *args / **kwargs may take it
        extra = [n for n in mine if n not in theirs]
        if i < len(mine) and mine[i] in extra:
            return SignatureProblem(f"`{short}` renames parameter `{want}` to `{mine[i]}`{keep}", blocking=False)
        return SignatureProblem(f"`{short}` is missing the parameter `{want}`{keep}", blocking=True)
    extra_required = [n for n, _, required in params if required and n not in theirs] + \
        [n for n, d in kwonly.items() if d is None and n not in theirs]
    if extra_required:
        return SignatureProblem(f"`{short}` has an extra required parameter `{extra_required[0]}`{keep}", blocking=True)
    order = [n for n in mine if n in theirs]
    if order != theirs[: len(order)]:
        return SignatureProblem(f"`{short}` takes its parameters in a different order ({', '.join(order)}){keep}",
                                blocking=True)
    for want, default in stub:
        if default is not None:
            got = next((d for n, d, _ in params if n == want), None)
            if got is None:
                return SignatureProblem(f"`{short}`'s parameter `{want}` needs its default ({want}={default}){keep}",
                                        blocking=False)
    return None


def signature_problems(stem: str, path: str | Path) -> dict[str, SignatureProblem]:
    """{function or "Class.method": what differs from the stub} for the module file at `path`.

    Reads and parses the file (never imports it). An unreadable, oversized or unparsable file gives
    {} (the import then reports it); a name the module does not define is left to the tests
    ("missing_name").
    """
    stubs = STUB_SIGNATURES.get(stem)
    if not stubs:
        return {}
    try:
        path = Path(path)
        if path.stat().st_size > MAX_SOURCE_BYTES:
            return {}
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found = _definitions(tree)
    problems = {}
    for name, stub in stubs.items():
        if name in found:
            problem = _compare(name, stub, found[name], method="." in name)
            if problem:
                problems[name] = problem
    return problems


def problem_for_call(problems: dict[str, SignatureProblem], name: str) -> SignatureProblem | None:
    """The problem of a module-level function `name`, or of the class `name`'s constructor (`new`)."""
    return problems.get(name) or problems.get(f"{name}.__init__")
