"""The Python blocks of README.md and docs/*.md: each parses, each of its imports works,
each name it imports is used in it (a block imports what it uses, so that it can be
copied alone), and each block that can run in seconds does, as written.

Most blocks use data the reader supplies (``model``, ``val_loader``, ``probs``). Those
are executed after a short preamble, :data:`GIVEN`, that defines exactly those names with
small synthetic values (random scores, random or model-drawn labels; no training, no
data set), in one subprocess for all of them (``MPLBACKEND=Agg``), each block in a fresh
namespace and its own empty working folder. :data:`NOT_RUN` lists the blocks that are not
executed, with the reason; every block is in exactly one of the two. A block needing the
shared data (``../shared/data``, or ``$CALIB_METRICS_DATA``) runs where it exists, its
working folder given ``../shared/data``, and is skipped, saying so, where it does not.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from calib_metrics.paper.locations import shared_data_dir

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[tuple[str, str]]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [
        (f"{path.relative_to(ROOT)}#{i}", code)
        for path in files
        for i, code in enumerate(BLOCK.findall(path.read_text(encoding="utf-8")), 1)
    ]


def _imports(tree: ast.Module) -> list[tuple[str, str | None]]:
    """(module, name) of every ``from module import name`` and ``import module``."""
    found: list[tuple[str, str | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(alias.name, None) for alias in node.names]
    return found


def test_the_docs_have_python_blocks():
    assert len(_blocks()) >= 10


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_block_parses_and_its_imports_resolve(where: str, code: str):
    tree = ast.parse(code, filename=where)
    for module, name in _imports(tree):
        imported = importlib.import_module(module)
        if name is not None and not hasattr(imported, name):
            importlib.import_module(f"{module}.{name}")  # a submodule, or ImportError


def _used(tree: ast.Module) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


@pytest.mark.parametrize(("where", "code"), _blocks(), ids=[w for w, _ in _blocks()])
def test_block_uses_what_it_imports(where: str, code: str):
    tree = ast.parse(code, filename=where)
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= _used(tree), f"{where} imports but never uses {imported - _used(tree)}"


# --- Running the blocks ------------------------------------------------------------------

# Synthetic stand-ins shared by the preambles: seeded, small.
_SEEDED = """
import torch
torch.manual_seed(0)
_g = torch.Generator().manual_seed(0)
"""
# Batches of (words [8, 30], tags [8, 30]) of a 47-tag tagger, the last 5 tokens padding.
_TAGGED = (
    _SEEDED
    + """
def _batch(classes=47):
    words = torch.randint(0, 100, (8, 30), generator=_g)
    tags = torch.randint(0, classes, (8, 30), generator=_g)
    tags[:, 25:] = -100
    return words, tags
model = torch.nn.Embedding(100, 47)   # words [B, T] -> scores [B, T, 47]
val_loader = [_batch() for _ in range(4)]
"""
)
# Binary pairs: q ~ U(0, 1), y ~ Bernoulli(q), in sentences of 20.
_PAIRS = (
    _SEEDED
    + """
q = torch.rand(2000, generator=_g)
y = torch.bernoulli(q, generator=_g).long()
sentence_ids = torch.arange(2000) // 20
"""
)
# A chain's potentials, scaled so that its tags (drawn from them) leave a temperature to fit.
_CHAIN = (
    _SEEDED
    + """
def _potentials(b=6, t=9, k=4):
    emissions = 2 * torch.randn(b, t, k, generator=_g)
    tags = torch.distributions.Categorical(logits=emissions / 1.5).sample()
    return (emissions, torch.randn(k, k, generator=_g), torch.zeros(k), torch.zeros(k)), tags
"""
)

# Each executed block: a phrase it must hold (so that a moved block is not run with
# another's names) and the preamble that gives it the reader's names.
GIVEN: dict[str, tuple[str, str]] = {
    "README.md#1": ("metric.update(probs, tags)", _TAGGED),
    "README.md#2": (
        "val_loader_with_ids",
        _TAGGED
        + "val_loader_with_ids = [(*b, torch.arange(8) + 8 * i) for i, b in enumerate(val_loader)]",
    ),
    "README.md#3": (
        "trainer.validate(Tagger(model), val_loader)",
        _TAGGED + "val_loader = torch.utils.data.DataLoader(val_loader, batch_size=None)",
    ),
    "README.md#4": (
        "brier_decomposition(probs, target)",
        _PAIRS + "probs, target = q, y",
    ),
    "README.md#5": (
        'compare_calibration(probs_a, probs_b, classes, mode="classwise")',
        _SEEDED
        + """
logits = torch.randn(600, 3, generator=_g)
classes = target = torch.distributions.Categorical(logits=logits).sample()
probs_a, probs_b = logits.softmax(-1), (1.5 * logits).softmax(-1)
""",
    ),
    "README.md#6": (
        "compare_calibration_by_label(probs_a, probs_b, target",
        _PAIRS
        + """
probs_a, probs_b, target = q, (q + 0.1).clamp(max=1), y
tag_of_each_query, sentence_of_each_query = torch.arange(2000) % 3, sentence_ids
""",
    ),
    "README.md#7": (
        "compare.update(hmm(words, mask), crf(words, mask), tags)",
        _TAGGED
        + """
hmm = lambda words, mask: model(words).softmax(-1)
crf = lambda words, mask: (1.5 * model(words)).softmax(-1)
""",
    ),
    "README.md#8": (
        "labels=batch.pair_type",
        _PAIRS
        + """
