"""Running ``calib-metrics`` in the test's own process: its exit code and output, and the
one-line error every bad input must end in."""

from __future__ import annotations

from calib_metrics import cli


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """The command's exit code (argparse's too), stdout and stderr."""
    try:
        code = cli.main([str(a) for a in argv])
    except SystemExit as exit_:  # argparse errors
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(capsys, *argv) -> str:
    """Run the command; check one line on stderr, nothing on stdout and exit 2; the line."""
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and "Traceback" not in err, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]
