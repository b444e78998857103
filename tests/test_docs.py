"""Every hook has a documented heading `name(args)` in docs/hooks.md."""

import inspect

from lumi_scaffold import hookspecs

DOCS = (__import__("pathlib").Path(__file__).parent.parent / "docs" / "hooks.md").read_text()


def test_every_hook_is_documented_with_its_signature():
    specs = [f for name, f in vars(hookspecs).items() if name.startswith("register_") and callable(f)]
    assert len(specs) == 6
    for spec in specs:
        args = ", ".join(inspect.signature(spec).parameters)
        assert f"## {spec.__name__}({args})" in DOCS, spec.__name__
