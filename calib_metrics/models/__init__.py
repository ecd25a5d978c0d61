"""Reference models whose posteriors feed the calibration metric.

``linear_chain`` holds the shared dynamic-programming core (forward-backward
marginals, Viterbi, posterior sampling) used by the HMM and CRF taggers. Import
the submodules directly, e.g. ``from calib_metrics.models.linear_chain import
posterior_marginals``; this package imports nothing eagerly.
"""
