"""The monitor's images as a user sees them: TensorBoard on 127.0.0.1, rendered in Chromium.

Needs Debian's ``chromium`` and ``chromium-driver`` and ``selenium`` (see
``browser_harness.py``); skipped with that reason when one is missing. The page checks wait
for the element they read, with a bounded timeout. Every process started here is ended.
"""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import browser_harness
import process_helpers
import pytest
import test_callbacks as h


def get(url: str, timeout: float = 10.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


@pytest.fixture(scope="module")
def browser() -> tuple[str, str]:
    return browser_harness.require_browser()


@pytest.fixture(scope="module")
def logged_run(
    tmp_path_factory: pytest.TempPathFactory, browser: tuple[str, str]
) -> dict[str, Any]:
    """A 2-epoch run of the monitor writing to TensorBoard."""
    from lightning.pytorch.loggers import TensorBoardLogger

    root = tmp_path_factory.mktemp("tb_browser")
    cb = h.monitor(per_class=True)
    train, val = h.loaders()
    logger = TensorBoardLogger(root / "logs", name="tiny")
    h.trainer(root, 2, logger=logger, callbacks=[cb]).fit(h.TinyTagger(), train, val)
    return {"root": root, "logdir": root / "logs", "history": cb.history}


@pytest.fixture(scope="module")
def tensorboard(logged_run: dict[str, Any]) -> Iterator[str]:
    """A TensorBoard server on a free port of 127.0.0.1; yields its base URL."""
    port = process_helpers.free_port()
    log = open(logged_run["root"] / "tensorboard.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tensorboard.main",
            "--logdir",
            str(logged_run["logdir"]),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--reload_interval",
            "2",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:  # serving, and the event file loaded (the tag is listed)
            if proc.poll() is not None:
                raise AssertionError(
                    "tensorboard exited: "
                    + (logged_run["root"] / "tensorboard.log").read_text()[-2000:]
                )
            with contextlib.suppress(OSError):
                tags = json.loads(get(f"{base}/data/plugin/images/tags"))
                if any("val/reliability_diagram" in t for t in tags.values()):
                    break
            if time.monotonic() > deadline:
                raise AssertionError("tensorboard did not serve the run within 120 s")
            time.sleep(0.5)
        yield base
    finally:
        process_helpers.stop(proc)
        log.close()


def test_time_series_page_shows_the_diagram(
    tensorboard: str, logged_run: dict[str, Any], tmp_path: Path
) -> None:
    # The "val" group starts collapsed; the tagFilter query shows the matching card.
    url = f"{tensorboard}/?darkMode=false&tagFilter=val%2Freliability_diagram#timeseries"
    last_step = logged_run["history"][-1]["step"]
    with browser_harness.chromium(tmp_path / "profile") as driver:
        driver.get(url)
        image = browser_harness.wait_for_css(driver, f'img[alt="Image at step {last_step}"]')
        src = image.get_attribute("src")
    # The <img> source is served, and it is a PNG of the diagram of the last epoch.
    png = get(urllib.parse.urljoin(tensorboard + "/", src))
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    image_id = urllib.parse.parse_qs(urllib.parse.urlparse(src).query)["imageId"][0]
    # imageId is base64 JSON: [experiment, run, tag, step, index]
    decoded = json.loads(base64.urlsafe_b64decode(image_id + "=" * (-len(image_id) % 4)))
    assert decoded[2:4] == ["val/reliability_diagram", last_step]


def test_every_epoch_and_the_per_class_chart_are_served(
    tensorboard: str, logged_run: dict[str, Any]
) -> None:
    tags = json.loads(get(f"{tensorboard}/data/plugin/images/tags"))
    (run,) = tags
    assert set(tags[run]) == {"val/reliability_diagram", "val/calib_err_per_class"}
    query = urllib.parse.urlencode({"run": run, "tag": "val/calib_err_per_class"})
    images = json.loads(get(f"{tensorboard}/data/plugin/images/images?{query}"))
    assert [i["step"] for i in images] == [r["step"] for r in logged_run["history"]]


def test_custom_scalars_margin_chart_is_served(tensorboard: str) -> None:
    layout = json.loads(get(f"{tensorboard}/data/plugin/custom_scalars/layout"))
    (category,) = layout["category"]
    (chart,) = category["chart"]
    assert chart["title"] == "val/calib_err (95% interval)"
    series = chart["margin"]["series"][0]
    assert [series["value"], series["lower"], series["upper"]] == [
        "val/calib_err",
        "val/calib_err_lower",
        "val/calib_err_upper",
    ]
