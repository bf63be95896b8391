"""TensorBoard's own UI in a real browser (Debian's chromium) on ``boardd serve``: it loads
without errors, shows a run's scalars in Time Series and its images in the Images view, picks
up a point written while it is open when it reloads, works behind the login URL and when
started with TensorBoard's own flags (its --window_title is the page's title); its
older Scalars and Custom Scalars tabs draw their charts, the Graphs tab its graph, the Mesh
tab its point cloud, the Projector tab its embedding.

Screenshots: see the ``artifacts`` fixture (``$BOARDD_TEST_ARTIFACTS/<test>/``, else the
test's tmp_path)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from tests.browser.conftest import Watched
from tests.daemon.conftest import Daemon, ServeFactory

if TYPE_CHECKING:
    from playwright.sync_api import Locator

RUN = "train"
TAG = "loss"
IMAGE_TAG = "pic"
TOKEN = "browser-test-token-0123456789abcdef"
WALL = 1_700_000_000.0

pytestmark = pytest.mark.slow


def write(logdir: Path, steps: range, tags: tuple[str, ...] = (TAG,)) -> None:
    """Scalars (and images) of run RUN, one event file per call, as a training job writes."""
    rng = np.random.default_rng(steps.start)
    with SummaryWriter(str(logdir / RUN)) as w:
        for step in steps:
            for tag in tags:
                w.add_scalar(tag, 1.0 / (step + 1), step, walltime=WALL + step)
            w.add_image(IMAGE_TAG, rng.random((3, 16, 16)), step, walltime=WALL + step)


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    write(root, range(3))
    return root


def ready(daemon: Daemon) -> str:
    """The daemon's base URL, once it has ingested the logdir."""
    daemon.wait_for_steps(RUN, TAG, [0, 1, 2], timeout=30)
    return f"http://127.0.0.1:{daemon.port}"


def run_row(page: Watched, run: str = RUN) -> None:
    """Waits for the run to be listed in the runs table."""
    page.page.locator("tb-data-table-content-row", has_text=run).first.wait_for()


def scalar_card(page: Watched, tag: str) -> None:
    """Waits for Time Series to show the card of ``tag``."""
    page.page.locator(
        "scalar-card tb-truncated-path.tag", has_text=re.compile(rf"^\s*{tag}\s*$")
    ).first.wait_for()


def group(page: Watched, tag: str) -> Locator:
    """The header of Time Series' group of cards named ``tag``."""
    return page.page.locator(
        "metrics-card-group-toolbar", has_text=re.compile(rf"^\s*{tag}\s*$")
    ).first


