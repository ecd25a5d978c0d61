"""What a figure's failing programs are said as: texmanager's error had been joined whole
into the "one line" (the command and LaTeX's output, kilobytes of it); the failures of
.ps/.eps's runs of latex, dvips and gs (matplotlib's own subprocess runner), of pgf
measuring text, and of dviread missing a Type-1 font had not been told from a drawing bug
and ended the command in a traceback. A bug in drawing code is still one."""

from __future__ import annotations

import logging
import os
import subprocess

import pytest

from calib_metrics.figure_programs import failed_to_write, figure_write_failures


def _said(failure) -> str:
    """The message of the OSError ``failure()`` becomes in figure_write_failures."""
    with pytest.raises(OSError) as caught, figure_write_failures():
        failure()
    return str(caught.value)


@pytest.mark.skipif(os.name != "posix", reason="a shell stands in for latex")
def test_a_latex_failure_is_one_short_line_with_a_hint() -> None:
    from matplotlib.texmanager import TexManager

    def latex_fails() -> None:
        command = ["sh", "-c", "yes '! Undefined control sequence.' | head -n 500; exit 1"]
        TexManager._run_checked_subprocess(command, "a_b")

    said = _said(latex_fails)
    # The label and LaTeX's first error line are what to fix (a first version said neither).
    assert said.startswith(
        "RuntimeError: sh exited with status 1 on 'a_b': ! Undefined control sequence. "
        "(a label LaTeX cannot set"
    ), said
    assert "\n" not in said and said.count("Undefined control") == 1 and len(said) < 300, said


def test_ghostscript_s_failure_names_what_ran_it() -> None:
    # The LaTeX hint had gone out for gs too, with usetex off and no LaTeX involved.
    def ghostscript_fails() -> None:
        raise subprocess.CalledProcessError(1, ["/usr/bin/gs", "-sDEVICE=eps2write"])

    said = _said(ghostscript_fails)
    assert said.startswith("CalledProcessError: gs exited with status 1 (ghostscript"), said
    assert "LaTeX" not in said


@pytest.mark.skipif(os.name != "posix", reason="a shell stands in for dvips")
def test_a_program_run_by_matplotlibs_own_runner_is_a_write_failure() -> None:
    """.ps/.eps's latex (psfrag), dvips and gs: a RuntimeError with no cause."""
    from matplotlib import cbook

    def dvips_fails() -> None:
        cbook._check_and_log_subprocess(["sh", "-c", "exit 3"], logging.getLogger("x"))

    assert _said(dvips_fails).startswith("RuntimeError: sh exited with status 3 (")


def test_a_missing_type1_font_is_a_write_failure(tmp_path) -> None:
    from matplotlib import dviread

    fonts = tmp_path / "psfonts.map"
    fonts.write_text("% no fonts\n")

    def font_missing() -> None:
        dviread.PsfontsMap(str(fonts))[b"cmr10"]

    assert _said(font_missing).startswith("LookupError: The font map ")


def test_pgf_measuring_text_that_latex_refuses_is_a_write_failure() -> None:
    from matplotlib.backends.backend_pgf import LatexError

    def measuring_fails() -> None:
        try:
            raise LatexError("LaTeX process halted", "! Undefined control sequence.")
        except LatexError as err:
            raise ValueError("Error measuring a_b\nLaTeX Output:\n! Undefined") from err

    assert _said(measuring_fails) == "ValueError: Error measuring a_b"


def test_errors_raised_outside_the_programs_stay_drawing_bugs() -> None:
    def raised_here(kind: type[Exception], cause: BaseException | None = None):
        try:
            raise kind("a bug") from cause
        except kind as err:
            return err

    assert not failed_to_write(raised_here(ValueError))
    assert not failed_to_write(raised_here(LookupError))
    assert not failed_to_write(raised_here(RuntimeError))
    assert not failed_to_write(raised_here(ValueError, OSError(5, "Input/output error")))
    assert failed_to_write(raised_here(RuntimeError, subprocess.CalledProcessError(1, "x")))
