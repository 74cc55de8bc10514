"""Write the notebooks (thin: a config cell, then calls into convlab). Outputs are not committed."""

from __future__ import annotations

from pathlib import Path

import nbformat as nbf

HERE = Path(__file__).resolve().parent

CONFIG = """# Configuration: change these and run all cells.
from pathlib import Path

DATA = None  # None = the bundled sample (data/sample); or a folder / LoCoMo json path
STRATEGIES = ["isolated", "message", "turn_pair", "sequential", "whole_turn", "qa_pair"]
BUDGETS = [128, 256, 512, 1024, 2048]
CACHE = Path("../runs/cache")  # embeddings are cached here across notebooks and runs"""

NOTEBOOKS = {
    "01_load_and_explore": [
        (
            "md",
            "# 1. Load and explore\nLoad a corpus into frames and look at turns, chunks and "
            "what the content policy keeps.",
        ),
        ("code", CONFIG),
        (
            "code",
            "import polars as pl\nimport convlab\n"
            "from convlab.pipeline import policy_summary, turn_report\n\n"
            "data = convlab.load_labelled(DATA)\ncorpus = data.corpus\ncorpus",
        ),
        ("code", "corpus.conversations.to_pandas()"),
        ("code", "corpus.messages.group_by('role').len().sort('role')"),
        ("code", "turns = convlab.turns(corpus)\nturn_report(corpus)"),
        (
            "code",
            "chunks = convlab.chunks(corpus, convlab.ContentPolicy())\n"
            "chunks.group_by('role').agg(pl.len().alias('chunks'), "
            "pl.col('n_tokens').sum().alias('tokens'), pl.col('n_tokens').mean().alias('mean'))",
        ),
        (
            "code",
            "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(7, 4))\n"
            "for role, part in chunks.group_by('role'):\n"
            "    ax.hist(part['n_tokens'].to_numpy(), bins=40, alpha=0.5, label=role[0])\n"
            "ax.set(title='Tokens per chunk, by role', xlabel='tokens', ylabel='chunks')\n"
            "ax.legend();",
        ),
        ("md", "What the default policy keeps and drops (blocks and characters):"),
        ("code", "policy_summary(corpus, convlab.ContentPolicy())"),
    ],
    "02_strategy_anatomy": [
        (
            "md",
            "# 2. Strategy anatomy\nFor one turn, what each strategy embeds: the target chunk "
            "and, apart, the context it is embedded with.",
        ),
        ("code", CONFIG),
        (
            "code",
            "import polars as pl\nimport convlab\nfrom convlab.evaluation import plots\n"
            "from convlab.pipeline import turn_anatomy\n"
            "from convlab.embed import CachedEmbedder, MiniLMEmbedder\n\n"
            "data = convlab.load_labelled(DATA)\ncorpus = data.corpus\n"
            "chunks = convlab.chunks(corpus, convlab.ContentPolicy())\n"
            "TURN = chunks['conversation_id'][0] + ':t1'",
        ),
        (
            "code",
            "pl.Config.set_fmt_str_lengths(120)\nturn_anatomy(chunks, TURN, STRATEGIES)",
        ),
        (
            "code",
            "units = {s: convlab.units(chunks, s) for s in STRATEGIES}\n"
            "pl.DataFrame({'strategy': list(units), 'units': [u.height for u in units.values()],"
            " 'mean tokens': [u['n_tokens'].mean() for u in units.values()],"
            " 'max tokens': [u['n_tokens'].max() for u in units.values()]})",
        ),
        ("code", "plots.unit_lengths(units);"),
        (
            "code",
            "emb = CachedEmbedder(MiniLMEmbedder(), CACHE)\n"
            "built = convlab.build_index(corpus, 'turn_pair', embedder=emb, given=convlab.Given(chunks))\n"
            "u, vectors, index = built.units, built.vectors, built.index\n"
            "query = data.queries['text'][0]\n"
            "hits = convlab.search(index, query, 5, embedder=emb)\n"
            "rows = [u['unit_id'].to_list().index(x) for x in hits['unit_id']]\n"
            "plots.unit_map(vectors, u['conversation_id'].to_list(), "
            "query=emb.encode([query])[0], hit_rows=rows, "
            "title=f'turn_pair units; query: {query!r}');",
        ),
    ],
    "03_retrieval_eval": [
        (
            "md",
            "# 3. Retrieval evaluation\nThe strategy comparison on labelled queries: which way "
            "of embedding finds the right turns, and whether the differences are real.",
        ),
        ("code", CONFIG),
        (
            "code",
            "import polars as pl\nfrom convlab import EvalConfig, evaluate, load_labelled\n"
            "from convlab.embed import CachedEmbedder, MiniLMEmbedder\n"
            "from convlab.evaluation import plots\nfrom convlab.systems import default_systems\n"
            "pl.Config.set_tbl_rows(50)  # every system's row\n"
            "\n"
            "data = load_labelled(DATA)\n"
            "ev = evaluate(data, default_systems(STRATEGIES), "
            "embedder=CachedEmbedder(MiniLMEmbedder(), CACHE), "
            "config=EvalConfig(budgets=tuple(BUDGETS)))",
        ),
        (
            "md",
            "`*` marks a difference from the baseline that holds (paired randomization test, "
            "Holm-corrected, p < 0.05).",
        ),
        ("code", "comparison = ev.headline()\ncomparison"),
        ("md", "The same per question category, tested inside each category."),
        ("code", "ev.category_headline()"),
        ("code", "plots.recall_at_k(ev.summary);"),
        ("code", "plots.recall_by_category(ev.by_category);"),
        ("code", "ev.significance.filter(pl.col('metric') == 'recall@5')"),
        (
            "md",
            "## Systems as data: several views fused\n"
            "A system is a record: one or more *views* (a strategy's units, searched densely or "
            "by BM25), a fusion of their doc rankings, rankers and a resurrection policy. "
            "`fusion:convex` and `fusion:rrf` above fuse BM25 over messages, sequential windows "
            "and turn pairs with the dense sequential and turn-pair views; their weights are "
            "chosen by cross-validation grouped by conversation, so their figures are held-out "
            "figures. Each fold's choice:",
        ),
        (
            "code",
            "ev.tuning.select('system', 'fold', 'params', 'train_mean', 'test_mean', "
            "'test_groups')",
        ),
        (
            "md",
            "A system of your own, with weights fixed by hand (not tuned: on these very "
            "queries such a figure is optimistic), compared with the two views it fuses:",
        ),
        (
            "code",
            "from convlab import System\n\n"
            "mine = [\n"
            "    System(name='bm25:sequential', strategy='sequential', retrieval='bm25'),\n"
            "    System(name='sequential', strategy='sequential'),\n"
            "    System(name='bm25+dense', views=('bm25:sequential', 'sequential'),\n"
            "           fusion='convex', fusion_params={'norm': 'z-score'}, weights=(1.0, 0.5)),\n"
            "]\n"
            "ev_mine = evaluate(data, mine, embedder=CachedEmbedder(MiniLMEmbedder(), CACHE), "
            "config=EvalConfig(budgets=tuple(BUDGETS)))\n"
            "ev_mine.headline()",
        ),
    ],
    "04_resurrection_budgets": [
        (
            "md",
            "# 4. Resurrection budgets\nHow much evidence each strategy brings back into a "
            "context for a token budget, which resurrection policy spends the budget best, and "
            "one query walked through step by step.",
        ),
        ("code", CONFIG),
        (
            "code",
            "import polars as pl\nimport convlab\nfrom convlab import EvalConfig, evaluate, load_labelled\n"
            "from convlab.embed import CachedEmbedder, MiniLMEmbedder\n"
            "from convlab.evaluation import plots\nfrom convlab.systems import default_systems\n\n"
            "data = load_labelled(DATA)\n"
            "POLICIES = ('unit', 'doc', 'window', 'pair', 'unit+doc')\n"
            "ev = evaluate(data, default_systems(STRATEGIES), "
            "embedder=CachedEmbedder(MiniLMEmbedder(), CACHE), "
            "config=EvalConfig(budgets=tuple(BUDGETS), resurrection=POLICIES))",
        ),
        ("code", "plots.coverage_by_budget(ev.budgets);"),
        (
            "md",
            "Strict coverage gives no credit for half of a long turn; evidence token recall does.",
        ),
        ("code", "plots.coverage_by_budget(ev.budgets, measure='evidence_token_recall');"),
        (
            "code",
            "ev.budgets.group_by('system', 'budget').agg(pl.col('coverage').mean(), "
            "pl.col('evidence_token_recall').mean(), "
            "pl.col('answer_contained').mean(), pl.col('tokens_used').mean(), "
            "pl.col('redundancy').mean()).sort('system', 'budget')",
        ),
        (
            "md",
            "## Resurrection policies at equal budgets\n"
            "Each system's hits brought back by each policy: `unit` (exactly what was embedded "
            "together), `doc` (the whole utterance or turn), `window` (the doc and its "
            "neighbours), `pair` (the doc and its question or answer), `unit+doc`. Answer "
            "containment and coverage against the tokens they cost, one line per (system, "
            "policy):",
        ),
        (
            "code",
            "from convlab.evaluation import grid_means, grid_significance, plot_systems\n\n"
            "means = grid_means(ev.policy_budgets)\n"
            "plots.policy_grid(means, systems=plot_systems(ev.policy_budgets, "
            "baseline='message'));",
        ),
        (
            "md",
            "Each cell against `message` + `unit` at the same budget (paired randomization, "
            "Holm over the grid), and the efficiency question: does the best cell at 512 "
            "tokens cover as much as `message` + `unit` at 1,024?",
        ),
        (
            "code",
            "tests = grid_significance(ev.policy_budgets, baseline='message')\n"
            "(tests.filter(pl.col('test') == 'grid', pl.col('budget') == 512, "
            "pl.col('metric') == 'coverage')\n"
            " .select('system', 'policy', 'mean', 'delta', 'p_holm', 'significant')\n"
            " .sort('mean', descending=True).head(10))",
        ),
        ("code", "tests.filter(pl.col('test') == 'efficiency')"),
        ("md", "One query, step by step: the hits in rank order and what each brings back."),
        (
            "code",
            "q = data.queries.row(0, named=True)\nprint(q['text'], '->', q['relevant'])\n"
            "hits = ev.hits['turn_pair'].filter(pl.col('query_id') == q['query_id']).head(8)\n"
            "chunks = convlab.chunks(data.corpus, convlab.ContentPolicy())\n"
            "for n in range(1, hits.height + 1):\n"
            "    r = convlab.resurrect(hits['unit_id'].head(n), 512, "
            "units=ev.units['turn_pair'], chunks=chunks)\n"
            "    print(f\"hit {n}: {hits['doc_id'][n-1]:<28} tokens {r.tokens_used:>4}/512 "
            'skipped {r.hits_skipped}")',
        ),
        ("code", "r.context.select('turn_index', 'role', 'n_tokens', 'is_target', 'text')"),
    ],
    "05_search_panel": [
        (
            "md",
            "# 5. Search panel\nAsk *when did we discuss X?* and see the moment: press Enter "
            "to search, expand a result to see the context it resurrects. The panel opens on "
            "the default system (the fusion `convlab search` uses); the *System* menu lists "
            "the other systems its views can run.",
        ),
        ("code", CONFIG),
        (
            "code",
            "from convlab import sample_data_path\nfrom convlab.app import SearchPanel\n"
            "from convlab.embed import MiniLMEmbedder\n\n"
            "source = DATA or sample_data_path() / 'transcripts'\n"
            "panel = SearchPanel.from_data(source, embedder=MiniLMEmbedder(), cache_dir=CACHE)\n"
            "panel",
        ),
    ],
}


def build() -> None:
    for name, cells in NOTEBOOKS.items():
        nb = nbf.v4.new_notebook()
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.cells = [
            nbf.v4.new_markdown_cell(src) if kind == "md" else nbf.v4.new_code_cell(src)
            for kind, src in cells
        ]
        for i, cell in enumerate(nb.cells):
            cell["id"] = f"{name[:2]}-{i:02d}"
        nbf.write(nb, HERE / f"{name}.ipynb")


if __name__ == "__main__":
    build()
