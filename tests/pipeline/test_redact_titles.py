"""A title made of the first prompt is made again from the redacted prompt."""

from __future__ import annotations

from convlab.loaders.base import CorpusBuilder
from convlab.loaders.blocks import BlockRow
from convlab.loaders.corpus import titled_by_first_prompt
from convlab.pipeline.redact import redact_corpus

TOKEN = "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"  # a GitHub token shape (40 characters)


def test_a_secret_cut_by_the_titles_clip_is_not_kept() -> None:
    # the prompt is 42 + 40 + 17 characters: the 80-character title ends inside the token, where
    # the token rule no longer matches; the title must come from the redacted prompt instead
    prompt = f"git push says auth failed. I made a token {TOKEN} with repo scope"
    b = CorpusBuilder()
    b.conversation("s", source_format="t", source_path="t")
    b.message(
        "s", "user", [BlockRow("text", prompt)], source_path="t", source_line=1, is_real_user=True
    )
    loaded = titled_by_first_prompt(b.build())
    assert loaded.conversations["title"].item() == prompt[:79] + "…"  # holds 37 token chars
    title = redact_corpus(loaded, "all").conversations["title"].item()
    assert title.startswith("git push says auth failed. I made a token [REDACTED:")
    assert TOKEN[:16] not in title