from types import SimpleNamespace
val_loader = [
    SimpleNamespace(q_a=q[i:i + 500], q_b=q[i:i + 500].sqrt(), y=y[i:i + 500],
                    pair_type=torch.arange(500) % 2)
    for i in range(0, 2000, 500)
]
""",
    ),
    "README.md#9": ('interval="groups", groups=sentence_ids', _PAIRS),
    "README.md#10": (
        "ChainTemperature().fit(*dev_potentials, dev_tags, dev_mask)",
        _CHAIN
        + """
dev_potentials, dev_tags = _potentials()
test_potentials, _ = _potentials()
dev_mask = test_mask = torch.ones(6, 9, dtype=torch.bool)
""",
    ),
    "docs/callbacks.md#1": ("CalibrationMonitor(num_classes=50", ""),
    "docs/events.md#1": (
        'read_coref_documents("corpus.conllu.gz")',
        """
import gzip
from calib_metrics.models.coref_ranker import AntecedentRanker
from calib_metrics.paper.locations import shared_data_dir
# The reader's corpus: GUM's news article on Korea (its coreference annotated).
with gzip.open(shared_data_dir() / "ud-english-gum" / "en_gum-ud-train.conllu.gz", "rb") as f:
    _text = f.read()
_start = _text.find(b"# newdoc id = GUM_news_korea\\n")
_end = _text.find(b"# newdoc id", _start + 1)
with gzip.open("corpus.conllu.gz", "wb") as f:
    f.write(_text[_start:_end])
model = AntecedentRanker(n_bits=12)   # untrained: every antecedent alike
""",
    ),
    "docs/recalibration.md#1": (
        "TemperatureScaling().fit(dev_logits, dev_target)",
        _SEEDED
        + """
dev_logits, test_logits = (2 * torch.randn(400, 5, generator=_g) for _ in range(2))
dev_target, test_target = (
    torch.distributions.Categorical(logits=z / 1.5).sample() for z in (dev_logits, test_logits)
)
""",
    ),
    "docs/recalibration.md#2": (
        "left_align(emissions, tags)",
        _CHAIN
        + """
(emissions, transitions, start, end), tags = _potentials()
tags[:, 0] = -100           # [CLS]
tags[::2, 4] = -100         # a sub-word piece
tags[1, 7:] = -100          # padding
""",
    ),
    "docs/recalibration.md#3": ("TemperatureRecalibration(ignore_index=-100)", ""),
    "docs/streaming.md#1": (
        "streaming=True",
        _SEEDED
        + """
loader = [
    (torch.randn(8, 30, 17, generator=_g).softmax(-1), torch.randint(0, 17, (8, 30), generator=_g))
    for _ in range(4)
]
""",
    ),
}
# Blocks that read the shared data sets (through ../shared/data, as written).
NEEDS_DATA = {"docs/events.md#1": ("ud-english-gum", "phoenix-country-actors")}
# Blocks not executed, and why. (Empty today: every block runs in seconds.)
NOT_RUN: dict[str, str] = {}

# One subprocess runs them all: each block after its preamble, in a fresh namespace and
# its own working folder, its output kept; the outcome of each is written as JSON.
RUNNER = r"""
import contextlib, io, json, os, sys, traceback, warnings
jobs = json.load(open(sys.argv[1]))
outcome = {}
for where, folder, preamble, code in jobs:
    os.chdir(folder)
    out = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out):
            warnings.simplefilter("ignore")  # the blocks' data are small: few-bins notes
            names = {"__name__": "__main__"}
            exec(compile(preamble, where + " (given)", "exec"), names)
            exec(compile(code, where, "exec"), names)
        outcome[where] = None
    except BaseException:
        outcome[where] = traceback.format_exc(limit=-8) + "\noutput:\n" + out.getvalue()[-2000:]
    import matplotlib.pyplot as plt
    plt.close("all")
json.dump(outcome, open(sys.argv[2], "w"))
"""


def _has_data(where: str) -> bool:
    root = shared_data_dir()
    return root is not None and all((root / name).is_dir() for name in NEEDS_DATA.get(where, ()))


def test_every_block_is_run_or_said_why_not():
    blocks = dict(_blocks())
    assert set(GIVEN) | set(NOT_RUN) == set(blocks), "a block is neither run nor listed"
    assert not set(GIVEN) & set(NOT_RUN)
    moved = [where for where, (phrase, _) in GIVEN.items() if phrase not in blocks[where]]
    assert not moved, f"these blocks no longer hold their phrase (renumbered?): {moved}"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, str | None]:
    """Each run block's traceback, or None where it ran; the blocks needing data that is
    not here are left out."""
    base = tmp_path_factory.mktemp("doc_blocks")
    root = shared_data_dir()
    if root is not None:  # "../shared/data" from every block's folder
        (base / "shared").mkdir()
        (base / "shared" / "data").symlink_to(root, target_is_directory=True)
    blocks = dict(_blocks())
    jobs = []
    for where, (_, preamble) in GIVEN.items():
        if where in NEEDS_DATA and not _has_data(where):
            continue
        folder = base / re.sub(r"\W", "_", where)
        folder.mkdir()
        jobs.append((where, str(folder), preamble, blocks[where]))
    spec, result = base / "jobs.json", base / "outcome.json"
    spec.write_text(json.dumps(jobs))
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    if root is not None:
        env["CALIB_METRICS_DATA"] = str(root)
    run = subprocess.run(
        [sys.executable, "-c", RUNNER, str(spec), str(result)],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(result.read_text())


@pytest.mark.parametrize("where", list(GIVEN))
def test_block_runs_as_written(where: str, outcomes: dict[str, str | None]):
    if where not in outcomes:
        names = ", ".join(NEEDS_DATA[where])
        pytest.skip(f"{where} reads ../shared/data ({names}), which is not here")
    assert outcomes[where] is None, f"{where} failed:\n{outcomes[where]}"
