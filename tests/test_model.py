"""The token constants have one home, convlab.model, and every other module imports them."""

from __future__ import annotations

import ast
from pathlib import Path

from convlab import model

PACKAGE = Path(model.__file__).parent
# MIN_TOKENS joins these once the store's own copy (store/config.py, issue 24's store work) is gone
ONE_HOME = {"MAX_TOKENS", "SPECIAL_TOKENS", "MAX_CONTENT_TOKENS"}


def test_the_constants_are_the_models_limit_and_its_two_special_tokens() -> None:
    assert model.MAX_TOKENS == 256  # all-MiniLM-L6-v2's max_seq_length
    assert model.SPECIAL_TOKENS == 2  # [CLS] and [SEP]
    assert model.MAX_CONTENT_TOKENS == 254
    assert model.MIN_TOKENS == 8


def test_no_other_module_defines_a_token_constant() -> None:
    defined = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "model.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            defined += [
                f"{path.relative_to(PACKAGE)}: {t.id}"
                for t in targets
                if isinstance(t, ast.Name) and t.id in ONE_HOME
            ]
    assert defined == []
