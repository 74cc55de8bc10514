"""Hostile experiment files: each is refused before any work, exit 2, one line naming file and key.

Every kind is fed to both command lines of the comparison, ``python -m eval.run --systems``
(:func:`convlab.app.cli.eval.main`) and ``convlab eval --systems``; the comparison itself is
replaced by a function that fails the test, so a file that slips through is caught at once
instead of running an evaluation. A hypothesis test fuzzes experiment files; a few kinds run as a
real ``python -m eval.run`` process.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest
import tomli_w
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from convlab.app.cli import eval as eval_cli
from convlab.app.cli import main as convlab_main
from convlab.evaluation import compare
from convlab.paths import REPO_ROOT
from convlab.systems.file import read_systems
from convlab.systems.names import escaped

ONE = "[[systems]]\nname = 'x'\n"
FUSED = "[[systems]]\nname = 'f'\nviews = ['bm25:message', 'sequential']\n"
DEEP = 100_000
GRID = ", ".join(str(i / 1000) for i in range(1001))  # 1,001 weights

# (kind, the file's text, extra options, what the one line must say)
HOSTILE: list[tuple[str, str | bytes, list[str], str]] = [
    ("unknown top key", "defualts = true\n", [], "unknown key 'defualts'"),
    ("unknown system key", ONE + "strategy = 'message'\nwieghts = [1]\n", [], "'wieghts'"),
    ("unknown tuning key", FUSED + "tuning = { fold = 3 }\n", [], "'fold'"),
    ("unknown options key", ONE + "strategy = 'message'\noptions = { kk = 3 }\n", [], "'kk'"),
    ("defaults a string", 'defaults = "yes"\n', [], "defaults: Expected `bool`, got `str`"),
    ("defaults a number", "defaults = 1\n", [], "defaults: Expected `bool`"),
    ("systems a string", 'systems = "x"\n', [], "systems: Expected `array`"),
    ("systems of numbers", "systems = [1, 2]\n", [], "systems[0]: Expected `object`"),
    ("no name", "[[systems]]\nstrategy = 'message'\n", [], "missing required field `name`"),
    ("name a number", "[[systems]]\nname = 1\nstrategy = 'message'\n", [], "systems[0].name"),
    ("name empty", "[[systems]]\nname = ''\nstrategy = 'message'\n", [], "systems[0].name"),
    ("name blank", "[[systems]]\nname = '  '\nstrategy = 'message'\n", [], "name is empty"),
    ("name with ESC", '[[systems]]\nname = "a\\u001b[31m"\nstrategy = "message"\n', [], "\\x1b"),
    ("name with newline", '[[systems]]\nname = "a\\nb"\nstrategy = "message"\n', [], "\\x0a"),
    ("name with NUL", '[[systems]]\nname = "a\\u0000"\nstrategy = "message"\n', [], "\\x00"),
    ("name with RLO", '[[systems]]\nname = "a\\u202eb"\nstrategy = "message"\n', [], "\\u202e"),
    ("name too long", f"[[systems]]\nname = '{'n' * 201}'\nstrategy = 'message'\n", [], "<= 200"),
    (
        "names twice",
        "[[systems]]\nname = 'a'\nstrategy = 'message'\n"
        "[[systems]]\nname = 'a'\nstrategy = 'isolated'\n",
        [],
        "systems[1].name: 'a' is the name of systems[0] too",
    ),
    (
        "a default's name",
        "defaults = true\n[[systems]]\nname = 'isolated'\nstrategy = 'message'\n",
        [],
        "'isolated' is the name of a default system",
    ),
    ("unknown strategy", ONE + "strategy = 'nope'\n", [], "nope"),
    ("strategy a number", ONE + "strategy = 3\n", [], "systems[0].strategy"),
    ("unknown retrieval", ONE + "strategy = 'message'\nretrieval = 'sparse'\n", [], "retrieval"),
    ("views of numbers", "[[systems]]\nname = 'v'\nviews = [1, 2]\n", [], "systems[0].views[0]"),
    ("views empty", "[[systems]]\nname = 'v'\nviews = []\n", [], "length >= 1"),
    ("views unknown", "[[systems]]\nname = 'v'\nviews = ['bm25:nope', 'message']\n", [], "nope"),
    ("views bad prefix", "[[systems]]\nname = 'v'\nviews = ['x:message', 'message']\n", [], "'x'"),
    ("views twice", "[[systems]]\nname = 'v'\nviews = ['message', 'message']\n", [], "twice"),
    (
        "33 views",
        "[[systems]]\nname = 'v'\nviews = [" + ", ".join(["'message'"] * 33) + "]\n",
        [],
        "length <= 32",
    ),
    ("weights NaN", FUSED + "weights = [nan, 1.0]\n", [], "weights[0]"),
    ("weights inf", FUSED + "weights = [inf, 1.0]\n", [], "weights[0]"),
    ("weights negative", FUSED + "weights = [1.0, -0.5]\n", [], "weights[1]"),
    ("weights all 0", FUSED + "weights = [0.0, 0]\n", [], "every weight is 0"),
    ("weights miscounted", FUSED + "weights = [1.0, 1.0, 1.0]\n", [], "3 weights for 2 views"),
    ("weights a string", FUSED + "weights = '1,2'\n", [], "systems[0].weights"),
    ("weights on one view", ONE + "strategy = 'message'\nweights = [1.0]\n", [], "one view"),
    ("unknown fusion", FUSED + "fusion = 'nope'\n", [], "nope"),
    ("unknown norm", FUSED + "fusion_params = { norm = 'bogus' }\n", [], "norm: 'bogus'"),
    ("unknown parameter", FUSED + "fusion_params = { alpha = 1 }\n", [], "no such parameter"),
    ("rrf k NaN", FUSED + "fusion = 'rrf'\nfusion_params = { k = nan }\n", [], "fusion_params"),
    ("folds 1e9", FUSED + "tuning = { folds = 1000000000 }\n", [], "tuning.folds"),
    ("folds 1", FUSED + "tuning = { folds = 1 }\n", [], "tuning.folds"),
    ("folds a float", FUSED + "tuning = { folds = 2.5 }\n", [], "tuning.folds"),
    ("folds past int64", FUSED + "tuning = { folds = 99999999999999999999 }\n", [], "folds"),
    ("samples 0", FUSED + "tuning = { samples = 0 }\n", [], "tuning.samples"),
    ("samples 1e9", FUSED + "tuning = { samples = 1000000000 }\n", [], "tuning.samples"),
    ("seed negative", FUSED + "tuning = { seed = -1 }\n", [], "tuning.seed"),
    ("a 1,001-value grid", FUSED + f"tuning = {{ weights = [{GRID}] }}\n", [], "length <= 1000"),
    ("grid weights negative", FUSED + "tuning = { weights = [-1.0] }\n", [], "tuning.weights[0]"),
    (
        "a grid of 10^6 settings",
        "[[systems]]\nname = 'g'\n"
        "views = ['bm25:message', 'message', 'sequential', 'turn_pair', 'isolated']\n"
        "tuning = { weights = [" + ", ".join(str(i) for i in range(32)) + "] }\n",
        [],
        "the grid has 1,048,576 settings",
    ),
    (
        "a 1,001-value parameter",
        FUSED
        + "fusion = 'rrf'\ntuning = { params = { k = ["
        + ", ".join(map(str, range(1001)))
        + "] } }\n",
        [],
        "length <= 1000",
    ),
    ("unknown metric", FUSED + "tuning = { metric = 'nope@5' }\n", [], "nope"),
    ("tuning a number", FUSED + "tuning = 5\n", [], "systems[0].tuning"),
    ("options k 0", ONE + "strategy = 'message'\noptions = { k = 0 }\n", [], "options.k"),
    ("options mmr 2", ONE + "strategy = 'message'\noptions = { mmr = 2.0 }\n", [], "options.mmr"),
    ("options role", ONE + "strategy = 'message'\noptions = { roles = ['root'] }\n", [], "roles"),
    ("options since text", ONE + "strategy = 'message'\noptions = { since = 'x' }\n", [], "since"),
    ("unknown policy", ONE + "strategy = 'message'\nresurrection = 'nope'\n", [], "nope"),
    ("unknown text format", ONE + "strategy = 'message'\ntext = 'nope'\n", [], "nope"),
    ("deep array", "x = " + "[" * DEEP + "]" * DEEP + "\n", [], "nested too deep"),
    ("deep inline table", "x = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n", [], "too deep"),
    ("deep dotted key", "a" + ".a" * DEEP + " = 1\n", [], "line 1: a key dotted more than 64"),
    ("deep table header", "[" + ".".join(["t"] * DEEP) + "]\n", [], "dotted more than 64"),
    (
        "deep parameter",
        FUSED + "fusion_params." + ".".join(["norm"] * 64) + " = 1\n",
        [],
        "systems[0].fusion_params[...] ('f'): Expected `int | float | str`, got `object`",
    ),
    ("not TOML", "[[systems]\n", [], "not valid TOML"),
    ("not UTF-8", b"[[systems]]\nname = '\xff'\n", [], "UTF-8"),
    ("empty", "", [], "no systems"),
    ("no systems", "defaults = false\n", [], "no systems"),
    ("baseline not a system", ONE + "strategy = 'message'\n", ["--baseline", "nope"], "'nope'"),
    (
        "baseline with ESC",
        ONE + "strategy = 'message'\n",
        ["--baseline", "a\x1b[2J"],
        "--baseline 'a\\x1b[2J' is not one of the systems: 'x'",
    ),
    ("budgets not numbers", ONE + "strategy = 'message'\n", ["--budgets", "1e9"], "--budgets"),
    ("budgets absurd", ONE + "strategy = 'message'\n", ["--budgets", "9" * 20], "--budgets"),
]


def _refuse(*args: Any, **kwargs: Any) -> NoReturn:
    raise AssertionError("the comparison ran: the file was not refused before any work")


@pytest.fixture
def no_comparison(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compare, "run_comparison", _refuse)


def _write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "hostile.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err[:2000]
    assert "Traceback" not in err
    assert "\x1b" not in err
    assert "\x00" not in err
    return lines[0]


def test_there_are_48_kinds_or_more() -> None:
    assert len({kind for kind, *_ in HOSTILE}) == len(HOSTILE) >= 48


@pytest.mark.usefixtures("no_comparison")
@pytest.mark.parametrize(("kind", "text", "extra", "says"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_eval_run_refuses_each_hostile_file_with_2_and_one_line(
    kind: str,
    text: str | bytes,
    extra: list[str],
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, text)
    argv = ["--systems", str(path), "--out", str(tmp_path / "out"), *extra]
    assert eval_cli.main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("python -m eval.run: ")
    assert says in line
    if not extra:  # a fault of the file names the file
        assert str(path) in line
    assert not (tmp_path / "out").exists()


@pytest.mark.usefixtures("no_comparison")
@pytest.mark.parametrize(("kind", "text", "extra", "says"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_convlab_eval_refuses_each_hostile_file_with_2_and_one_line(
    kind: str,
    text: str | bytes,
    extra: list[str],
    says: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, text)
    argv = ["eval", "--systems", str(path), "--out", str(tmp_path / "out"), *extra]
    assert convlab_main(argv) == 2
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("convlab eval: ")
    assert says in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "kind", ["deep array", "weights NaN", "folds 1e9", "names twice", "baseline not a system"]
)
def test_a_real_eval_run_process_exits_2_with_one_line(kind: str, tmp_path: Path) -> None:
    _, text, extra, says = next(h for h in HOSTILE if h[0] == kind)
    path = _write(tmp_path, text)
    argv = ["--systems", str(path), "--out", str(tmp_path / "out"), "--data", str(tmp_path), *extra]
    done = subprocess.run(
        [sys.executable, "-m", "eval.run", *argv],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert says in _one_line(done.stderr)


# --- fuzzing -------------------------------------------------------------------------------------

_KEYS = [
    "name",
    "strategy",
    "retrieval",
    "views",
    "weights",
    "fusion",
    "fusion_params",
    "tuning",
    "options",
    "resurrection",
    "text",
    "wieghts",
]
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["message", "bm25:message", "sequential", "rrf", "z-score", "unit", "nope"])
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_KEYS), inner),
    max_leaves=12,
)
_system = st.dictionaries(st.sampled_from(_KEYS), _values, max_size=6)
_document = st.fixed_dictionaries(
    {},
    optional={
        "defaults": _values,
        "systems": st.lists(_system, max_size=3),
        "extra": _values,
    },
)


_VIEWS = ["message", "bm25:message", "sequential", "hybrid:turn_pair", "isolated"]
_numbers = st.integers(min_value=-(2**64), max_value=2**64) | st.floats()
_near_valid = st.fixed_dictionaries(
    {"name": st.text(min_size=0, max_size=30)},
    optional={
        "views": st.lists(st.sampled_from(_VIEWS), min_size=1, max_size=5),
        "weights": st.lists(_numbers, min_size=1, max_size=5),
        "fusion": st.sampled_from(["convex", "rrf", "combsum", "combmnz"]),
        "fusion_params": st.dictionaries(
            st.sampled_from(["norm", "k"]), st.sampled_from(["z-score", "none"]) | _numbers
        ),
        "tuning": st.fixed_dictionaries(
            {},
            optional={
                "weights": st.lists(_numbers, min_size=0, max_size=6),
                "folds": _numbers,
                "samples": _numbers,
                "seed": _numbers,
            },
        ),
        "resurrection": st.sampled_from(["unit", "doc", "window", "nope"]),
    },
).map(lambda d: d if "views" in d else {**d, "strategy": "message"})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(systems=st.lists(_near_valid, min_size=1, max_size=3), defaults=st.booleans())
def test_fuzzed_near_valid_systems_are_read_sane_or_refused_in_one_line(
    systems: list[dict[str, Any]], defaults: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = _toml({"defaults": defaults, "systems": systems})
    if text is not None:
        _check_one(tmp_path_factory.mktemp("fuzz") / "f.toml", text)


def _toml(doc: dict[str, Any]) -> str | None:
    """``doc`` as TOML (None when TOML cannot hold it: nulls, mixed arrays in old writers)."""
    try:
        return tomli_w.dumps(doc)
    except (TypeError, ValueError):
        return None


def _check_one(path: Path, text: str | bytes) -> None:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
    comparison = compare.Comparison(
        systems=str(path), strategies=("message", "sequential"), budgets=(128,)
    )
    try:
        systems = compare.comparison_systems(comparison)
    except ValueError as exc:
        message = str(exc)
        assert "\n" not in message
        assert "\x1b" not in message
        assert message.startswith((str(path), "cannot read the experiment file"))
        event("refused")
        return
    event("accepted")
    assert systems, "an accepted file has systems"
    for s in systems:  # whatever was accepted is sane
        assert s.name
        assert escaped(s.name) == s.name  # no control character, no bidirectional override
        assert all(math.isfinite(w) and w >= 0 for w in s.weights or ())
        assert s.tuning is None or 2 <= s.tuning.folds <= 100
        assert s.weights is None or any(s.weights)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=_document)
def test_fuzzed_experiment_documents_are_read_or_refused_in_one_line(
    doc: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    text = _toml(doc)
    if text is not None:
        _check_one(tmp_path_factory.mktemp("fuzz") / "f.toml", text)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=200) | st.text(max_size=200))
def test_fuzzed_experiment_bytes_are_read_or_refused_in_one_line(
    raw: bytes | str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _check_one(tmp_path_factory.mktemp("fuzz") / "f.toml", raw)


def test_a_valid_file_still_reads(tmp_path: Path) -> None:
    path = _write(tmp_path, FUSED + "fusion = 'rrf'\ntuning = { params = { k = [10, 60] } }\n")
    (system,) = read_systems(path)
    assert system.tuning is not None
    assert system.tuning.params == {"k": (10, 60)}
