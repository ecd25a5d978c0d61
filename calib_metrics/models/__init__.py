"""Reference models whose posteriors feed the calibration metric.

``linear_chain`` holds the shared dynamic-programming core (forward-backward
marginals, Viterbi, posterior sampling) under the ``hmm`` and ``crf`` taggers;
``coref`` holds the antecedent-ranking model. Import the submodules directly,
e.g. ``from calib_metrics.models.linear_chain import posterior_marginals``;
this package imports nothing eagerly.
"""
