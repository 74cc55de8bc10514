"""From messages to units: turns, chunks, the content policy, tokens, redaction, units."""
