"""The programs matplotlib runs to write a figure (a LaTeX, dvipng, Ghostscript, Pillow's
encoders): what a figure will need that this machine lacks, said before any work, and
whether a ``savefig`` failure came from them or the file system (a write that failed)
rather than from drawing (a bug, which stays a traceback).

Used by the command line's outputs (``--plot``, ``--html``) and by the HTML report's
figures; matplotlib is imported only when a figure is checked.
"""

from __future__ import annotations

import contextlib
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


def failed_to_write(err: BaseException) -> bool:
    """Whether a ``savefig`` failure is the writing's, not the drawing's: the file system
    or Pillow's encoders (OSError), or an external program (its CalledProcessError, pgf's
    LatexError, and the RuntimeError that texmanager and pgf raise from either).

    Example:
        >>> failed_to_write(OSError(28, "No space left on device"))
        True
        >>> failed_to_write(AttributeError("'NoneType' object has no attribute 'x'"))
        False
    """
    if isinstance(err, OSError | subprocess.CalledProcessError):
        return True
    if type(err).__name__ == "LatexError" and type(err).__module__.startswith("matplotlib"):
        return True
    # texmanager raises "... from None" on a failed run: the run's error is the context.
    source = err.__cause__ or err.__context__
    return isinstance(err, RuntimeError) and isinstance(
        source, OSError | subprocess.CalledProcessError
    )


@contextlib.contextmanager
def figure_write_failures() -> Iterator[None]:
    """Inside this block, a ``savefig`` failure of the writing (:func:`failed_to_write`)
    is an OSError whose message names its type, chained to it; any other (a drawing bug)
    goes by unchanged.

    Example:
        >>> import subprocess
        >>> with figure_write_failures():
        ...     raise subprocess.CalledProcessError(1, ["latex"])
        Traceback (most recent call last):
        OSError: CalledProcessError: Command '['latex']' returned non-zero exit status 1.
    """
    try:
        yield
    except OSError:
        raise
    except Exception as err:
        if not failed_to_write(err):
            raise
        said = " ".join(str(err).split())
        raise OSError(f"{type(err).__name__}: {said}" if said else type(err).__name__) from err
