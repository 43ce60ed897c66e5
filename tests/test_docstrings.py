"""Every docstring example in the package runs and gives the printed result."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import sdckit

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(sdckit.__path__, prefix="sdckit.")
    if not m.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    for test in finder.find(module, name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_public_names_are_documented() -> None:
    import sdckit.masking
    import sdckit.risk
    import sdckit.utility

    for package in (sdckit, sdckit.risk, sdckit.utility, sdckit.masking):
        for name in package.__all__:
            obj = getattr(package, name)
            if callable(obj) and not name.startswith("_"):
                assert obj.__doc__, f"{package.__name__}.{name} has no docstring"
