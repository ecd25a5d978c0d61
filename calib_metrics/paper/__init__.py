"""The paper's and the thesis' reproductions: corpus readers and experiments.

The library never imports this package; only :mod:`calib_metrics.cli` does, lazily.
"""
