"""What the page says where its reader never sees the terminal: the command's warnings,
a multiclass comparison's pairs beside its items, and the groups a label is called on."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from test_report import Page, run


def _calibrated_pairs(path: Path, n: int) -> Path:
    """A CSV of ``n`` calibrated (prob, label) pairs."""
    g = torch.Generator().manual_seed(0)
    q = torch.rand(n, generator=g, dtype=torch.float64)
    y = torch.bernoulli(q, generator=g).long()
    path.write_text("prob,label\n" + "".join(f"{a:.6f},{b}\n" for a, b in zip(q, y)))
    return path


def test_the_page_carries_the_commands_warnings(tmp_path: Path, capsys) -> None:
    """Three pairs make one bin, whose error sees only the overall means: the terminal said
    so, the page showed CalibErr 0.0000 alone."""
    data = tmp_path / "tiny.csv"
    data.write_text("prob,label\n0.9,1\n0.2,0\n0.6,0\n")
    out = tmp_path / "tiny.html"
    code, _, err = run(capsys, "evaluate", data, "--html", out)
    assert code == 0
    said = [line.removeprefix("calib-metrics: warning: ") for line in err.splitlines()]
    assert any("only 1 bin from 3 pairs" in line for line in said)
    page = out.read_text()
    assert '<section id="warnings">' in page
    items = page.split('<section id="warnings">')[1].split("</section>")[0]
    assert items.count("<li>") == len(said)
    assert all(line.replace("'", "&#x27;") in items for line in said)


def test_a_page_of_no_warning_has_no_warnings_section(tmp_path: Path, capsys) -> None:
    data = _calibrated_pairs(tmp_path / "fine.csv", 2000)
    out = tmp_path / "fine.html"
    code, _, err = run(capsys, "evaluate", data, "--samples", "200", "--html", out)
    assert code == 0 and err == ""
    assert 'id="warnings"' not in out.read_text()


def test_a_multiclass_comparison_states_its_pairs(tmp_path: Path, capsys) -> None:
    """600 items of 4 classes are 2,400 one-vs-rest pairs, whose ⌈√N⌉ the bins follow:
    the page and the text had said "N 600" beside bins of 2,400 pairs."""
    rng = np.random.default_rng(0)
    target = rng.integers(0, 4, 600)
    files = []
    for name in ("a", "b"):
        files.append(tmp_path / f"{name}.npz")
        np.savez(files[-1], probs=rng.dirichlet(np.ones(4), size=600), target=target)
    out = tmp_path / "mc.html"
    code, text, err = run(capsys, "compare", *files, "--samples", "100", "--html", out)
    assert code == 0, err
    assert text.startswith("N = 600 items (2400 one-vs-rest pairs, the N of ⌈√N⌉), ")
    assert Page(out.read_text()).value("n") == "600 (2400 one-vs-rest pairs, the N of ⌈√N⌉)"
    code, text, _ = run(capsys, "compare", *files, "--samples", "100", "--json")
    assert json.loads(text)["pairs"] == 2400
    code, text, _ = run(capsys, "compare", *files, "--samples", "100", "--mode", "top_label")
    assert text.startswith("N = 600 items, ")


def test_a_grouped_per_label_table_shows_each_labels_groups(tmp_path: Path, capsys) -> None:
    """A label of 450 pairs "too small to call: fewer than 50 groups" had shown its pairs
    only; its 45 groups were in the JSON alone."""
    g = torch.Generator().manual_seed(1)
    q = torch.rand(900, generator=g, dtype=torch.float64) * 0.9 + 0.05
    y = torch.bernoulli(q, generator=g).long()
    rows = [
        f"{a:.6f},{a**1.3:.6f},{b},{'XY'[i % 2]},s{i // 10}"
        for i, (a, b) in enumerate(zip(q.tolist(), y.tolist()))
    ]
    data = tmp_path / "grouped.csv"
    data.write_text("q_a,q_b,label,tag,sentence\n" + "\n".join(rows) + "\n")
    out = tmp_path / "grouped.html"
    argv = ["compare", data, "--probs", "q_a", "--probs-b", "q_b", "--label", "tag"]
    code, text, err = run(capsys, *argv, "--groups", "sentence", "--samples", "100", "--json",
                          "--html", out)  # fmt: skip
    assert code == 0, err
    units = {k: r["units"] for k, r in json.loads(text)["per_label"].items()}
    assert units == {"X": 90, "Y": 90}
    table = out.read_text().split('id="per-label-table"')[1].split("</table>")[0]
    assert "<th>groups</th>" in table
    for label, count in units.items():
        assert f'<td>{label}</td><td class="num">450</td><td class="num">{count}</td>' in table


def test_the_page_carries_what_drawing_it_says(tmp_path: Path, capsys, monkeypatch) -> None:
    """Warnings said while the page's figures are drawn (a font without a label's glyphs)
    had been left off the page, which read the list before drawing."""
    import warnings

    from calib_metrics import report

    original = report.figure_svg

    def saying(fig, name):
        warnings.warn(f"drawing {name} said this", UserWarning, stacklevel=2)
        return original(fig, name)

    monkeypatch.setattr(report, "figure_svg", saying)
    data = _calibrated_pairs(tmp_path / "pairs.csv", 500)
    out = tmp_path / "page.html"
    code, _, err = run(capsys, "evaluate", data, "--samples", "100", "--html", out)
    assert code == 0 and "drawing reliability said this" in err
    warned = out.read_text().split('<section id="warnings">')[1].split("</section>")[0]
    assert "<li>drawing reliability said this</li>" in warned


def test_the_settings_hold_no_warning_lines(tmp_path: Path, capsys) -> None:
    """The command's list of warnings had been read as a setting, on the page and in the
    JSON alike."""
    data = tmp_path / "tiny.csv"
    data.write_text("prob,label\n0.9,1\n0.2,0\n0.6,0\n")
    out = tmp_path / "tiny.html"
    code, text, _ = run(capsys, "evaluate", data, "--json", "--html", out)
    assert code == 0 and "warning_lines" not in json.loads(text)["settings"]
    assert "warning_lines" not in out.read_text()


def test_evaluate_counts_each_labels_groups(tmp_path: Path, capsys) -> None:
    """evaluate's per-label table, text and JSON had shown a label's pairs alone where its
    interval resampled groups ("fewer than 10 resampled groups" beside 45 pairs)."""
    g = torch.Generator().manual_seed(2)
    q = torch.rand(600, generator=g, dtype=torch.float64) * 0.9 + 0.05
    y = torch.bernoulli(q, generator=g).long()
    # Tag Z sits in the first 4 sentences only; X and Y share the other 56.
    tags = ["Z" if i < 40 else "XY"[i % 2] for i in range(600)]
    rows = [f"{a:.6f},{b},{t},s{i // 10}" for i, (a, b, t) in enumerate(zip(q, y, tags))]
    data = tmp_path / "grouped.csv"
    data.write_text("prob,label,tag,sentence\n" + "\n".join(rows) + "\n")
    out = tmp_path / "grouped.html"
    argv = ["evaluate", data, "--label", "tag", "--groups", "sentence", "--samples", "100"]
    code, text, err = run(capsys, *argv, "--json", "--html", out)
    assert code == 0, err
    per_label = json.loads(text)["per_label"]
    assert {k: (r["n"], r["groups"]) for k, r in per_label.items()} == {
        "X": (280, 56), "Y": (280, 56), "Z": (40, 4)
    }  # fmt: skip
    table = out.read_text().split('id="per-label-table"')[1].split("</table>")[0]
    assert "<th>groups</th>" in table
    for label, (n, groups) in {"X": (280, 56), "Z": (40, 4)}.items():
        assert f'<td>{label}</td><td class="num">{n}</td><td class="num">{groups}</td>' in table
    code, text, _ = run(capsys, *argv)
    assert "  Z: CalibErr" in text and "40 pairs in 4 groups" in text
    # Pairs resampled: no groups counted anywhere.
    code, text, _ = run(capsys, *argv[:4], "--samples", "100", "--json", "--html", out)
    assert all("groups" not in r for r in json.loads(text)["per_label"].values())
    table = out.read_text().split('id="per-label-table"')[1].split("</table>")[0]
    assert "<th>groups</th>" not in table and "<th>CalibErr</th>" in table


def test_a_classwise_page_counts_each_classes_groups(tmp_path: Path, capsys) -> None:
    rng = np.random.default_rng(0)
    path = tmp_path / "mc.npz"
    np.savez(path, probs=rng.dirichlet(np.ones(3), size=300),
             target=rng.integers(0, 3, 300), groups=np.arange(300) // 5)  # fmt: skip
    out = tmp_path / "mc.html"
    code, text, err = run(capsys, "evaluate", path, "--mode", "classwise", "--groups", "groups",
                          "--samples", "50", "--json", "--html", out)  # fmt: skip
    assert code == 0, err
    assert {r["groups"] for r in json.loads(text)["per_label"].values()} == {60}
    table = out.read_text().split('id="per-label-table"')[1].split("</table>")[0]
    assert table.count('<td class="num">60</td>') == 3
