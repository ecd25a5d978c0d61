"""The command line's output edge: output paths and folders refused before any work
(a folder, a missing or read-only place, an input file, two options naming one file, a
figure suffix matplotlib does not write or cannot write on this machine, a CSV file
named as another format), an output that fails while it is written named as those are, a
run's outputs put in place all or none, and results turned into JSON values.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import math
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple

import torch


def check_output_path(path: Path | None, option: str, inputs: Sequence[Path | None] = ()) -> None:
    """Refuse, before any work, an output path that is a folder, whose folder is missing,
    or that is one of the command's ``inputs`` (writing it would destroy what was read).

    Example:
        >>> check_output_path(Path("/no/such/folder/report.html"), "--html")
        Traceback (most recent call last):
        ValueError: --html /no/such/folder/report.html: /no/such/folder does not exist
    """
    if path is None:
        return
    if path.is_dir():
        raise ValueError(f"{option} {path}: is a folder; give a file name in it")
    for given in inputs:
        if given is not None and _same_file(path, given):
            raise ValueError(
                f"{option} {path}: is the input file {given}; writing it would overwrite "
                "what the command reads: give another file name"
            )
    folder = path.parent
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ValueError(f"{option} {path}: {folder} {what}")
    _check_writable(path, option)


def _check_writable(path: Path, option: str) -> None:
    """Open ``path`` for appending (nothing written; a file made here is removed), so
    that a place the command cannot write (a read-only or virtual file system, an
    immutable file) is refused before the work rather than after it."""
    target, existed = _landing(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as err:
        raise _unwritable(path, option, err) from None
    if not existed:
        target.unlink(missing_ok=True)


def _landing(path: Path) -> tuple[Path, bool]:
    """The file a write to ``path`` lands in, and whether it is there already: through a
    symlink (dangling or not), its target, as open() follows it. A dangling link is the
    user's, to a file still to be made: the link is never removed, only a file made at
    its target."""
    target = Path(os.path.realpath(path))
    return target, os.path.lexists(target)


def check_writable_folder(path: Path, option: str) -> None:
    """Refuse, before any work, an output folder the command cannot write into: a file
    is made there and removed at once (in the nearest existing folder above, for a folder
    still to be made). A path with a file in the way is left to the caller's own check.

    Example:
        >>> check_writable_folder(Path("/proc/out"), "--out")
        Traceback (most recent call last):
        ValueError: --out /proc/out: cannot be written (...)
    """
    # An existing read-only folder had been found only by the first figure, after the
    # whole run (ner: 24 s; demo: minutes).
    nearest = next(p for p in (path.absolute(), *path.absolute().parents) if p.exists())
    if not nearest.is_dir():
        return
    try:
        with tempfile.TemporaryFile(dir=nearest):
            pass
    except OSError as err:
        raise _unwritable(path, option, err) from None


def _unwritable(path: Path, option: str, err: OSError) -> ValueError:
    # Pillow's encoder errors are OSErrors with a message but no strerror.
    return ValueError(f"{option} {path}: cannot be written ({err.strerror or _said(err)})")


def _said(err: BaseException) -> str:
    """An exception's message on one line (its type's name when it has none)."""
    return " ".join(str(err).split()) or type(err).__name__


@contextlib.contextmanager
def output_failures(path: Path, option: str) -> Iterator[None]:
    """Inside this block, an OSError (a full disk; a program a figure's savefig runs) is
    the one-line error the checks before the work give, naming the option and the path,
    chained to the failure.

    Example:
        >>> with output_failures(Path("page.html"), "--html"):
        ...     raise OSError(28, "No space left on device")
        Traceback (most recent call last):
        ValueError: --html page.html: cannot be written (No space left on device)
    """
    try:
        yield
    except OSError as err:
        raise _unwritable(path, option, err) from err


@contextlib.contextmanager
def writing_output(path: Path, option: str) -> Iterator[Path]:
    """Write ``option``'s file ``path`` inside this block, to the path it yields: a
    failure while writing is one line naming the option and the path
    (:func:`output_failures`). Compute what is written before the block: the new file
    is there for the whole block.

    A file at ``path`` is kept whole until the new one is: the block writes a new file
    beside it (hidden, ending in ``.tmp``, so that no glob of the target's suffix sees it
    half written), moved over it once written (removed if the writing fails), or, inside
    :func:`all_or_none`, when every output of the run is; a symlink is written through
    to its target. A device or a pipe, which cannot be replaced, is
    written in place, as is a file in a folder where no new file can be made. The
    standard output (``/dev/stdout``, or the file it is redirected to) is written through
    the process's own stream, appended where the shell appends.

    Example:
        >>> with writing_output(Path("/dev/full"), "--html") as target:
        ...     target.write_text("<html>")
        Traceback (most recent call last):
        ValueError: --html /dev/full: cannot be written (No space left on device)
    """
    if _is_standard_output(path):
        with _through_standard_output(path, option) as staged:
            yield staged
        return
    target, existed = _landing(path)
    beside = _file_beside(target, existed)
    staged = _STAGED.get()
    try:
        with output_failures(path, option):
            yield path if beside is None else beside
            if beside is not None and staged is not None:
                staged.append(_Staged(beside, target, path, option))
            elif beside is not None:
                os.replace(beside, target)
            beside = None
    finally:
        if beside is not None:
            with contextlib.suppress(OSError):
                beside.unlink()


class _Staged(NamedTuple):
    """An output written beside its ``target``, to be moved over it (:func:`all_or_none`)."""

    beside: Path
    target: Path
    path: Path
    option: str


_STAGED: contextvars.ContextVar[list[_Staged] | None] = contextvars.ContextVar(
    "staged_outputs", default=None
)


@contextlib.contextmanager
def all_or_none() -> Iterator[None]:
    """The files :func:`writing_output` writes inside this block replace their targets
    together once the block ends; if it fails, none does (each new file is removed), and
    every file already there stays as it was. A run that failed writing its page had left
    its new figure beside the old page. (Where a move itself fails, the outputs before it
    are already in place; a move within a folder fails only where its writing did not.)

    Example:
        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> with all_or_none():
        ...     with writing_output(folder / "a.csv", "--out") as target:
        ...         _ = target.write_text("a")
        ...     (folder / "a.csv").exists()
        False
        >>> (folder / "a.csv").read_text()
        'a'
    """
    staged: list[_Staged] = []
    token = _STAGED.set(staged)
    try:
        yield
    except BaseException:
        _remove_beside(staged)
        raise
    finally:
        _STAGED.reset(token)
    for moved, output in enumerate(staged):
        try:
            with output_failures(output.path, output.option):
                os.replace(output.beside, output.target)
        except BaseException:
            _remove_beside(staged[moved:])
            raise


def _remove_beside(staged: Sequence[_Staged]) -> None:
    """Remove the new files of ``staged`` outputs not moved into place."""
    for output in staged:
        with contextlib.suppress(OSError):
            output.beside.unlink()


@contextlib.contextmanager
def _through_standard_output(path: Path, option: str) -> Iterator[Path]:
    """Write ``path``, the standard output, through the process's own descriptor: a file
    staged in the temporary folder, copied to descriptor 1 once written. Where the
    standard output is a file (``--html /dev/stdout > page.html``, ``--out /dev/stdout
    >> all.csv``) the file had been replaced, leaving the shell's stream (and what an
    appended file held before) on an unlinked copy; opening the path anew would truncate
    it."""
    handle, staged = tempfile.mkstemp(suffix=".tmp")
    os.close(handle)
    try:
        with output_failures(path, option):
            yield Path(staged)
            if sys.stdout is not None:
                sys.stdout.flush()
            try:
                _copy_to_descriptor(Path(staged), 1)
            except BrokenPipeError as gone:
                # The reader left (``| head``): the command's own exit, not a failure of
                # the output's, which output_failures would report as one.
                raise _ReaderGone from gone
    except _ReaderGone as gone:
        raise gone.__cause__ from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(staged)


class _ReaderGone(Exception):
    """A broken pipe carried past :func:`output_failures`, which wraps every OSError."""


def _copy_to_descriptor(source: Path, descriptor: int) -> None:
    """Write ``source``'s bytes to ``descriptor``, whole (a pipe may take part of a write)."""
    with source.open("rb") as written:
        while chunk := written.read(1 << 20):
            view = memoryview(chunk)
            while view:
                view = view[os.write(descriptor, view) :]


