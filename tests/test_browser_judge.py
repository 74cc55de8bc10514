"""The judge panel in a real browser: JupyterLab in Debian's chromium, driven by Playwright.

A notebook builds a pool of three candidates and opens :class:`convlab.widgets.JudgePanel` on a
qrels file; the test judges all three with the keyboard (r, p, n typed into the key box) and
checks that the file holds the three judgments. Playwright drives Debian's chromium
(``executable_path``); nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_browser import CHROMIUM, TOKEN, _free_port, _run_all_cells

REPO = Path(__file__).resolve().parent.parent

CELL = """
from convlab.judge import Candidate, JudgmentLog
from convlab.widgets import JudgePanel

pool = [
    Candidate("q1", "flaky fixture", f"c:m{i}", "c", f"the flaky fixture, take {i}", (), ())
    for i in range(3)
]
JudgePanel(pool, JudgmentLog(QRELS, assessor="browser"))
"""


@pytest.fixture(scope="module")
def judge_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make test` installs it")
    root = tmp_path_factory.mktemp("judge-lab")
    qrels = root / "qrels.jsonl"
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": f"QRELS = {str(qrels)!r}\n{CELL}",
            }
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (root / "judge.ipynb").write_text(json.dumps(nb))
    settings = root / "settings"
    note = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    note.parent.mkdir(parents=True)
    note.write_text(json.dumps({"fetchNews": "false"}))
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
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
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
        yield url, qrels
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.mark.browser
@pytest.mark.slow
def test_judge_three_candidates_with_the_keyboard(judge_lab: tuple[str, Path]) -> None:
    from playwright.sync_api import sync_playwright

    url, qrels = judge_lab
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage"],
        )
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto(f"{url}/lab/tree/judge.ipynb?token={TOKEN}")
            page.wait_for_selector(".jp-Notebook", timeout=120_000)
            _run_all_cells(page)
            keys = page.locator(".convlab-judge-keys input")
            keys.wait_for(timeout=120_000)
            progress = page.locator(".convlab-judge-progress")
            for n, key in enumerate("rpn", start=1):
                page.wait_for_function(
                    "n => document.querySelector('.convlab-judge-progress')"
                    ".innerText.includes(n + ' of 3')",
                    arg=n,
                    timeout=60_000,
                )
                assert "flaky" in page.locator(".convlab-judge-candidate").inner_text()
                keys.click()
                keys.press(key)
            page.wait_for_function(
                "() => document.querySelector('.convlab-judge-progress')"
                ".innerText.includes('all judged')",
                timeout=60_000,
            )
            assert "all judged" in progress.inner_text()
        finally:
            browser.close()
    lines = [json.loads(x) for x in qrels.read_text().splitlines()]
    assert [(x["doc_id"], x["grade"], x["assessor"]) for x in lines] == [
        ("c:m0", 2, "browser"),
        ("c:m1", 1, "browser"),
        ("c:m2", 0, "browser"),
    ]
