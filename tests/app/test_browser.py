"""The search panel in a real browser: JupyterLab in Debian's chromium, driven by Playwright.

Playwright drives the chromium that Debian's package installs (``executable_path``); it never
downloads a browser. The test starts JupyterLab on a free loopback port with a temporary root,
runs notebook 05, searches, expands a result, checks that transcript HTML renders as text, saves a
screenshot in ``test-artifacts/``, and stops the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "test-artifacts"
TOKEN = "convlab-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def jupyter_lab(root: Path) -> Iterator[str]:
    """JupyterLab on a free loopback port serving ``root``; yields its URL, stops it after.

    Fails (never skips) when Debian's chromium is missing: the browser tests need it.
    """
    if not Path(CHROMIUM).exists():
        pytest.fail(
            "Debian's chromium is missing: `make test` installs it (apt-get install chromium)"
        )
    # no "notified about Jupyter news?" toast over the results in the screenshot
    settings = root / "settings"
    notification = (
        settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    )
    notification.parent.mkdir(parents=True)
    notification.write_text(json.dumps({"fetchNews": "false"}))
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.open_browser=False",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        # window.jupyterapp: the test runs cells through JupyterLab's own command registry
        "--LabApp.expose_app_in_browser=True",
        f"--LabApp.user_settings_dir={settings}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    env = {**os.environ, "PYTHONPATH": str(REPO), "JUPYTER_CONFIG_DIR": str(root / ".jupyter")}
    log = (root / "lab.log").open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"JupyterLab exited: {(root / 'lab.log').read_text()[-2000:]}")
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start in 60 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("lab")
    nb = json.loads((REPO / "notebooks" / "05_search_panel.ipynb").read_text())
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        cell["source"] = src.replace('Path("../runs/cache")', repr(str(REPO / "runs" / "cache")))
    (root / "05_search_panel.ipynb").write_text(json.dumps(nb))
    with jupyter_lab(root) as url:
        yield url


# the notebook panel's kernel, once it is connected and idle
_KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}"""


def _run_all_cells(page: Any) -> None:
    """Run every cell once the kernel is connected and idle.

    Clicking the Run menu as soon as the page shows an idle indicator races the kernel start-up:
    the request can be sent before the kernel connection is live and is then lost. Waiting for a
    connected, idle kernel and calling JupyterLab's own command avoids both the race and the menu.
    """
    page.wait_for_function(_KERNEL_IDLE, timeout=120_000)
    page.evaluate(
        """async () => {
          const w = window.jupyterapp.shell.currentWidget;
          await w.context.ready;
          await w.sessionContext.ready;
          await window.jupyterapp.commands.execute('notebook:run-all-cells');
        }"""
    )


@pytest.mark.browser
@pytest.mark.model
@pytest.mark.slow
def test_search_panel_in_chromium(lab: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    dialogs: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            try:
                page.goto(f"{lab}/lab/tree/05_search_panel.ipynb?token={TOKEN}")
                page.wait_for_selector(".jp-Notebook", timeout=120_000)
                _run_all_cells(page)
                query = page.locator(".convlab-query input")
                query.wait_for(timeout=300_000)
                query.fill("what flag did we pass to postgres to avoid locking the table")
                query.press("Enter")
                page.wait_for_selector(".convlab-hit", timeout=120_000)
                docs = page.locator(".convlab-hit").evaluate_all(
                    "els => els.map(e => e.getAttribute('data-doc'))"
                )
                assert "cc-pg-index:t0" in docs[:3], docs
                assert "hits in" in page.locator(".convlab-status").inner_text()
                page.locator(".convlab-expand").first.click()
                page.wait_for_selector(".convlab-context", timeout=60_000)
                context = page.locator(".convlab-context").first.inner_text()
                assert "tokens of 512" in context
                assert page.locator(".convlab-target").count() >= 1
                # transcript HTML shows as text, never as markup
                query.fill("script injection through a comment alert onerror")
                query.press("Enter")
                page.wait_for_function(
                    "() => [...document.querySelectorAll('.convlab-hit')].some("
                    "e => e.getAttribute('data-doc') === 'cc-react-double-fetch:t3')",
                    timeout=60_000,
                )
                results = page.locator(".convlab-results").inner_text()
                assert "<script>alert(1)</script>" in results or "<img src=x onerror" in results
                assert page.locator(".convlab-results img[src='x']").count() == 0
                assert page.locator(".convlab-results script").count() == 0
                page.locator(".convlab-expand").first.click()
                page.wait_for_selector(".convlab-context", timeout=60_000)
                page.screenshot(path=str(ARTIFACTS / "search_panel.png"), full_page=True)
            except Exception:
                page.screenshot(path=str(ARTIFACTS / "search_panel_failure.png"), full_page=True)
                raise
        finally:
            browser.close()
    assert dialogs == []
