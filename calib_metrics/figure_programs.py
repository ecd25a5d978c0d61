"""The programs matplotlib runs to write a figure (a LaTeX, dvipng, Ghostscript, Pillow's
encoders): what a figure will need that this machine lacks, said before any work, and
whether a ``savefig`` failure came from them or the file system (a write that failed)
rather than from drawing (a bug, which stays a traceback).

Used by the command line's outputs (``--plot``, ``--html``) and by the HTML report's
figures; matplotlib is imported only when a figure is checked.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator

# Formats matplotlib writes through Agg, whose usetex text is rasterised by dvipng.
_RASTER = frozenset({"png", "jpg", "jpeg", "tif", "tiff", "webp", "avif", "raw", "rgba"})


def missing_for_figure(suffix: str) -> str | None:
    """What writing a ``suffix`` figure under the current rcParams needs beyond matplotlib
    and this machine lacks, said as a reason to refuse it; None when nothing is missing.

    Of matplotlib's formats, .pgf runs a LaTeX (``rcParams["pgf.texsystem"]``) to measure
    its text, and .webp and .avif need a Pillow built with their encoders; with
    ``text.usetex`` on (a matplotlibrc), every format sets its text with ``latex``, and
    the raster ones run ``dvipng``, .ps and .eps ``dvips`` and Ghostscript. Without this,
    the missing program was found by ``savefig`` after all the computing.

    Example:
        >>> missing_for_figure("svg") is None  # matplotlib's defaults: nothing more
        True
    """
    import matplotlib

    if suffix == "pgf":
        tex = matplotlib.rcParams["pgf.texsystem"]
        if shutil.which(tex) is None:
            return (
                f"matplotlib writes '.pgf' figures with {tex} (rcParams['pgf.texsystem']), "
                "which is not installed; use .png, .pdf or .svg"
            )
    elif matplotlib.rcParams["text.usetex"]:
        lacking = [program for program in _usetex_programs(suffix) if shutil.which(program) is None]
        if lacking:
            which = "which is" if len(lacking) == 1 else "which are"
            return (
                f"figures set their text with {' and '.join(lacking)} (rcParams['text.usetex'] "
                f"is on), {which} not installed; turn text.usetex off in your matplotlibrc"
            )
    if suffix in ("webp", "avif"):
        from PIL import features

        if not features.check(suffix):
            return (
                f"matplotlib writes '.{suffix}' figures with Pillow's {suffix} encoder, which "
                "this Pillow lacks; use .png, .pdf or .svg"
            )
    return None


def _usetex_programs(suffix: str) -> list[str]:
    """The programs usetex text runs in a ``suffix`` figure (.pgf sets its own text)."""
    if suffix in _RASTER:
        return ["latex", "dvipng"]
    if suffix in ("ps", "eps"):
        return ["latex", "dvips", "gs"]
    return ["latex"]


# Where matplotlib runs the programs and reads what they wrote: an error raised there is
# theirs (or the TeX installation's: dviread's missing Type-1 font), not the drawing's.
_PROGRAM_MODULES = frozenset({"matplotlib.texmanager", "matplotlib.dviread"})
# cbook's runner of latex (.ps's psfrag), dvips and gs raises a RuntimeError of its own.
_PROGRAM_FUNCTIONS = frozenset({("matplotlib.cbook", "_check_and_log_subprocess")})


def failed_to_write(err: BaseException) -> bool:
    """Whether a ``savefig`` failure is the writing's, not the drawing's: the file system
    or Pillow's encoders (OSError), or an external program (its CalledProcessError, pgf's
    LatexError, a RuntimeError raised from either, pgf's ValueError raised from its
    LatexError, and what matplotlib's texmanager, dviread and subprocess runner raise
    themselves).

    The last are told by where they were raised (matplotlib's modules that run the
    programs), not by their messages; an error raised anywhere else (a bug in drawing
    code, the library's or matplotlib's) stays a traceback.

    Example:
        >>> failed_to_write(OSError(28, "No space left on device"))
        True
        >>> failed_to_write(AttributeError("'NoneType' object has no attribute 'x'"))
        False
    """
    if isinstance(err, OSError | subprocess.CalledProcessError) or _is_latex_error(err):
        return True
    if isinstance(err, RuntimeError | ValueError | LookupError) and _running_programs(err):
        return True
    if isinstance(err, ValueError) and _is_latex_error(err.__cause__):
        return True  # pgf's, measuring text
    # texmanager raises "... from None" on a failed run: the run's error is the context.
    source = err.__cause__ or err.__context__
    return isinstance(err, RuntimeError) and isinstance(
        source, OSError | subprocess.CalledProcessError
    )


def _is_latex_error(err: BaseException | None) -> bool:
    return type(err).__name__ == "LatexError" and type(err).__module__.startswith("matplotlib")


def _raised_in(err: BaseException):
    """The frame that raised ``err`` (its traceback's innermost); None when it has none."""
    tb = err.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame


def _running_programs(err: BaseException) -> bool:
    frame = _raised_in(err)
    if frame is None:
        return False
    module = frame.f_globals.get("__name__", "")
    return module in _PROGRAM_MODULES or (module, frame.f_code.co_name) in _PROGRAM_FUNCTIONS


def _program_failed(err: BaseException) -> str | None:
    """'<program> exited with status <n>' for a failure of a program matplotlib ran (its
    CalledProcessError in the chain, or cbook's runner's command); None for another."""
    for link in _chain(err):
        if isinstance(link, subprocess.CalledProcessError):
            return _exited(link.cmd, link.returncode)
    frame = _raised_in(err)
    if frame is not None and frame.f_code.co_name == "_check_and_log_subprocess":
        run = frame.f_locals.get("proc")
        if isinstance(run, subprocess.CompletedProcess):
            return _exited(run.args, run.returncode)
    return None


def _exited(command, status: int) -> str:
    program = command if isinstance(command, str | os.PathLike) else command[0]
    return f"{os.path.basename(program)} exited with status {status}"


def _first_line(err: BaseException) -> str:
    return next((line.strip() for line in str(err).splitlines() if line.strip()), "")


@contextlib.contextmanager
def figure_write_failures() -> Iterator[None]:
    """Inside this block, a ``savefig`` failure of the writing (:func:`failed_to_write`)
    is an OSError whose short message names its type, chained to it; any other (a drawing
    bug) goes by unchanged. A program's failure is said by its name and exit status (its
    command and output, kilobytes of them, stay in the chained error).

    Example:
        >>> import subprocess
        >>> with figure_write_failures():
        ...     raise subprocess.CalledProcessError(1, ["/usr/bin/latex", "x.tex"])
        Traceback (most recent call last):
        OSError: CalledProcessError: latex exited with status 1 (...)
    """
    try:
        yield
    except OSError:
        raise
    except Exception as err:
        if not failed_to_write(err):
            raise
        raise OSError(_short(err)) from err


def _short(err: BaseException) -> str:
    """One short line for a write-side failure of ``savefig``: a program's name, exit
    status, what it failed on where LaTeX says (the label and LaTeX's error line) and what
    ran it."""
    failed = _program_failed(err)
    if failed is None:
        said = _first_line(err)
    else:
        said = f"{failed}{_latex_detail(err)} ({_program_hint(failed.split()[0])})"
    return f"{type(err).__name__}: {said}" if said else type(err).__name__


def _latex_detail(err: BaseException) -> str:
    """'' or ' on <label>: <LaTeX's first error line>', from the chain's messages (the
    whole command and output are kilobytes: only these two lines say what to fix)."""
    label = error = ""
    for text in _chain_texts(err):
        lines = [line.strip() for line in text.splitlines()]
        for i, line in enumerate(lines):
            if not label and line.endswith("the following string:") and i + 1 < len(lines):
                label = lines[i + 1]
                if label[:2] in ("b'", 'b"') and label[-1:] == label[1]:  # bytes' repr
                    label = label[2:-1]
            if not error and line.startswith("! "):
                error = line
    parts = [f"on {label[:60]!r}" if label else "", error[:80]]
    return " " + ": ".join(part for part in parts if part) if any(parts) else ""


def _chain_texts(err: BaseException) -> Iterator[str]:
    for link in _chain(err):
        yield str(link)
        output = getattr(link, "output", None) or getattr(link, "stderr", None)
        if isinstance(output, bytes):
            yield output.decode(errors="replace")
        elif isinstance(output, str):
            yield output


def _chain(err: BaseException) -> Iterator[BaseException]:
    """``err`` and the errors it was raised from or during, innermost last."""
    seen: list[BaseException] = []
    link: BaseException | None = err
    while link is not None and link not in seen:  # a chain may loop back
        seen.append(link)
        yield link
        link = link.__cause__ or link.__context__


def _program_hint(program: str) -> str:
    """What ran ``program``, and how to do without it."""
    if program in ("gs", "ps2pdf", "pdftops"):
        return "ghostscript/xpdf, run for .ps/.eps by ps.usedistiller in your matplotlibrc"
    if program in ("xelatex", "lualatex", "pdflatex") and not _usetex():
        return "the LaTeX that draws .pgf figures (pgf.texsystem); .pdf, .svg and .png need none"
    return (
        "a label LaTeX cannot set, or a broken TeX installation; with text.usetex off in "
        "your matplotlibrc, figures need no LaTeX"
    )


def _usetex() -> bool:
    import matplotlib

    return bool(matplotlib.rcParams["text.usetex"])
