"""What keeps web pages and other users out of ``boardd serve``. Real subprocesses, real
HTTP."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from tensorboardX import SummaryWriter

from tests.daemon.conftest import Daemon, ServeFactory

TOKEN = "boundary-test-token-0123456789abcdef"


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    with SummaryWriter(str(root / "train")) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    return root


def client(daemon: Daemon, **kwargs: object) -> httpx.Client:
    return httpx.Client(
        base_url=f"http://127.0.0.1:{daemon.port}",
        timeout=30.0,
        trust_env=False,
        **kwargs,  # type: ignore[arg-type]
    )


def test_bearer_scheme_in_any_case(serve: ServeFactory, logdir: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    daemon = serve(logdir, "--token-file", token_file)
    with client(daemon) as c:
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"]:
            r = c.get("/api/v1/health", headers={"authorization": f"{scheme} {TOKEN}"})
            assert r.status_code == 200, scheme
        for value in [f"Basic {TOKEN}", f"bearer {TOKEN}x", "bearer", TOKEN, f"bearer{TOKEN}"]:
            r = c.get("/api/v1/health", headers={"authorization": value})
            assert r.status_code == 401, value
