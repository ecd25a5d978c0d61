"""Characters that HTML does not allow (a label "ctrl\\x01x" read from a file) reach the
page as visible escapes, in its tables and its figures' SVG alike: they had been written
raw, which makes the document invalid (and matplotlib warned of missing glyphs)."""

from __future__ import annotations

import re
import warnings

import matplotlib

matplotlib.use("Agg")

import torch

from calib_metrics.functional import brier_decomposition, calibration_error_ci
from calib_metrics.report import Measures, evaluate_page

NOT_HTML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _page(file: str, labels: list[str]) -> str:
    """The evaluate page of 400 pairs named ``file``, with these labels (each the pairs')."""
    q = torch.rand(400, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    y = (q > 0.5).double()
    r = calibration_error_ci(q, y, bin_size=40, n_samples=20)
    summary = {"file": file, "n": 400, "binning": "adaptive", "bin_size": 40,
               "norm": "l2", "debias": True, "interval": "pairs", "confidence": 0.95,
               "method": "normal", "samples": 20, "groups": None}  # fmt: skip
    with warnings.catch_warnings():  # the figures draw them as escapes: no missing glyph
        warnings.simplefilter("error")
        measures = Measures(brier_decomposition(q, y))
        return evaluate_page(summary, r, measures, per_label=dict.fromkeys(labels, r))


def test_control_characters_in_labels_and_file_names_are_made_visible() -> None:
    page = _page("a\x02.csv", ["ctrl\x01x", "del\x7fc1\x85"])
    assert not NOT_HTML.search(page)
    assert "<td>ctrl\\x01x</td>" in page and "<td>del\\x7fc1\\x85</td>" in page
    assert "<h1>Calibration report: a\\x02.csv</h1>" in page


def test_a_tab_or_carriage_return_is_written_as_an_escape_everywhere(tmp_path, capsys) -> None:
    # HTML allows them, but no font draws them: a tab in a label had made matplotlib warn
    # "Glyph 9 missing from font" on the command's stderr, and the page showed a space.
    from calib_metrics.cli import main

    g = torch.Generator().manual_seed(0)
    q = torch.rand(400, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    rows = [f'{p!r},{int(t)},"t\tab{i % 2}\rx"' for i, (p, t) in enumerate(zip(q.tolist(), y))]
    path = tmp_path / "tab\there.csv"
    path.write_text("prob,label,tag\n" + "\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "tab.html"
    argv = [str(path), "--label", "tag", "--samples", "20", "--html", str(out)]
    assert main(["evaluate", *argv, "--plot", str(tmp_path / "tab.png")]) == 0
    printed, err = capsys.readouterr()
    assert "Glyph" not in err and "warning" not in err, err
    assert "  t\\tab0\\rx: CalibErr" in printed and "tab\\there.csv: N = 400" in printed
    page = out.read_text(encoding="utf-8")
    assert "\t" not in page and "\r" not in page
    assert "<td>t\\tab0\\rx</td>" in page  # the per-label table
    chart = page[page.index('id="per-label-chart"') :]
    assert ">t\\tab1\\rx</text>" in chart[: chart.index("</svg>")]  # its tick, drawn as text
    assert "<h1>Calibration report: " in page and "tab\\there.csv</h1>" in page


def test_invisible_format_characters_are_made_visible() -> None:
    """A bidi override draws "\\u202eBREV" as "VERB", so two labels could pass for one; the
    zero-width space, word joiner, byte-order mark and soft hyphen hide in a label alike.
    They had reached the page and its figures raw."""
    page = _page("rtl\u202egnp.csv", ["\u202eBREV", "zero\u200bwidth", "soft\xadhy\ufeff\u2066"])
    for hidden in "\u202e\u200b\xad\ufeff\u2066":
        assert hidden not in page
    assert "<td>\\u202eBREV</td>" in page and "<td>zero\\u200bwidth</td>" in page
    assert "<td>soft\\xadhy\\ufeff\\u2066</td>" in page
    assert "rtl\\u202egnp.csv</h1>" in page


def test_marks_that_text_needs_are_kept() -> None:
    """Hebrew and Arabic labels carry directional marks, Mongolian its vowel separator,
    emoji and Persian the zero-width joiners: they are text, not hidden controls."""
    from calib_metrics.wording import visible_controls

    for text in ("\u05e9\u05dc\u05d5\u05dd\u200f", "\u0627\u061c", "\u1820\u180e\u1821",
                 "\U0001f469\u200d\U0001f4bb", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
                 "\u200eLTR"):  # fmt: skip
        assert visible_controls(text) == text


def test_a_backslash_that_reads_as_an_escape_is_doubled(tmp_path, capsys) -> None:
    """The four characters ``a\\tb`` had been shown as the label holding a tab is, in the
    text and on the page alike (two labels passing for one); a backslash that reads as
    no escape (``C:\\data``) stays as typed."""
    from calib_metrics.cli import main

    g = torch.Generator().manual_seed(0)
    q = torch.rand(600, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    tags = ["a\\tb", "a\tb", "C:\\data"]
    rows = [f'{p!r},{int(t)},"{tags[i % 3]}"' for i, (p, t) in enumerate(zip(q.tolist(), y))]
    path = tmp_path / "tags.csv"
    path.write_text("prob,label,tag\n" + "\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "tags.html"
    argv = ["evaluate", str(path), "--label", "tag", "--samples", "20", "--html", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "  a\\\\tb: CalibErr" in printed and "  a\\tb: CalibErr" in printed
    assert "  C:\\data: CalibErr" in printed
    table = out.read_text(encoding="utf-8")
    assert "<td>a\\\\tb</td>" in table and "<td>a\\tb</td>" in table
    assert "<td>C:\\data</td>" in table


def test_the_page_s_command_names_the_file_as_typed(tmp_path, capsys) -> None:
    """Every text shows a backslash that reads as an escape doubled (a file's name as a
    label is, in the text, the page and the figures alike), but the page's command is
    there to be pasted: doubled, it had named another file (``'run\\\\temp.csv'``)."""
    import shlex

    from calib_metrics.cli import main

    g = torch.Generator().manual_seed(0)
    q = torch.rand(300, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g)
    path = tmp_path / "run\\temp.csv"
    rows = "".join(f"{p!r},{int(t)}\n" for p, t in zip(q.tolist(), y.tolist()))
    path.write_text("prob,label\n" + rows)
    out = tmp_path / "run\\temp.html"
    assert main(["evaluate", str(path), "--samples", "20", "--html", str(out)]) == 0
    shown = str(path).replace("\\", "\\\\")
    assert f"{shown}: N = 300 pairs" in capsys.readouterr().out
    page = out.read_text(encoding="utf-8")
    assert f"<h1>Calibration report: {shown}</h1>" in page
    command = re.search(r"Command: <code>(.*?)</code>", page)[1]
    assert str(path) in shlex.split(command.replace("&#x27;", "'"))
