"""Size limits of the safe opener: a file over its kind's limit is refused, naming both."""

from __future__ import annotations

from pathlib import Path

import pytest

from convlab.errors import LoadError
from convlab.files import CONFIG, TABLE, Limit, read_regular, read_text_regular


def test_a_file_over_its_limit_is_refused_naming_it_and_the_limit(tmp_path: Path) -> None:
    big = tmp_path / "systems.toml"
    with big.open("wb") as fh:  # sparse: no disk is used
        fh.truncate(CONFIG.size + 1)
    with pytest.raises(LoadError) as info:
        read_text_regular(big, limit=CONFIG)
    assert (
        str(info.value)
        == f"{big}:0: larger than the 16 MiB limit for a config file (it holds 16.0 MiB)"
    )
    assert read_regular(big, limit=CONFIG.size + 1) == b"\0" * (CONFIG.size + 1)
    small = tmp_path / "small"
    small.write_bytes(b"12345")
    with pytest.raises(LoadError, match="larger than the 4 bytes limit for this file"):
        read_regular(small, limit=4)
    assert Limit(1 << 30, "a table file") == TABLE


def test_a_file_whose_size_lies_is_cut_at_the_limit() -> None:
    status = Path("/proc/self/status")  # a regular file whose stat size is 0
    with pytest.raises(LoadError, match=r"larger than the 10 bytes limit for x$"):
        read_regular(status, limit=Limit(10, "x"))


def test_invalid_utf8_names_its_line(tmp_path: Path) -> None:
    f = tmp_path / "q.jsonl"
    f.write_bytes(b"ok\nok\n\xff\n")
    with pytest.raises(LoadError, match=r"q\.jsonl:3: invalid UTF-8"):
        read_text_regular(f, limit=TABLE)
