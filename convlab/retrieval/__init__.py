"""Search: filters, dense or lexical retrieval, best unit per doc, rankers."""
