"""TensorBoard's own HParams dashboard in a real browser (Debian's chromium) on ``boardd serve``
over a logdir written with TensorBoard's official hparams API: the table view lists a row per
session group (repeated trials share a row), with their hparam values, and the page reports no
errors (it posts ``/data/plugin/hparams/experiment`` without X-XSRF-Protected, as text/plain).

Screenshots: see the ``artifacts`` fixture (``$BOARDD_TEST_ARTIFACTS/<test>/``, else the test's
tmp_path)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser.conftest import Watched
from tests.daemon.conftest import ServeFactory
from tests.hparams_logdirs import OFFICIAL_GROUPS, curve, write_official

pytestmark = pytest.mark.slow


def test_hparams_table_lists_the_sessions(
    serve: ServeFactory, tmp_path: Path, page: Watched
) -> None:
    made = write_official(tmp_path)
    daemon = serve(made.path)
    # The last run written, so the whole logdir is in the store.
    last = sorted(s for s in made.statuses if s.startswith("epsilon/"))[-1]
    steps = [step for step, _ in curve(1.0, every=20)]
    daemon.wait_for_steps(f"{last}/validation", "accuracy", steps, timeout=30)
    base = f"http://127.0.0.1:{daemon.port}"

    page.page.goto(f"{base}/tensorboard/#hparams")
    table = page.page.locator("tf-hparams-table-view")
    cells = table.locator("vaadin-grid-cell-content")
    # A row per session group: its trial id in the first column.
    for group in OFFICIAL_GROUPS:
        cells.filter(has_text=re.compile(rf"^\s*{group}\s*$")).first.wait_for()
    texts = {t.strip() for t in cells.all_inner_texts()}
    assert set(OFFICIAL_GROUPS) <= texts
    # Their hparams as the dashboard formats them, and the columns' display names.
    assert {"rmsprop", "adam", "sgd", "true", "false"} <= texts
    assert {"learning rate", "Score", "Accuracy"} <= texts
    page.page.wait_for_load_state("networkidle")
    page.screenshot("hparams-table")
    page.assert_no_errors()
    requested = {r.url.removeprefix(base) for r in page.responses}
    assert any(u.endswith("/data/plugin/hparams/session_groups") for u in requested), requested
