"""The provider's per-call wrapper (`GuardedModule`) offers every public method of `RemoteModule`.

Hidden checks look a provider method up on the module's class (`callable(getattr(type(student), name))`) and
fall back to a weaker path when it is missing: a method the wrapper forgets silently weakens a check (the
red team's a39 kept an in-place point that way). So the wrapper's surface must cover the sandbox's.
"""

from __future__ import annotations

import inspect

from grader.hidden.provider import GuardedModule
from grader.sandbox.remote import RemoteModule


def _public_methods(cls) -> set[str]:
    return {name for name, member in inspect.getmembers(cls)
            if not name.startswith("_") and (inspect.isfunction(member) or isinstance(member, property))}


def test_guarded_module_forwards_every_public_method_of_remote_module():
    missing = _public_methods(RemoteModule) - _public_methods(GuardedModule)
    assert missing == set(), f"GuardedModule does not offer {sorted(missing)}: add a forwarding method"
