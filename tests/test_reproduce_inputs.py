"""``calib-metrics reproduce`` on bad data, model files and options: one line and exit 2
before any long work, never a traceback, and no empty output folder left behind (what a
new user found on 2026-11-29)."""

from __future__ import annotations

import gzip
import io
import math

import pytest
import torch

from calib_metrics import cli, plot
from calib_metrics.functional import compare_calibration
from calib_metrics.models.coref_ranker import AntecedentRanker
from calib_metrics.paper.coref_conllu import read_coref_documents
from calib_metrics.paper.countries import COUNTRIES_FILE
from calib_metrics.paper.tagging import iter_tagged_sentences
from calib_metrics.paper.tweets import stratified_split


def one_line_error(capsys, *argv) -> str:
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    assert code == 2, (code, out, err)
    lines = [line for line in err.splitlines() if line.startswith("calib-metrics: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _garbage(folder, names) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        with gzip.open(folder / name, "wt") as f:
            f.write("<html>not CoNLL-U</html>\n")


def test_the_conllu_readers_name_a_file_that_is_not_conllu(tmp_path) -> None:
    path = tmp_path / "a.conllu.gz"
    _garbage(tmp_path, ["a.conllu.gz"])
    with pytest.raises(ValueError, match=rf"^{path}: not a readable CoNLL-U file"):
        list(iter_tagged_sentences(path))
    with pytest.raises(ValueError, match=rf"^{path}: not a readable CoNLL-U file"):
        read_coref_documents(path)
    with pytest.raises(ValueError, match=r"^stream: not a readable CoNLL-U file"):
        read_coref_documents(io.StringIO("<html>\n"))


@pytest.mark.parametrize(
    ("command", "folder", "prefix"),
    [
        ("pos", "ud-english-ewt", "en_ewt-ud"),
        ("coref", "gum-ontogum-coref", "ontogum"),
        ("events", "ud-english-gum", "en_gum-ud"),
    ],
)
def test_reproduce_names_bad_conllu_data(tmp_path, capsys, command, folder, prefix) -> None:
    names = [f"{prefix}-{split}.conllu.gz" for split in ("train", "dev", "test")]
    _garbage(tmp_path / "data" / folder, names)
    out = tmp_path / "out"
    # events reads a country lexicon first: a one-country one, so that no shared data is needed
    lexicon = tmp_path / "lexicon"
    lexicon.mkdir()
    with gzip.open(lexicon / COUNTRIES_FILE, "wt") as f:
        f.write("FRANCE_ [FRA]\n+FRENCH_\n")
    extra = ["--lexicon", lexicon] if command == "events" else []
    err = one_line_error(
        capsys, "reproduce", command, "--quick", "--data", tmp_path / "data", "--out", out, *extra
    )
    assert "not a readable CoNLL-U file" in err and ".conllu.gz" in err
    assert not out.exists()  # nothing made before the data were read


def test_a_file_that_is_not_a_model_is_named(tmp_path, capsys) -> None:
    text = tmp_path / "README.md"
    text.write_text("# not a model\n")
    with pytest.raises(ValueError, match=r"README\.md cannot be read as a saved model") as raised:
        AntecedentRanker.load(text)
    assert "weights_only" not in str(raised.value)
    torch.save({"other": 1}, tmp_path / "other.pt")
    data = tmp_path / "data" / "ud-english-ewt"
    data.mkdir(parents=True)
    row = "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n\n"
    for split in ("train", "dev", "test"):
        with gzip.open(data / f"en_ewt-ud-{split}.conllu.gz", "wt") as f:
            f.write(row * 3)
    models = ((text, "cannot be read as a saved model"), (tmp_path / "other.pt", "--save-models"))
    for model, named in models:
        err = one_line_error(capsys, "reproduce", "pos", "--quick", "--data", tmp_path / "data",
                             "--load-models", model, "--out", tmp_path / "out")  # fmt: skip
        assert named in err and "weights_only" not in err
        assert not (tmp_path / "out").exists()  # a refused model leaves no empty folder


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["coref", "--threads", "-1"], "--threads must be an integer >= 0, got -1"),
        (["twitter-pos", "--ewt-train", "-1"], "--ewt-train must be an integer >= 0, got -1"),
    ],
)
def test_negative_counts_are_refused_before_any_work(tmp_path, capsys, argv, named) -> None:
    err = one_line_error(capsys, "reproduce", *argv, "--data", tmp_path, "--out", tmp_path / "o")
    assert named in err