def _file_beside(target: Path, existed: bool) -> Path | None:
    """A new empty file in ``target``'s folder to write instead of it, with the mode
    ``target`` has (or that open() would give it); None for a target that is not a
    regular file (a device, a pipe) or where no file can be made."""
    try:
        mode = os.stat(target).st_mode if existed else None
        if mode is not None and not stat.S_ISREG(mode):
            return None
        beside = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        # 0o666 less the umask, as open() makes a file (mkstemp's would be 0o600).
        os.close(os.open(beside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError:
        return None
    if mode is not None:
        with contextlib.suppress(OSError):
            os.chmod(beside, stat.S_IMODE(mode))
    return beside


def save_figure(figure: Any, path: str | Path, option: str, **savefig: Any) -> None:
    """``figure.savefig(path, **savefig)``, drawn in memory first and then written with
    :func:`writing_output` (no file in the folder while it is drawn); the format is the
    suffix's unless ``savefig`` names one. A failure of the writing (the file system, or
    a program matplotlib runs:
    :func:`~calib_metrics.figure_programs.failed_to_write`) is one line naming ``option``
    and ``path`` and the failure's type; one of the drawing (a bug) is left as it is.
    (A ``.pgf`` figure holding raster images cannot be drawn in memory: matplotlib writes
    them as files beside the figure, and says so in a ValueError. The library's figures
    hold none.)

    Example:
        >>> from matplotlib.figure import Figure
        >>> save_figure(Figure(), Path("/dev/full"), "--plot", format="png")
        Traceback (most recent call last):
        ValueError: --plot /dev/full: cannot be written (No space left on device)
    """
    from calib_metrics.figure_programs import figure_write_failures

    path = Path(path)
    # The written file's name ends in .tmp: matplotlib would read the format from it.
    savefig.setdefault("format", path.suffix.lstrip(".").lower() or None)
    drawn = io.BytesIO()
    with output_failures(path, option), figure_write_failures():
        figure.savefig(drawn, **savefig)
    with writing_output(path, option) as target:
        target.write_bytes(drawn.getbuffer())


def check_output_paths(
    outputs: Mapping[str, Path | None],
    inputs: Sequence[Path | None] = (),
    *,
    json_output: bool = False,
) -> None:
    """Refuse, before any work, each output path as :func:`check_output_path` does, two
    options that name one file (the later write would destroy the earlier), and a
    ``--plot`` figure that matplotlib cannot write (:func:`check_figure_path`), nor the
    figures of an ``--html`` page. With ``json_output`` (``--json``) an output that is the
    standard output is refused too: the JSON printed there would follow a page or a
    figure, and no longer parse.

    Example:
        >>> check_output_paths({"--out": Path("same.png"), "--plot": Path("same.png")})
        Traceback (most recent call last):
        ValueError: --out and --plot name one file, same.png: give each its own
    """
    given = {option: path for option, path in outputs.items() if path is not None}
    for option, path in given.items():
        check_output_path(path, option, inputs)
        if json_output and _is_standard_output(path):
            raise ValueError(
                f"{option} {path} is the standard output, where --json prints its JSON: "
                "write it to a file"
            )
    options = list(given)
    for i, first in enumerate(options):
        for second in options[i + 1 :]:
            if _same_file(given[first], given[second]):
                raise ValueError(
                    f"{first} and {second} name one file, {given[first]}: give each its own"
                )
    if "--plot" in given:
        check_figure_path(given["--plot"], "--plot")
    if "--html" in given:
        _check_page_figures(given["--html"], "--html")


def text_report_stream(outputs: Mapping[str, Path | None]) -> AbstractContextManager:
    """Where the command's text report goes: the standard error when one of ``outputs``
    is the standard output (``--html /dev/stdout > page.html``: the report's lines had
    come before the page in one stream), else the standard output. ``--json`` beside
    such an output is refused before any work (:func:`check_output_paths`).

    Example:
        >>> with text_report_stream({"--html": Path("page.html")}):
        ...     print("CalibErr = 0.0123")
        CalibErr = 0.0123
    """
    if any(path is not None and _is_standard_output(path) for path in outputs.values()):
        return contextlib.redirect_stdout(sys.stderr)
    return contextlib.nullcontext()


def check_figure_path(path: Path, option: str) -> None:
    """Refuse a figure file whose suffix names no format matplotlib writes (or none: it
    would add ``.png`` to the name, and the file would not be where the command says), or
    one that needs what this machine lacks
    (:func:`~calib_metrics.figure_programs.missing_for_figure`).

    Example:
        >>> check_figure_path(Path("diagram.txt"), "--plot")
        Traceback (most recent call last):
        ValueError: --plot diagram.txt: matplotlib writes no '.txt' figures; use .png, .pdf or .svg
    """
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = path.suffix.lower().lstrip(".")
    if suffix not in FigureCanvasBase.get_supported_filetypes():
        what = f"writes no '.{suffix}' figures" if suffix else "needs a suffix to choose a format"
        raise ValueError(f"{option} {path}: matplotlib {what}; use .png, .pdf or .svg")
    _refuse_missing(path, option, suffix)


# The suffixes of the formats the reader takes other than CSV text: an output written as
# CSV under one of them would be read back as that format.
_OTHER_FORMATS = (".tsv", ".npz", ".npy", ".json", ".jsonl", ".ndjson", ".pt", ".pth")
# Compressed names: the text is written plain, which no reader of the name expects.
_COMPRESSED = (".gz", ".bz2", ".xz", ".zip", ".zst")


def check_csv_path(path: Path, option: str) -> None:
    """Refuse an output path for a CSV file named as another format the reader knows
    (``.npz``, ``.json``, ...) or as compressed (``.csv.gz``): the file had been written
    as plain CSV text under it, and could not be read back as the suffix says. Any other
    name (``.csv``, ``.txt``, none, a device such as ``/dev/stdout``) is taken; the
    reader takes ``.csv`` of these.

    Example:
        >>> check_csv_path(Path("recalibrated.txt"), "--out")
        >>> check_csv_path(Path("recalibrated.npz"), "--out")
        Traceback (most recent call last):
        ValueError: --out recalibrated.npz: is written as CSV text: give it a .csv name
        >>> check_csv_path(Path("recalibrated.csv.gz"), "--out")
        Traceback (most recent call last):
        ValueError: --out recalibrated.csv.gz: is written as plain CSV text, not compressed: ...
    """
    suffix = path.suffix.lower()
    if suffix in _OTHER_FORMATS:
        raise ValueError(f"{option} {path}: is written as CSV text: give it a .csv name")
    if suffix in _COMPRESSED:
        raise ValueError(
            f"{option} {path}: is written as plain CSV text, not compressed: give it a .csv name"
        )


def _check_page_figures(path: Path, option: str) -> None:
    """Refuse an HTML page whose SVG figures need what this machine lacks (a LaTeX for
    ``text.usetex``): found by the page's own savefig after the work, in a traceback."""
    _refuse_missing(path, option, "svg")


def _refuse_missing(path: Path, option: str, suffix: str) -> None:
    from calib_metrics.figure_programs import missing_for_figure

    missing = missing_for_figure(suffix)
    if missing is not None:
        raise ValueError(f"{option} {path}: {missing}")


def _is_standard_output(path: Path) -> bool:
    """Whether ``path`` (``/dev/stdout``, ``/proc/self/fd/1``, the file stdout is
    redirected to) is the file the process's standard output writes to. The null device
    is never: nothing written there can be mixed up (``--json --html /dev/null >
    /dev/null`` had been refused)."""
    try:
        here, there, null = path.stat(), os.fstat(1), os.stat(os.devnull)
    except (OSError, ValueError):
        return False
    same = (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
    return same and (here.st_dev, here.st_ino) != (null.st_dev, null.st_ino)


def _same_file(path: Path, other: Path) -> bool:
    """Whether two paths name one file (an existing one by inode, else by resolved path)."""
    if path.exists() and other.exists():
        return path.samefile(other)
    return path.resolve() == other.resolve()


def to_jsonable(value: Any) -> Any:
    """Turn tensors, paths, dataclasses and nested containers into JSON values.

    Non-finite floats become ``None`` (JSON has no NaN).

    Example:
        >>> to_jsonable({"a": torch.tensor(0.5), "b": [torch.tensor([1, 2])], "c": float("nan")})
        {'a': 0.5, 'b': [[1, 2]], 'c': None}
        >>> to_jsonable(torch.tensor([0.5, float("nan"), float("inf")]))
        [0.5, None, None]
    """
    if isinstance(value, torch.Tensor):
        return to_jsonable(value.detach().cpu().tolist())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "_asdict"):
        return to_jsonable(value._asdict())
    if hasattr(value, "__dataclass_fields__"):
        return to_jsonable({k: getattr(value, k) for k in value.__dataclass_fields__})
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
