"""The paper's experiments, each run by ``calib-metrics reproduce NAME``.

Every module here exposes ``DESCRIPTION`` (one line), ``add_arguments(parser)`` and
``run(args) -> dict``; :mod:`calib_metrics.cli` finds them by name in
:data:`EXPERIMENTS`, so adding an experiment never touches the command line.
"""

EXPERIMENTS: dict[str, str] = {
    "pos": "calib_metrics.experiments.pos",
    "coref": "calib_metrics.experiments.coref",
    "events": "calib_metrics.experiments.events",
    "sentiment": "calib_metrics.experiments.sentiment",
    "twitter-pos": "calib_metrics.paper.twitter_pos",
    "ner": "calib_metrics.paper.ner",
}
