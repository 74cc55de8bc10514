"""Result pages of the docs site from run folders: ``python -m eval.pages RUN... --out DIR``.

One page per run folder of ``python -m eval.run`` (``report.md``, ``metrics.json``,
``config.json``), written as ``DIR/<run folder's name>.md``. Every page opens with the command that
generated it and the command and commit that made the run, so a figure on the site can be traced to
what made it. The pages are never edited by hand: run this again.

Where the command and commit come from, in this order (never invented):

1. ``config.json``'s ``command`` and ``commit``, which ``eval.run`` records (``commit_state``
   says whether the source was that commit: a run from a modified tree is refused);
2. beside the run folder, as the runs of this project record them: ``RUN.commit`` (the output of
   ``git rev-parse HEAD`` taken before the run, 40 hex digits) and ``RUN.log`` holding GNU time's
   ``Command being timed: "..."`` line (``/usr/bin/time -v python -m eval.run ...``), whose
   ``--out`` must name this run folder and whose ``Exit status`` must be 0.

A run with neither is refused (exit 2, one line naming the run folder and what is missing); no page
is written for it. Figures (``*.png``) stay in the run folder: the page names them.

This is a program over files: it reads JSON and Markdown, and the run's provenance through
:func:`convlab.evaluation.provenance.run_provenance` (which ``eval.frontier`` reads too).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

from convlab.evaluation.provenance import Provenance, RunError, run_provenance

PROG = "python -m eval.pages"
RUN_FILES = ("report.md", "metrics.json", "config.json")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(value, dict):
        raise RunError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def _report_body(report: str, run: Path) -> tuple[str, list[str]]:
    """The report one heading level down, its figures named instead of linked."""
    figures: list[str] = []

    def name_figure(m: re.Match[str]) -> str:
        figures.append(m.group(2))
        return f"*{m.group(1)}* (`{m.group(2)}`)"

    lines = []
    for line in report.splitlines():
        if line.startswith("#"):
            line = "#" + line
        lines.append(IMAGE.sub(name_figure, line))
    missing = [f for f in figures if not (run / f).is_file()]
    if missing:
        raise RunError(f"{run / 'report.md'}: names figures that are not in the run: {missing}")
    return "\n".join(lines).strip() + "\n", figures


def _facts(run: Path, config: dict[str, Any], prov: Provenance, metrics_sha: str) -> list[str]:
    """The run's facts as a two-column table, from ``config.json`` and the provenance."""
    data = config.get("data") or {}
    versions = config.get("versions") or {}
    rows = [
        ("run folder", f"`{run}`"),
        ("made by", f"`{prov.command}`"),
        ("commit", f"`{prov.commit}`"),
        ("provenance recorded in", ", ".join(f"`{p}`" for p in prov.recorded_in)),
        ("metrics.json sha256", f"`{metrics_sha}`"),
        ("data", f"{data.get('name', '?')} (fingerprint `{data.get('fingerprint', '?')}`)"),
        ("conversations / queries", f"{data.get('conversations', '?')} / {data.get('queries')}"),
        (
            "model",
            f"`{config.get('model_id', '?')}` on {config.get('device', 'an unrecorded device')}",
        ),
        ("baseline", f"`{config.get('baseline', '?')}`"),
        ("seconds", str(config.get("seconds", "?"))),
        ("versions", ", ".join(f"{k} {v}" for k, v in versions.items()) or "?"),
    ]
    for name, tuned in (config.get("tuned") or {}).items():
        weights = ", ".join(str(w) for w in tuned.get("weights", []))
        how = f"cross-validated, {tuned.get('folds')} folds; " if tuned.get("cv") else ""
        rows.append(
            (
                f"tuned `{name}`",
                f"weights {weights}, params {tuned.get('params') or {}} ({how}the choice on all "
                "queries, as in `systems.chosen.toml`)",
            )
        )
    return ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)]


def render(run: Path, generated_by: str) -> str:
    """The page of one run folder; ``RunError`` when a file is missing or says too little."""
    for name in RUN_FILES:
        if not (run / name).is_file():
            raise RunError(f"{run / name}: missing (a run folder of python -m eval.run holds it)")
    config = _read_json(run / "config.json")
    _read_json(run / "metrics.json")  # a page is made only from a run whose metrics parse
    metrics_sha = hashlib.sha256((run / "metrics.json").read_bytes()).hexdigest()
    prov = run_provenance(run, config)
    body, figures = _report_body((run / "report.md").read_text(encoding="utf-8"), run)
    data_name = (config.get("data") or {}).get("name", run.name)
    header = [
        f"# Results: {data_name} (run `{run.name}`)",
        "",
        f"Generated by `{generated_by}` from run `{run}` made by `{prov.command}` at commit "
        f"{prov.commit}. Do not edit this page: run that command again.",
        "",
        *_facts(run, config, prov, metrics_sha),
        "",
    ]
    if figures:
        header += [f"Figures, in the run folder: {', '.join(f'`{f}`' for f in figures)}.", ""]
    return "\n".join(header) + "\n" + body


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Write one docs page per run folder of python -m eval.run, headed by the "
        "command and commit that made it (read from what the run recorded; a run without them "
        "is refused).",
    )
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR", help="a run folder")
    p.add_argument("--out", type=Path, required=True, help="folder of the pages (RUN_NAME.md)")
    return p


def main(argv: list[str] | None = None) -> int:
    """Render every run first, then write the pages: one bad run writes none (exit 2)."""
    args = _parser().parse_args(argv)
    generated_by = shlex.join([*PROG.split(), *(sys.argv[1:] if argv is None else argv)])
    names = [run.name for run in args.runs]
    if len(set(names)) != len(names):
        print(f"{PROG}: two run folders share a name (one page each): {names}", file=sys.stderr)
        return 2
    pages: dict[str, str] = {}
    for run in args.runs:
        try:
            pages[run.name] = render(run, generated_by)
        except (RunError, OSError, UnicodeDecodeError) as e:
            print(f"{PROG}: {e}".replace("\n", " "), file=sys.stderr)
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for name, page in pages.items():
        path = args.out / f"{name}.md"
        tmp = path.with_suffix(".md.tmp")
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(path)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
