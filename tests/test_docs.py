"""The documentation site: API reference coverage, runnable Quickstart, experiment scripts.

`make test` also builds the site once with `mkdocs build --strict`, which fails
on a broken link, a broken cross-reference or a docstring griffe cannot parse.
"""

import importlib
import importlib.util
import os
import re
import subprocess
import sys

import keras
import pytest

griffe = pytest.importorskip("griffe")  # the docs extra

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "keras_transformer"


def _load_hook():
    path = os.path.join(ROOT, "docs", "hooks", "api_reference.py")
    spec = importlib.util.spec_from_file_location("api_reference_hook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def reference():
    """(pages the hook generates, names it could not read, griffe's view of the package)."""
    hook = _load_hook()
    unreadable = []
    pages = hook.api_pages(unreadable=unreadable)
    return pages, unreadable, hook.load_package()


def public_names():
    """Dotted names of every public object: `__all__` of the package and its modules."""
    package = importlib.import_module(PACKAGE)
    names = []
    for name in package.__all__:
        value = getattr(package, name)
        if not hasattr(value, "__path__") and not hasattr(value, "__file__"):
            names.append(f"{PACKAGE}.{name}")
            continue
        assert hasattr(value, "__all__"), f"{value.__name__} is public but has no __all__"
        names += [f"{value.__name__}.{member}" for member in value.__all__]
    return names


def test_reference_has_every_public_name(reference):
    pages, unreadable, _ = reference
    assert not unreadable, (
        f"griffe cannot read {unreadable}, so the API reference cannot show them: define "
        "each on its own line (`PAD_ID = 0`, not `PAD_ID, UNK_ID = 0, 1`) with a docstring."
    )
    documented = {identifier for page in pages for identifier in page.identifiers}
    documented |= {label for page in pages for label, _ in page.links}
    missing = [name for name in public_names() if name not in documented]
    assert not missing, f"not in the API reference: {missing}"
    modules = [page.title for page in pages[1:]]
    package = importlib.import_module(PACKAGE)
    for name in package.__all__:
        if hasattr(getattr(package, name), "__path__") or hasattr(getattr(package, name), "__file__"):
            assert f"{PACKAGE}.{name}" in modules, f"no API page for {PACKAGE}.{name}"


def _documented_parameters(docstring):
    names = set()
    if docstring is None:
        return names
    for section in docstring.parse("google", warnings=False):
        if section.kind.value in ("parameters", "other parameters"):
            names |= {parameter.name.lstrip("*") for parameter in section.value}
    return names


def _signature(function):
    return [p.name for p in function.parameters if p.name not in ("self", "cls")]


def _undocumented(obj):
    """Problems of one public object: parameters missing from Args, no example, no docstring."""
    problems = []
    text = obj.docstring.value if obj.docstring else ""
    if not text.strip():
        return [f"{obj.path}: no docstring"]
    kind = obj.kind.value
    is_exception = kind == "class" and any(
        str(base).endswith(("Error", "Exception")) for base in obj.bases
    )
    if kind in ("class", "function") and not is_exception and ">>>" not in text:
        problems.append(f"{obj.path}: no runnable example (>>>)")
    if kind == "function":
        missing = set(_signature(obj)) - _documented_parameters(obj.docstring)
        problems += [f"{obj.path}({name}): not under Args" for name in sorted(missing)]
    if kind == "class":
        documented = _documented_parameters(obj.docstring)
        if "__init__" in obj.members:
            documented |= _documented_parameters(obj.members["__init__"].docstring)
        missing = set(_signature(obj)) - documented
        problems += [f"{obj.path}({name}): not under Args" for name in sorted(missing)]
        # Public methods the reference renders (those with a docstring) document theirs too.
        for name, member in obj.all_members.items():
            if (name.startswith("_") and name != "__call__") or name in ("call", "build"):
                continue
            member = member.final_target if member.is_alias else member
            if member.kind.value != "function" or member.docstring is None:
                continue
            missing = set(_signature(member)) - _documented_parameters(member.docstring)
            problems += [f"{obj.path}.{name}({arg}): not under Args" for arg in sorted(missing)]
    return problems


def test_every_argument_is_documented(reference):
    pages, _, package = reference
    problems = []
    for page in pages:
        for identifier in page.identifiers:
            obj = package[identifier[len(PACKAGE) + 1:]]
            problems += _undocumented(obj.final_target if obj.is_alias else obj)
    assert not problems, "\n".join(problems)


def test_the_check_catches_a_missing_argument():
    source = '''
def documented(a, b):
    """Adds.

    Args:
        a: first.

    Example:
    >>> documented(1, 2)
    3
    """
'''
    module = griffe.visit("probe", filepath=None, code=source)
    assert _undocumented(module["documented"]) == ["probe.documented(b): not under Args"]


def python_blocks(markdown_path):
    with open(markdown_path, encoding="utf-8") as file:
        return re.findall(r"^```python\n(.*?)^```", file.read(), flags=re.S | re.M)


def run_script(code_or_args, tmp_path, timeout=900):
    env = dict(os.environ, KERAS_BACKEND=keras.backend.backend(), TF_CPP_MIN_LOG_LEVEL="3")
    if isinstance(code_or_args, str):
        script = tmp_path / "script.py"
        script.write_text(code_or_args)
        code_or_args = [str(script)]
    result = subprocess.run(
        [sys.executable, *code_or_args], cwd=tmp_path, env=env, capture_output=True,
        text=True, timeout=timeout,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow  # a script in a subprocess: once is enough (its library is tested everywhere)
def test_quickstart_runs_as_written(tmp_path):
    blocks = python_blocks(os.path.join(ROOT, "docs", "quickstart.md"))
    assert len(blocks) >= 5
    out = run_script("\n".join(blocks), tmp_path)
    assert "19200" in out


@pytest.mark.slow  # a script in a subprocess: once is enough (its library is tested everywhere)
def test_warmup_experiment_smoke(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "warmup.png"
    out = run_script(
        [os.path.join(ROOT, "examples", "warmup_experiment.py"), "--smoke", "--output", str(png)],
        tmp_path,
    )
    assert png.stat().st_size > 0 and (tmp_path / "warmup.json").stat().st_size > 0
    assert "post" in out and "pre" in out


@pytest.mark.slow  # a script in a subprocess: once is enough (its library is tested everywhere)
def test_figure_script_runs(tmp_path):
    pytest.importorskip("matplotlib")
    run_script(
        [os.path.join(ROOT, "docs", "figures", "make_figures.py"), "--output-dir",
         str(tmp_path), "masks", "lr"],
        tmp_path,
    )
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["learning_rates.png", "masks.png"]
