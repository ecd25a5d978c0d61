"""The monitor's images as a user sees them: TensorBoard on 127.0.0.1, rendered in Chromium.

Needs the ``chromium`` binary (Debian: ``apt-get install -y chromium``); skipped with that
reason when it is missing. Every process started here is ended by its PID.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location(
    "process_helpers", Path(__file__).with_name("process_helpers.py")
)
process_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(process_helpers)

BROWSERS = ("chromium", "chromium-browser")
CHROME_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--virtual-time-budget=15000",
)


def find_browser() -> str | None:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def get(url: str, timeout: float = 10.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def helpers() -> Any:
    """tests/test_callbacks.py's tiny model and data, loaded by path (tests is no package)."""
    path = Path(__file__).with_name("test_callbacks.py")
    spec = importlib.util.spec_from_file_location("_callbacks_helpers", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def browser() -> str:
    path = find_browser()
    if path is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")
    return path


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory: pytest.TempPathFactory, browser: str) -> dict[str, Any]:
    """A 2-epoch run of the monitor writing to TensorBoard."""
    from lightning.pytorch.loggers import TensorBoardLogger

    h = helpers()
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


def render(browser: str, url: str, profile: Path, *extra: str) -> str:
    """Chromium's ``--dump-dom`` of ``url`` (or what ``extra`` asks for), as text."""
    proc = subprocess.Popen(
        [browser, *CHROME_FLAGS, f"--user-data-dir={profile}", *extra, url],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=90)
    finally:
        process_helpers.stop(proc)
    return out.decode("utf-8", errors="replace")


def test_time_series_page_shows_the_diagram(
    browser: str, tensorboard: str, logged_run: dict[str, Any], tmp_path: Path
) -> None:
    # The "val" group starts collapsed; the tagFilter query shows the matching card.
    url = f"{tensorboard}/?darkMode=false&tagFilter=val%2Freliability_diagram#timeseries"
    last_step = logged_run["history"][-1]["step"]
    # Cards render lazily; on a busy machine the first page load may end before the image
    # request does, so allow a second look.
    for attempt in range(3):
        dom = render(browser, url, tmp_path / f"profile{attempt}", "--dump-dom")
        if f"Image at step {last_step}" in dom:
            break
    assert f"Image at step {last_step}" in dom, dom[-3000:]
    # The <img> source is served, and it is a PNG of the diagram of the last epoch.
    (src,) = re.findall(r'<img[^>]*alt="Image at step \d+"[^>]*src="([^"]+)"', dom)
    png = get(f"{tensorboard}/{src.replace('&amp;', '&')}")
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    image_id = src.split("imageId=")[1].split("&")[0]
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
