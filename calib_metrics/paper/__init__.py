"""The paper's and the thesis' reproductions: readers, features, experiments, event analysis.

Nothing in the library imports this package; only :mod:`calib_metrics.cli` does, lazily,
for ``calib-metrics reproduce`` and ``calib-metrics demo``. It builds on the library
(functional core, models, plots), never the other way round.

Every experiment module exposes ``DESCRIPTION`` (one line), ``add_arguments(parser)``
and ``run(args) -> dict``; the command line finds them by name in :data:`EXPERIMENTS`
(name -> module path), so adding an experiment is one entry here and never touches the
command line.

Example:
    >>> sorted(EXPERIMENTS)
    ['coref', 'events', 'ner', 'pos', 'sentiment', 'twitter-pos']
"""

EXPERIMENTS: dict[str, str] = {
    "pos": "calib_metrics.paper.pos",
    "coref": "calib_metrics.paper.coref",
    "events": "calib_metrics.paper.events.experiment",
    "sentiment": "calib_metrics.paper.sentiment",
    "twitter-pos": "calib_metrics.paper.twitter_pos",
    "ner": "calib_metrics.paper.ner",
}