def test_an_out_path_that_is_a_file_is_refused_first(tmp_path, capsys) -> None:
    out = tmp_path / "results.json"
    out.write_text("{}")
    err = one_line_error(capsys, "reproduce", "sentiment", "--data", tmp_path, "--out", out)
    assert f"--out {out}: a file, not a folder" in err


@pytest.mark.parametrize("fractions", [(0.6, 0.2, math.nan), (0.6, math.nan, 0.2)])
def test_a_split_with_nan_is_refused(fractions) -> None:
    with pytest.raises(ValueError, match="fractions must be >= 2 positive numbers summing to 1"):
        stratified_split(torch.tensor([0, 1] * 50), fractions, torch.Generator().manual_seed(0))


def test_error_curve_of_nan_errors_on_a_log_axis_saves(tmp_path) -> None:
    nan = [math.nan, math.nan]
    fig, _ = plot.error_curve([10, 100], nan, nan, nan, logx=True)
    fig.savefig(tmp_path / "curve.png")  # raised 'Data cannot be log-scaled'


def test_a_difference_without_interval_is_not_drawn_as_holding_0() -> None:
    q, y = torch.tensor([0.1, 0.9, 0.5]), torch.tensor([0.0, 1.0, 1.0])
    with pytest.warns(UserWarning, match="resampling units"):
        tiny = compare_calibration(q, q**2, y, n_samples=50)
    fig, _ = plot.per_label_errors({"tiny": tiny}, names=("a", "b"))
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "no interval (too few units)" in legend
    # each label's own interval: a Holm or BH count beside the chart may call fewer
    assert "excludes 0 (this label alone, uncorrected)" in legend


def test_a_missing_model_file_is_named_before_the_data_are_read(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    err = one_line_error(capsys, "reproduce", "pos", "--quick", "--data", tmp_path,
                         "--load-models", tmp_path / "none.pt", "--out", out)  # fmt: skip
    assert f"--load-models {tmp_path / 'none.pt'}: no such file" in err
    assert not out.exists()


def test_error_curve_keeps_the_callers_axes_and_needs_a_positive_x() -> None:
    _, ax = plot.error_curve([1, 1000], [0.1, 0.2], logx=True)
    limits = ax.get_xlim()
    plot.error_curve([10, 100], [math.nan, math.nan], logx=True, ax=ax)
    assert ax.get_xlim() == limits  # had been reset to (10, 100)
    with pytest.raises(ValueError, match="logx=True needs x > 0, got 0"):
        plot.error_curve([0, -1], [0.1, 0.2], logx=True)


def test_the_line_readers_name_a_file_they_cannot_read(tmp_path) -> None:
    from calib_metrics.paper.ark_twitter import read_ark_conll
    from calib_metrics.paper.gum_entities import read_gum_entities

    broken = tmp_path / "en_gum-ud-train.conllu.gz"
    broken.write_bytes(b"plain text, not gzip")
    with pytest.raises(ValueError, match=rf"^{broken}: not readable text"):
        read_gum_entities(broken)
    latin = tmp_path / "tweets.conll"
    latin.write_bytes("caf\xe9\tN\n".encode("latin-1"))
    with pytest.raises(ValueError, match=rf"^{latin}: not readable text"):
        read_ark_conll(latin)


def test_the_readers_name_a_folder_given_for_a_file(tmp_path) -> None:
    """A data set's folder had been "coreference file not found", though it exists."""
    from calib_metrics.paper.ark_twitter import read_ark_conll
    from calib_metrics.paper.coref_conllu import read_coref_documents, split_ids
    from calib_metrics.paper.gum_entities import read_gum_entities

    for read in (read_coref_documents, split_ids, read_ark_conll, read_gum_entities):
        with pytest.raises(IsADirectoryError, match="a folder, not a file"):
            read(tmp_path)
        with pytest.raises(FileNotFoundError, match="not found"):
            read(tmp_path / "none.conllu")
