"""The judge panel in a real browser: JupyterLab in Debian's chromium, driven by Playwright.

A notebook builds a pool of three candidates and opens
:class:`convlab.app.judge_panel.JudgePanel` on a
qrels file; the test judges all three with the keyboard (r, p, n typed into the key box) and
checks that the file holds the three judgments. Playwright drives Debian's chromium
(``executable_path``); nothing is downloaded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.app.test_browser import CHROMIUM, TOKEN, _run_all_cells, jupyter_lab

REPO = Path(__file__).resolve().parents[2]

CELL = """
from convlab.judge import Candidate, JudgmentLog
from convlab.app.judge_panel import JudgePanel

pool = [
    Candidate("q1", "flaky fixture", f"c:m{i}", "c", f"the flaky fixture, take {i}", (), ())
    for i in range(3)
]
JudgePanel(pool, JudgmentLog(QRELS, assessor="browser"))
"""


@pytest.fixture(scope="module")
def judge_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
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
    with jupyter_lab(root) as url:
        yield url, qrels


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
