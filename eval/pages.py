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

This is a program over files, not a library function: it reads JSON and Markdown and imports
nothing of ``convlab``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROG = "python -m eval.pages"
RUN_FILES = ("report.md", "metrics.json", "config.json")
COMMIT = re.compile(r"[0-9a-f]{40}")
TIMED = re.compile(r'^\s*Command being timed: "(.*)"\s*$')
EXIT = re.compile(r"^\s*Exit status: (\d+)\s*$")
IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


class RunError(Exception):
    """A run folder that cannot be made into a page; the message names the file."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """What made a run: the command line, the commit, and the files that recorded them."""

    command: str
    commit: str
    recorded_in: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("empty command")
        if not COMMIT.fullmatch(self.commit):
            raise ValueError(f"not a commit (40 hex digits): {self.commit!r}")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise RunError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    if not isinstance(value, dict):
        raise RunError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def _from_config(config: dict[str, Any], path: Path) -> Provenance | None:
    """``command`` and ``commit`` recorded in ``config.json`` (both, or neither)."""
    command, commit = config.get("command"), config.get("commit")
    if command is None and commit is None:
        return None
    if commit is None and config.get("commit_state") in ("modified", "unknown"):
        raise RunError(
            f"{path}: the run was made from a {config['commit_state']} source tree, "
            "so no commit made it; rerun it from a clean checkout"
        )
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        command = shlex.join(command)
    if not isinstance(command, str) or not isinstance(commit, str):
        raise RunError(f"{path}: 'command' and 'commit' must both be recorded, as text")
    try:
        return Provenance(command=command, commit=commit.strip(), recorded_in=(str(path),))
    except ValueError as e:
        raise RunError(f"{path}: {e}") from None


def _timed_command(log: Path) -> str:
    """The one command GNU time recorded in ``log``; refused unless it exited 0."""
    commands: list[str] = []
    status: int | None = None
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if m := TIMED.match(line):
            commands.append(m.group(1))
        elif m := EXIT.match(line):
            status = int(m.group(1))
    if len(commands) != 1:
        raise RunError(f"{log}: expected one 'Command being timed' line, found {len(commands)}")
    if status != 0:
        raise RunError(f"{log}: the run did not exit 0 (Exit status: {status})")
    return commands[0]


def _names_run(command: str, run: Path) -> bool:
    """Whether the command's ``--out`` is this run folder (a relative one: its last parts)."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    outs = [b for a, b in itertools.pairwise(argv) if a == "--out"]
    outs += [a.removeprefix("--out=") for a in argv if a.startswith("--out=")]
    for out in map(Path, outs):
        if out.is_absolute():
            if out.resolve() == run.resolve():
                return True
        elif out.parts and run.resolve().parts[-len(out.parts) :] == out.parts:
            return True
    return False


def _from_sidecars(run: Path) -> Provenance | None:
    """``RUN.commit`` and ``RUN.log`` beside the run folder (both, or neither)."""
    commit_file, log = run.parent / f"{run.name}.commit", run.parent / f"{run.name}.log"
    if not commit_file.is_file() and not log.is_file():
        return None
    for path in (commit_file, log):
        if not path.is_file():
            raise RunError(f"{path}: missing (the run's commit and its timed log go together)")
    commit = commit_file.read_text(encoding="utf-8").strip()
    if not COMMIT.fullmatch(commit):
        raise RunError(f"{commit_file}: not a commit (40 hex digits): {commit[:60]!r}")
    command = _timed_command(log)
    if not _names_run(command, run):
        raise RunError(f"{log}: its command's --out is not {run}: {command[:200]}")
    return Provenance(command=command, commit=commit, recorded_in=(str(commit_file), str(log)))


def provenance(run: Path, config: dict[str, Any]) -> Provenance:
    """The command and commit that made ``run``, from what the run recorded, or ``RunError``."""
    found = _from_config(config, run / "config.json") or _from_sidecars(run)
    if found is None:
        raise RunError(
            f"{run}: no record of the command and commit that made it (config.json has no "
            f"'command'/'commit', and {run.name}.commit and {run.name}.log are not beside it); "
            "no page is written for a run whose provenance is unknown"
        )
    return found


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
    prov = provenance(run, config)
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
