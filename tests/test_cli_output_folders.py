"""Output options name what is wrong with them in one line (exit code 2): ``demo --img``
of a missing folder had said "not a folder", ``demo --out`` of a file ended in a raw
"[Errno 17] File exists", and ``--html ""`` was reported as "--html .: is a folder"."""

from __future__ import annotations

import pytest
from cli_runs import one_line_error


def test_demo_img_that_does_not_exist(tmp_path, capsys) -> None:
    line = one_line_error(capsys, "demo", "--out", tmp_path, "--quick", "--img", tmp_path / "no")
    assert line.endswith(f"--img {tmp_path / 'no'}: does not exist (make the folder first)")


def test_demo_img_that_is_a_file(tmp_path, capsys) -> None:
    (tmp_path / "afile").write_text("x")
    line = one_line_error(capsys, "demo", "--out", tmp_path, "--quick", "--img", tmp_path / "afile")
    assert line.endswith(f"--img {tmp_path / 'afile'}: a file, not a folder")


@pytest.mark.parametrize("under", [False, True])
def test_demo_out_that_is_a_file(tmp_path, capsys, under) -> None:
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "sub" if under else tmp_path / "afile"
    line = one_line_error(capsys, "demo", "--out", out, "--quick")
    assert line.startswith(f"calib-metrics: error: --out {out}: ")
    assert line.endswith("a file, not a folder") and "Errno" not in line


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "p.csv", "--html", ""],
        ["evaluate", "p.csv", "--plot", ""],
        ["compare", "p.csv", "--probs-b", "q", "--html", ""],
        ["compare", "p.csv", "--probs-b", "q", "--plot", ""],
        ["recalibrate", "d.csv", "t.csv", "--out", ""],
        ["recalibrate", "d.csv", "t.csv", "--plot", ""],
    ],
)
def test_an_empty_output_path_is_reported_as_given(capsys, argv) -> None:
    option = argv[-2]
    line = one_line_error(capsys, *argv)
    assert f"argument {option}: '' is an empty path: give a file name" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "p.csv", "--plot", "x.png/"],
        ["evaluate", "p.csv", "--plot", "x.png/."],
        ["compare", "p.csv", "--probs-b", "q", "--html", "page.html/"],
        ["recalibrate", "d.csv", "t.csv", "--out", "r.csv/"],
        ["recalibrate", "d.csv", "t.csv", "--plot", "out/.."],
    ],
)
def test_an_output_file_ending_in_a_slash_is_refused(capsys, argv) -> None:
    # Path() drops a trailing slash or "/.": "--plot x.png/" had written the file x.png.
    option, given = argv[-2:]
    line = one_line_error(capsys, *argv)
    assert f"argument {option}: '{given}' names a folder: give a file name" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "p.csv", "--html", "-"],
        ["evaluate", "p.csv", "--plot", "-"],
        ["compare", "p.csv", "--probs-b", "q", "--html", "-"],
        ["compare", "p.csv", "--probs-b", "q", "--plot", "-"],
        ["recalibrate", "d.csv", "t.csv", "--out", "-"],
        ["recalibrate", "d.csv", "t.csv", "--plot", "-"],
        ["demo", "--quick", "--out", "-"],
        ["demo", "--quick", "--img", "-"],
        # Every experiment's --out (options.add_out) had taken "-", to make a folder "-".
        *(
            ["reproduce", name, "--quick", "--data", "no-data", "--out", "-"]
            for name in ("pos", "coref", "events", "sentiment", "twitter-pos", "ner")
        ),
    ],
)
def test_a_dash_for_an_output_is_refused_not_made_a_file(tmp_path, capsys, monkeypatch, argv):
    # "--html -" had written a file named "-" in the current folder. Refused as parsed:
    # before the data (--data names none) are looked for.
    monkeypatch.chdir(tmp_path)
    option = argv[-2]
    line = one_line_error(capsys, *argv)
    kind = "folder" if argv[0] in ("demo", "reproduce") else "file"
    assert f"argument {option}: '-' is not stdout here: give a {kind} name" in line
    # A figure cannot go to --json, which had been named for every file option.
    assert ("or /dev/stdout" in line) == (kind == "file") and "--json" not in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option", ["--out", "--img"])
def test_an_empty_demo_folder_is_reported_as_given(tmp_path, capsys, monkeypatch, option):
    # Path("") is the current folder: demo --out "" had written its results there.
    monkeypatch.chdir(tmp_path)  # where they would go
    argv = ["demo", "--quick", "--out", tmp_path / "out", option, ""]
    line = one_line_error(capsys, *argv)
    assert f"argument {option}: '' is an empty path: give a folder name" in line
    assert list(tmp_path.iterdir()) == []


def test_an_empty_experiment_folder_is_reported_as_given(tmp_path, capsys, monkeypatch):
    # reproduce's --out "" had been taken as the current folder, as demo's had.
    monkeypatch.chdir(tmp_path)
    argv = ["reproduce", "ner", "--quick", "--data", "no-data", "--out", ""]
    line = one_line_error(capsys, *argv)
    assert "argument --out: '' is an empty path: give a folder name" in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["missing", "loop", "under"])
def test_demo_out_through_a_broken_link(tmp_path, capsys, monkeypatch, kind) -> None:
    # A link to nothing passed the check and failed after the work had begun, with a raw
    # "[Errno 17] File exists" from making the folder.
    from calib_metrics.paper import demo

    def never(*args, **kwargs):
        raise AssertionError("the demo ran")

    monkeypatch.setattr(demo, "_settings", never)
    link = tmp_path / "link"
    target = link if kind == "loop" else tmp_path / "missing"
    link.symlink_to(target)
    out = link / "sub" if kind == "under" else link
    line = one_line_error(capsys, "demo", "--out", out, "--quick")
    assert line == (
        f"calib-metrics: error: --out {out}: {link} is a broken link to {target} "
        "(its target is missing, or a loop)"
    )


def test_reproduce_out_a_broken_link_is_refused_before_the_data(tmp_path, capsys) -> None:
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "missing")
    argv = ["reproduce", "ner", "--data", tmp_path / "no-data", "--out", link, "--quick"]
    line = one_line_error(capsys, *argv)
    assert f"--out {link}: {link} is a broken link to {tmp_path / 'missing'}" in line


def test_demo_img_missing_under_an_unwritable_folder_does_not_exist(tmp_path, capsys) -> None:
    # /proc cannot be written: the probe's "cannot be written (No such file or
    # directory)" had been said of a folder that is simply not there.
    line = one_line_error(capsys, "demo", "--out", tmp_path, "--quick", "--img", "/proc/nope")
    assert line == "calib-metrics: error: --img /proc/nope: does not exist (make the folder first)"
