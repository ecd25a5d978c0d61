"""The house's layering, import weight, old import paths and data locations (issue 18)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "calib_metrics"
# The one module allowed to name the paper package besides cli.py: the finder that keeps
# the old import paths of the moved modules working (it imports them only on request).
MOVED_SHIM = PACKAGE / "_moved.py"


def _modules() -> dict[str, ast.Module]:
    return {
        ".".join(path.relative_to(ROOT).with_suffix("").parts): ast.parse(path.read_text())
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def _imports(tree: ast.Module, module: str) -> list[tuple[str, bool]]:
    """(imported module, imported inside a function) for every import of ``tree``."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import):
                found.extend((alias.name, in_function) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: resolve against the importing module
                    parent = module.split(".")[: -child.level]
                    base = ".".join([*parent, base] if base else parent)
                found.append((base, in_function))
                found.extend((f"{base}.{alias.name}", in_function) for alias in child.names)
            visit(child, inner)

    visit(tree, False)
    return found


def _under(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_only_the_cli_imports_the_paper_and_only_inside_functions():
    offenders = []
    for module, tree in _modules().items():
        if _under(module, "calib_metrics.paper"):
            continue
        for name, in_function in _imports(tree, module):
            if not _under(name, "calib_metrics.paper"):
                continue
            if module != "calib_metrics.cli" or not in_function:
                offenders.append(f"{module} imports {name}")
    assert offenders == []
    # the alias finder names the package only as a string, never in an import statement
    assert MOVED_SHIM.exists()


def test_lower_layers_never_import_higher_ones():
    offenders = []
    for module, tree in _modules().items():
        names = [name for name, _ in _imports(tree, module)]
        if _under(module, "calib_metrics.functional"):
            allowed = set(sys.stdlib_module_names) | {"torch", "__future__"}
            offenders += [
                f"{module} imports {n}"
                for n in names
                if n.split(".")[0] not in allowed and not _under(n, "calib_metrics.functional")
            ]
        if _under(module, "calib_metrics.models"):
            higher = ("calib_metrics.callbacks", "calib_metrics.paper", "calib_metrics.plot")
            offenders += [
                f"{module} imports {n}" for n in names if any(_under(n, h) for h in higher)
            ]
        if _under(module, "calib_metrics.recalibration"):  # it builds on these alone
            lower = ("functional", "models", "recalibration")
            offenders += [
                f"{module} imports {n}"
                for n in names
                if _under(n, "calib_metrics")
                and not any(_under(n, f"calib_metrics.{low}") for low in lower)
            ]
    assert offenders == []


def test_the_file_reader_and_the_figures_import_no_command():
    """The reader's and the figures' modules (packages since their split) build on lower
    layers alone: the commands and callbacks import them, never the other way round."""
    lower = {
        # figure_programs: what a figure needs and how its writing fails (standard library).
        "calib_metrics.predictions": ("calib_metrics.functional", "calib_metrics.figure_programs"),
        "calib_metrics.plot": ("calib_metrics.functional", "calib_metrics.wording"),
    }
    offenders = [
        f"{module} imports {name}"
        for package, allowed in lower.items()
        for module, tree in _modules().items()
        if _under(module, package)
        for name, _ in _imports(tree, module)
        if _under(name, "calib_metrics")
        and not any(_under(name, low) for low in (*allowed, package))
    ]
    assert offenders == []


def test_the_layering_check_sees_a_violation():
    """The checker itself: a nested import of the paper in a library module is caught."""
    tree = ast.parse("import torch\ndef f():\n    from calib_metrics.paper import demo\n")
    assert ("calib_metrics.paper", True) in _imports(tree, "calib_metrics.plot")
    tree = ast.parse("from .paper import demo\n")
    assert ("calib_metrics.paper", False) in _imports(tree, "calib_metrics.plot")


LOADED = """
import json, sys
import {module}
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in
      ('torchmetrics', 'matplotlib', 'scipy', 'lightning', 'calib_metrics'))))
"""


def _loaded_after(module: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", LOADED.format(module=module)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    return set(json.loads(done.stdout))


def test_functional_imports_torch_alone():
    loaded = _loaded_after("calib_metrics.functional")
    heavy = {m for m in loaded if m.split(".")[0] in ("torchmetrics", "matplotlib", "scipy")}
    assert heavy == set()
    assert "calib_metrics.metric" not in loaded and "calib_metrics.paper" not in loaded


def test_metric_is_imported_on_first_use():
    loaded = _loaded_after("calib_metrics")
    assert "calib_metrics.metric" not in loaded and "torchmetrics" not in loaded
    import calib_metrics
    from calib_metrics.metric import CalibrationError

    assert calib_metrics.CalibrationError is CalibrationError
    assert "CalibrationError" in dir(calib_metrics)
    with pytest.raises(AttributeError, match="no_such_name"):
        calib_metrics.no_such_name  # noqa: B018


def test_old_import_paths_warn_and_give_the_same_objects():
    for old in [m for m in sys.modules if m.startswith("calib_metrics.experiments")]:
        del sys.modules[old]
    with pytest.warns(DeprecationWarning, match="calib_metrics.paper.synthetic"):
        old = importlib.import_module("calib_metrics.experiments.synthetic")
    from calib_metrics.paper import synthetic

    assert old is synthetic
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from calib_metrics.data.predictions import read_table
        from calib_metrics.events import EventAnalysis
    from calib_metrics.paper.events.analysis import EventAnalysis as moved
    from calib_metrics.predictions import read_table as reader

    assert EventAnalysis is moved and read_table is reader


def test_any_module_under_an_old_package_is_the_paper_s_own() -> None:
    """calib_metrics.experiments.ner (added after the move) had loaded a second module
    object through the old package's path, and calib_metrics.data's warning had named only
    locations, where the user's import was tagging."""
    for old in [
        m for m in sys.modules if m.startswith(("calib_metrics.experiments", "calib_metrics.data"))
    ]:
        del sys.modules[old]
    with pytest.warns(DeprecationWarning, match="calib_metrics.experiments.ner moved to"):
        old = importlib.import_module("calib_metrics.experiments.ner")
    from calib_metrics.paper import ner

    assert old is ner
    with pytest.warns(DeprecationWarning, match="its modules to calib_metrics.paper"):
        importlib.import_module("calib_metrics.data")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("calib_metrics.experiments.no_such_module")


def test_data_location_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from calib_metrics.paper import locations

    chosen = tmp_path / "mine"
    (chosen / "set").mkdir(parents=True)
    env = tmp_path / "env"
    (env / "set").mkdir(parents=True)
    monkeypatch.setenv(locations.ENV_VAR, str(env))
    assert locations.find_dataset("set", chosen) == chosen / "set"  # --data wins
    assert locations.find_dataset("set") == env / "set"  # then the variable
    monkeypatch.delenv(locations.ENV_VAR)
    beside = ROOT.parent / "shared" / "data"
    assert locations.shared_data_dir() == (beside if beside.is_dir() else None)


def test_no_search_outside_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Neither the working directory's parents nor an installed copy's folders count."""
    from calib_metrics.paper import locations

    monkeypatch.delenv(locations.ENV_VAR, raising=False)
    (tmp_path / "shared" / "data" / "set").mkdir(parents=True)
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    installed = tmp_path / "site-packages" / "calib_metrics" / "paper" / "locations.py"
    monkeypatch.setattr(locations, "__file__", str(installed))
    assert locations.shared_data_dir() is None  # no pyproject.toml: not a checkout
    # Said so: run from inside a clone, an installed copy's message had read as if the
    # clone's own ../shared/data were missing.
    with pytest.raises(FileNotFoundError, match="CALIB_METRICS_DATA unset") as err:
        locations.find_dataset("set")
    assert f"is an installed copy ({tmp_path / 'site-packages' / 'calib_metrics'}), not a" in str(
        err.value
    )
    checkout = tmp_path / "repo"
    (checkout / "calib_metrics" / "paper").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    monkeypatch.setattr(locations, "__file__", str(checkout / "calib_metrics/paper/locations.py"))
    assert locations.shared_data_dir() == tmp_path / "shared" / "data"


EVALUATE = """
import sys
from calib_metrics.cli import main
assert main(["evaluate", {path!r}, "--samples", "10"]) == 0
print(sorted(m for m in sys.modules if m.startswith("calib_metrics.paper")))
"""


def test_evaluate_never_loads_the_paper(tmp_path: Path):
    path = tmp_path / "p.csv"
    path.write_text("prob,label\n0.2,0\n0.7,1\n0.9,1\n")
    done = subprocess.run(
        [sys.executable, "-c", EVALUATE.format(path=str(path))],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_data_variable_that_names_no_folder_is_named(tmp_path, monkeypatch) -> None:
    """A set but wrong $CALIB_METRICS_DATA was reported as "unset"."""
    from calib_metrics.paper import locations

    missing = tmp_path / "nonexist"
    monkeypatch.setenv("CALIB_METRICS_DATA", str(missing))
    with pytest.raises(FileNotFoundError, match=f"CALIB_METRICS_DATA={missing} is not a folder"):
        locations.find_dataset("ud-english-ewt")


def test_not_found_says_where_the_folder_looked_in_came_from(tmp_path, monkeypatch) -> None:
    """A $CALIB_METRICS_DATA folder without the set was reported without naming the
    variable, and a file given as --data as "not found"."""
    from calib_metrics.paper import locations

    monkeypatch.setenv("CALIB_METRICS_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"set \(from \$CALIB_METRICS_DATA\)\)"):
        locations.find_dataset("set")
    afile = tmp_path / "afile"
    afile.write_text("")
    with pytest.raises(FileNotFoundError, match="afile is a file, not a folder"):
        locations.find_dataset("set", afile)


def test_a_tweet_folder_missing_one_file_names_it_once(tmp_path) -> None:
    """It had said the folder "holds neither" set, and an empty --data folder repeated it."""
    import gzip
    import zipfile

    from calib_metrics.paper.tweets import load_corpus

    tweets = tmp_path / "nltk-twitter-samples-text"
    tweets.mkdir()
    (tweets / "negative_tweets.txt.gz").write_bytes(gzip.compress(b"sad :(\tnegative\n"))
    with pytest.raises(FileNotFoundError, match=r"missing .*positive_tweets\.txt\.gz"):
        load_corpus(str(tmp_path), "nltk-twitter-samples-text")
    polarity = tmp_path / "polarity"
    polarity.mkdir()
    (polarity / "negative_tweets.txt.gz").write_bytes(gzip.compress(b"stray :(\tnegative\n"))
    with zipfile.ZipFile(polarity / "sentence_polarity.zip", "w") as archive:
        archive.writestr("sentence_polarity/rt-polarity.pos", "a gem .\n")
        archive.writestr("sentence_polarity/rt-polarity.neg", "dull .\n")
    assert load_corpus(str(polarity))[0].name == "nltk-sentence-polarity"  # a stray file
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError) as refused:
        load_corpus(str(empty))
    assert str(refused.value).count("holds neither") == 1
