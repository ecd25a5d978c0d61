"""The paper's exploratory analysis of country-to-country events (§6), as one room.

- :mod:`~calib_metrics.paper.events.analysis`: the extraction rules, per-sample
  aggregation of events into (pair, period) counts, and their intervals;
- :mod:`~calib_metrics.paper.events.stats`: summaries of sampled counts;
- :mod:`~calib_metrics.paper.events.errors`: which documents and decisions the
  uncertainty comes from;
- :mod:`~calib_metrics.paper.events.experiment`: ``calib-metrics reproduce events``.
"""
