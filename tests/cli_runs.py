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


def two_multiclass_models(folder, n: int):
    """``a.npz`` (overconfident: temperature 1/3) and ``b.npz`` (calibrated) in ``folder``:
    [n, 3] probabilities beside the class ids; the tensors (a's, b's, ids) and the paths."""
    import numpy as np
    import torch

    g = torch.Generator().manual_seed(0)
    probs = (torch.randn(n, 3, generator=g, dtype=torch.float64) * 2).softmax(-1)
    target = torch.multinomial(probs, 1, generator=g).squeeze(1)
    sharp = torch.softmax(3 * probs.log(), -1)
    paths = folder / "a.npz", folder / "b.npz"
    for path, model in zip(paths, (sharp, probs), strict=True):
        np.savez(path, probs=model.numpy(), target=target.numpy())
    return (sharp, probs, target), paths