def test_ui_loads_without_errors(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    base = ready(serve(logdir))
    page.page.goto(f"{base}/tensorboard/")  # / is boardd's own dashboard
    assert page.page.url.startswith(f"{base}/tensorboard/")
    run_row(page)
    page.page.wait_for_load_state("networkidle")
    page.screenshot("loaded")
    page.assert_no_errors()
    # The page got its code and fonts from boardd (nothing failed, nothing from elsewhere).
    urls = [r.url for r in page.responses]
    assert any("/tensorboard/index.js" in u for u in urls)
    assert all(u.startswith(base) or u.startswith("data:") for u in urls), urls


def test_inactive_tabs_open_without_errors(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    """Tabs boardd does not serve open as TensorBoard's do on a logdir without their data:
    the Debugger V2 tab's first request (``debugger-v2/runs``) was a 404, an error in the
    console."""
    base = ready(serve(logdir))
    for tab in ("debugger-v2", "profile_redirect", "wit_redirect"):
        page.page.goto(f"{base}/tensorboard/#{tab}")
        page.page.wait_for_load_state("networkidle")
        page.page.get_by_text(
            re.compile("inactive|No .* data|not .* installed", re.I)
        ).first.wait_for()
        page.screenshot(f"inactive-{tab}")
    page.assert_no_errors()


def test_a_tensorboard_bookmark_opens_tensorboards_ui(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    """A link made on TensorBoard (its UI at ``/``: ``/?darkMode=true#timeseries``) opens
    TensorBoard's UI at ``/tensorboard/`` with its state, not boardd's dashboard; the
    dashboard's own URLs stay."""
    base = ready(serve(logdir))
    page.page.goto(f"{base}/?darkMode=true#timeseries")
    page.page.wait_for_url(f"{base}/tensorboard/?darkMode=true#timeseries")
    scalar_card(page, TAG)
    page.screenshot("bookmark")
    page.page.goto(f"{base}/?smoothing=0.5#nothing")
    page.page.locator("nav#views").wait_for()
    assert page.page.url == f"{base}/?smoothing=0.5#nothing"
    page.assert_no_errors()


def test_tensorboards_command_line_and_window_title(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    """``tensorboard --logdir L --window_title T`` as ``boardd serve --logdir L --window_title
    T``: the UI shows the run, with T as the page's title."""
    base = ready(serve("--logdir", logdir, "--window_title", "My sweep", "--load_fast=true"))
    page.page.goto(f"{base}/tensorboard/")
    run_row(page)
    page.page.wait_for_function("document.title === 'My sweep'")
    page.assert_no_errors()


def test_time_series_shows_the_card(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    base = ready(serve(logdir))
    page.page.goto(f"{base}/tensorboard/#timeseries")
    run_row(page)
    scalar_card(page, TAG)
    page.page.wait_for_load_state("networkidle")
    page.screenshot("timeseries")


def test_the_scalars_tab_draws_its_chart(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    """The Scalars tab (TensorBoard's older dashboard) posts scalars_multirun as a FormData
    without X-XSRF-Protected; the browser marks it as this page's own request, and it is
    answered (it was refused with a 400, and the tab drew nothing)."""
    base = ready(serve(logdir))
    with page.page.expect_response(lambda r: "scalars/scalars_multirun" in r.url) as got:
        page.page.goto(f"{base}/tensorboard/#scalars")
    assert got.value.status == 200, got.value.text()
    assert got.value.request.method == "POST"
    assert "x-xsrf-protected" not in got.value.request.headers  # what made it a 400 before
    rows = json.loads(got.value.body())
    assert [row[1] for row in rows[RUN]] == [0, 1, 2]
    page.page.locator("tf-scalar-card vz-line-chart2").first.wait_for()
    page.page.wait_for_load_state("networkidle")
    page.screenshot("scalars-tab")
    page.assert_no_errors()


def test_the_custom_scalars_tab_draws_its_chart(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    """A layout written with tensorboardX's add_custom_scalars: the Custom Scalars tab reads
    it and draws its charts (a multiline and a margin chart) from the regex-matched scalars."""
    # A file of its own (the fixture's may have the same name: both named in the same second).
    with SummaryWriter(str(logdir / RUN), filename_suffix=".layout") as w:
        w.add_custom_scalars(
            {
                "Training": {"losses": ["Multiline", [f"^{TAG}$"]]},
                "Band": {"band": ["Margin", [TAG, TAG, TAG]]},
            }
        )
    base = ready(serve(logdir))
    with page.page.expect_response(lambda r: "custom_scalars/scalars" in r.url) as got:
        page.page.goto(f"{base}/tensorboard/#custom_scalars")
    assert got.value.status == 200, got.value.text()
    events = json.loads(got.value.body())["tag_to_events"]
    assert [row[1] for row in events[TAG]] == [0, 1, 2]
    page.page.locator("tf-custom-scalar-multi-line-chart-card vz-line-chart2").first.wait_for()
    page.page.locator("tf-custom-scalar-margin-chart-card vz-line-chart2").first.wait_for()
    page.page.wait_for_load_state("networkidle")
    page.screenshot("custom-scalars-tab")
    page.assert_no_errors()


def test_the_graphs_tab_draws_the_graph(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    """A graph as PyTorch's add_graph writes one (a graph_def event): the Graphs tab asks for
    it and draws its nodes."""
    from tensorboard.compat.proto import event_pb2, graph_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    graph = graph_pb2.GraphDef()
    graph.versions.producer = 22
    graph.node.add(name="Net/input", op="Placeholder")
    graph.node.add(name="Net/linear", op="MatMul", input=["Net/input"])
    graph.node.add(name="Net/output", op="Relu", input=["Net/linear"])
    writer = EventFileWriter(str(logdir / RUN), filename_suffix=".graph")
    writer.add_event(event_pb2.Event(wall_time=WALL, graph_def=graph.SerializeToString()))
    writer.close()
    base = ready(serve(logdir))
    with page.page.expect_response(lambda r: "graphs/graph?" in r.url) as got:
        page.page.goto(f"{base}/tensorboard/#graphs")
    assert got.value.status == 200, got.value.text()
    assert 'name: "Net/linear"' in got.value.text()
    # The graph drawn: the "Net" scope's node in the scene.
    page.page.locator("tf-graph-scene g.node", has_text="Net").first.wait_for()
    page.page.wait_for_load_state("networkidle")
    page.screenshot("graphs-tab")
    page.assert_no_errors()


def test_the_mesh_tab_loads_its_mesh(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    """A point cloud written with tensorboardX's add_mesh: the Mesh tab asks for the mesh's
    parts and their vertices, gets them, and draws them (WebGL) without an error."""
    rng = np.random.default_rng(1)
    with SummaryWriter(str(logdir / RUN), filename_suffix=".mesh") as w:
        w.add_mesh("cloud", rng.normal(size=(1, 30, 3)), global_step=0, walltime=WALL)
    base = ready(serve(logdir))
    with page.page.expect_response(
        lambda r: "mesh/data?" in r.url and "content_type=VERTEX" in r.url
    ) as got:
        page.page.goto(f"{base}/tensorboard/#mesh")
    assert got.value.status == 200, got.value.text()
    assert len(got.value.body()) == 30 * 3 * 4  # the vertices, float32
    page.page.locator("mesh-viewer-component, tf-mesh-loader, canvas").first.wait_for()
    page.page.wait_for_load_state("networkidle")
    page.screenshot("mesh-tab")
    page.assert_no_errors()


def test_the_projector_tab_loads_the_embedding(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    """An embedding written with tensorboardX's add_embedding: the Projector tab (its page in
    an iframe) reads the run's configuration, the points and their labels."""
    rng = np.random.default_rng(2)
    with SummaryWriter(str(logdir / RUN), filename_suffix=".emb") as w:
        w.add_embedding(rng.normal(size=(20, 4)), metadata=[f"p{i}" for i in range(20)])
        w.add_scalar("emb_written", 1.0, 0, walltime=WALL)
    base = ready(serve(logdir))
    with page.page.expect_response(lambda r: "projector/tensor?" in r.url, timeout=60_000) as got:
        page.page.goto(f"{base}/tensorboard/#projector")
    assert got.value.status == 200, got.value.text()
    assert len(got.value.body()) == 20 * 4 * 4  # the points, float32
    page.page.wait_for_load_state("networkidle")
    answered = {r.url.split("/data/plugin/projector/")[-1].split("?")[0]: r.status
                for r in page.responses if "/data/plugin/projector/" in r.url}  # fmt: skip
    assert answered.get("info") == answered.get("metadata") == 200, answered
    page.screenshot("projector-tab")
    page.assert_no_errors()


def test_images_view_shows_an_image(serve: ServeFactory, logdir: Path, page: Watched) -> None:
    base = ready(serve(logdir))
    page.page.goto(f"{base}/tensorboard/#images")
    image = page.page.locator('img[src*="individualImage"]').first
    image.wait_for()
    # Decoded: the browser got a real PNG of the written size.
    page.page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=image.element_handle()
    )
    assert image.evaluate("img => [img.naturalWidth, img.naturalHeight]") == [16, 16]
    page.page.wait_for_load_state("networkidle")
    page.screenshot("images")


def loss_request(response: object) -> bool:
    """A Time Series data request (and its answer) for the loss card."""
    from playwright.sync_api import Response

    assert isinstance(response, Response)
    body = response.request.post_data or ""
    return "plugin/timeseries/timeSeries" in response.url and f'"tag":"{TAG}"' in body


def test_a_point_written_while_open_appears_on_reload(
    serve: ServeFactory, logdir: Path, page: Watched
) -> None:
    daemon = serve(logdir)
    base = ready(daemon)
    page.page.goto(f"{base}/tensorboard/#timeseries")
    scalar_card(page, TAG)
    # The card's first data must have arrived: TensorBoard's reload skips a card whose
    # fetch is still in flight (metrics effects: visibleCardsReloaded$), and "networkidle"
    # is no sync point here (it fires once per navigation, maybe before the card's fetch).
    first = page.until(lambda: next((r for r in page.responses if loss_request(r)), None))
    first.finished()
    points = json.loads(first.body())
    assert [p["step"] for p in points[0]["runToSeries"][RUN]] == [0, 1, 2]
    page.page.wait_for_load_state("networkidle")
    assert group(page, "late").count() == 0

    # A training job writes on: step 3 of the loss, and a new tag.
    write(logdir, range(3, 4), tags=(TAG, "late"))
    daemon.wait_for_steps(RUN, "late", [3], timeout=30)

    with page.page.expect_response(loss_request) as fetched:
        page.page.locator("app-header-reload button").first.click()
    # The new tag's group (new groups show collapsed), and the new point of the loss.
    group(page, "late").wait_for()
    answer = json.loads(fetched.value.body())
    series = next(s for s in answer if s.get("tag") == TAG)
    assert [p["step"] for p in series["runToSeries"][RUN]] == [0, 1, 2, 3]
    page.page.wait_for_load_state("networkidle")
    page.screenshot("reloaded")


def test_login_url_opens_the_ui(
    serve: ServeFactory, logdir: Path, page: Watched, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    daemon = serve(logdir, "--token-file", token_file)
    base = f"http://127.0.0.1:{daemon.port}"
    # The URL the daemon shows on a terminal (its log names the token's file instead).
    login_url = f"{base}/login?token={TOKEN}"

    # Without logging in: refused.
    refused = page.page.goto(f"{base}/tensorboard/")
    assert refused is not None and refused.status == 401
    page.errors.clear()
    page.responses.clear()

    page.page.goto(login_url)  # the login URL sets the cookie, then opens / (the dashboard)
    assert page.page.url == f"{base}/"
    page.page.goto(f"{base}/tensorboard/")
    assert page.page.url.startswith(f"{base}/tensorboard/")
    run_row(page)
    page.page.wait_for_load_state("networkidle")
    page.screenshot("logged-in")
    statuses = {r.url.removeprefix(base): r.status for r in page.responses}
    assert 401 not in statuses.values(), statuses
    for path in ["/tensorboard/data/environment", "/tensorboard/data/plugins_listing"]:
        assert statuses.get(path) == 200, (path, statuses)
    assert any(p.endswith("/data/runs") and s == 200 for p, s in statuses.items()), statuses
    # The cookie is not readable by the page's scripts.
    assert "boardd-auth" not in page.page.evaluate("document.cookie")
