"""Write the bundled sample corpus (data/sample) from the hand-written conversations below.

The conversations and the queries were written for convlab by its authors (MIT, like the
project). This script only lays them out in the two transcript formats the sample exercises:
Claude Code session JSONL (one content block per assistant line, lines sharing ``message.id``,
tool results as ``type:user`` carrier lines, a summary record, an injected ``isMeta`` line, an
interrupted prompt) and Amplifier session folders (``transcript.jsonl`` + ``metadata.json``, string
and block content, both ``tool_calls`` shapes, ``role: tool`` results, a duplicated
``thinking_block``). Run ``python data/build_sample.py`` to regenerate; the output is committed.

A turn is ``(user text, assistant text, tools)``, where tools are ``(name, input, output)``; the
turn index of a prompt is its position in the list (every prompt gets a reply, and the one
interrupted prompt is written before the turn it joins, as convlab's turn rule says).
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent / "sample"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

Tool = tuple[str, dict, str]
Turn = tuple[str, str, list[Tool]]

CONVERSATIONS: list[dict] = [
    {
        "id": "cc-flaky-fixture",
        "format": "claude_code",
        "day": 0,
        "title": "Flaky pytest fixture with a shared temp dir",
        "turns": [
            (
                "Our test suite fails maybe one run in five with FileExistsError in test_export. "
                "It never fails when I run the test alone. Can you look?",
                "A failure that only shows up in the full run usually means shared state between "
                "tests. Let me find where the export directory is created.",
                [
                    (
                        "Grep",
                        {"pattern": "export_dir", "path": "tests"},
                        "tests/conftest.py:14:    export_dir = Path('/tmp/exports')",
                    )
                ],
            ),
            (
                "What is wrong with that fixture?",
                "The fixture is session-scoped and hard-codes /tmp/exports, so two tests race on the "
                "same folder when pytest-xdist runs them in parallel workers. Switching it to the "
                "built-in tmp_path fixture gives every test its own directory and removes the race.",
                [
                    (
                        "Edit",
                        {
                            "file_path": "tests/conftest.py",
                            "old_string": "Path('/tmp/exports')",
                            "new_string": "tmp_path / 'exports'",
                        },
                        "The file was updated.",
                    )
                ],
            ),
            (
                "Tests pass now. Should the fixture scope change too?",
                "Yes, make it function-scoped, because tmp_path is function-scoped and a session "
                "fixture cannot depend on it. If setup is expensive, use tmp_path_factory in a "
                "session fixture and create one sub-folder per test instead.",
                [],
            ),
            (
                "Can we make the suite fail loudly if anything writes to /tmp directly again?",
                "You can add an autouse fixture that monkeypatches tempfile.tempdir to the test's "
                "tmp_path. Any code that still hard-codes /tmp will show up in code review, and a "
                "grep in CI for the literal string catches regressions.",
                [],
            ),
        ],
    },
    {
        "id": "cc-pg-index",
        "format": "claude_code",
        "day": 3,
        "title": "Adding an index to a large Postgres table without downtime",
        "turns": [
            (
                "The orders table has 80 million rows and lookups by customer_id are slow. "
                "How do I add an index without taking the site down?",
                "Use CREATE INDEX CONCURRENTLY. It builds the index without holding a lock that "
                "blocks writes, at the cost of a slower build and two table scans.",
                [
                    (
                        "Bash",
                        {
                            "command": 'psql -c "EXPLAIN ANALYZE SELECT * FROM orders WHERE '
                            'customer_id = 42"'
                        },
                        "Seq Scan on orders  (cost=0.00..1893440.00 rows=120 width=96) (actual "
                        "time=0.031..8211.4 rows=118 loops=1)",
                    )
                ],
            ),
            (
                "Can I run that inside our Alembic migration?",
                "Not inside a transaction: CREATE INDEX CONCURRENTLY refuses to run in a transaction "
                "block. In Alembic wrap the statement in op.get_context().autocommit_block() so it "
                "runs outside the migration's transaction.",
                [],
            ),
            (
                "The build failed halfway because of a deadlock. What state is the table in?",
                "A failed concurrent build leaves an INVALID index behind. It is not used by the "
                "planner but it still slows writes, so drop it with DROP INDEX CONCURRENTLY and "
                "run the build again.",
                [
                    (
                        "Bash",
                        {
                            "command": 'psql -c "SELECT indexrelid::regclass, indisvalid FROM '
                            'pg_index WHERE NOT indisvalid"'
                        },
                        " ix_orders_customer_id | f",
                    )
                ],
            ),
            (
                "After the rebuild, how do I confirm the planner uses it?",
                "Run EXPLAIN ANALYZE on the same query again: you should see an Index Scan using "
                "ix_orders_customer_id and the time should drop from seconds to milliseconds.",
                [],
            ),
        ],
    },
    {
        "id": "cc-react-double-fetch",
        "format": "claude_code",
        "day": 6,
        "title": "Dashboard fetches twice in development",
        "turns": [
            (
                "The dashboard calls /api/stats twice on every page load. Is our useEffect broken?",
                "In development React 18 StrictMode mounts, unmounts and mounts every component "
                "again, so an effect with a fetch runs twice. Production builds run it once.",
                [
                    (
                        "Read",
                        {"file_path": "src/Dashboard.tsx"},
                        "useEffect(() => { fetch('/api/stats').then(r => r.json()).then(setStats) }, [])",
                    )
                ],
            ),
            (
                "So it is harmless? The second response sometimes overwrites newer data.",
                "It is not harmless if responses race. Return a cleanup that aborts the request with "
                "an AbortController, so the first request is cancelled when the component unmounts.",
                [
                    (
                        "Edit",
                        {
                            "file_path": "src/Dashboard.tsx",
                            "new_string": "const ctrl = new AbortController(); fetch('/api/stats', "
                            "{signal: ctrl.signal}); return () => ctrl.abort()",
                        },
                        "The file was updated.",
                    )
                ],
            ),
            (
                "Would a data fetching library avoid all this?",
                "Yes. TanStack Query deduplicates identical requests and caches them, so two mounts "
                "share one network call. It also gives you retries and stale-while-revalidate.",
                [],
            ),
        ],
    },
    {
        "id": "cc-rust-borrow",
        "format": "claude_code",
        "day": 9,
        "title": "Borrow checker error in a Rust cache",
        "turns": [
            (
                "I get 'cannot borrow self.entries as mutable because it is also borrowed as "
                "immutable' in my LRU cache get method. Why?",
                "You hold a reference returned by self.entries.get while calling a method that "
                "needs &mut self. The immutable borrow lives until its last use, so the mutable "
                "call overlaps it.",
                [
                    (
                        "Read",
                        {"file_path": "src/cache.rs"},
                        "let v = self.entries.get(&k)?; self.touch(&k); Some(v)",
                    )
                ],
            ),
            (
                "How do I fix it without cloning the value?",
                "Do the mutation first and look the value up afterwards: call self.touch(&k) before "
                "self.entries.get(&k). Then the borrows no longer overlap and you can return the "
                "reference.",
                [],
            ),
            (
                "Could I use the entry API instead?",
                "The entry API helps when you insert or update, for example "
                "entries.entry(k).or_insert_with(load). For a pure read with bookkeeping, reordering "
                "the calls is simpler.",
                [],
            ),
        ],
    },
    {
        "id": "cc-nginx-ws",
        "format": "claude_code",
        "day": 12,
        "title": "nginx reverse proxy for websockets",
        "turns": [
            (
                "Our chat app works locally but websocket connections fail behind nginx with a "
                "400. What is missing?",
                "nginx does not forward the Upgrade handshake by default. You need "
                "proxy_http_version 1.1 and the Upgrade and Connection headers in the location "
                "block.",
                [
                    (
                        "Read",
                        {"file_path": "/etc/nginx/sites-enabled/chat"},
                        "location /ws/ { proxy_pass http://127.0.0.1:8000; }",
                    )
                ],
            ),
            (
                "Connections now open but drop after a minute of silence.",
                "That is proxy_read_timeout, 60 seconds by default. Raise it, for example to one "
                "hour, or send a ping frame from the server every 30 seconds so the link never "
                "looks idle.",
                [
                    (
                        "Bash",
                        {"command": "sudo nginx -t && sudo systemctl reload nginx"},
                        "nginx: configuration file /etc/nginx/nginx.conf test is successful",
                    )
                ],
            ),
            (
                "Do I need sticky sessions with two backends?",
                "If the socket state lives in one process, yes: use ip_hash in the upstream block, "
                "or move the state to Redis pub/sub so any backend can serve any client.",
                [],
            ),
        ],
    },
    {
        "id": "cc-node-leak",
        "format": "claude_code",
        "day": 15,
        "title": "Memory leak in a Node worker",
        "turns": [
            (
                "The queue worker's memory grows by about 200 MB an hour until the container is "
                "killed. Where do I start?",
                "Take two heap snapshots a few minutes apart and compare them. Objects whose count "
                "only grows between snapshots point at the leak.",
                [
                    (
                        "Bash",
                        {"command": "node --inspect=0.0.0.0:9229 worker.js"},
                        "Debugger listening on ws://0.0.0.0:9229/0f1c",
                    )
                ],
            ),
            (
                "The comparison shows thousands of closures retained by an EventEmitter.",
                "Every job adds a listener with emitter.on and never removes it. Use emitter.once "
                "for one-shot events, or call removeListener when the job finishes. Node also warns "
                "with MaxListenersExceededWarning when this happens.",
                [
                    (
                        "Grep",
                        {"pattern": "\\.on\\('progress'", "path": "src"},
                        "src/worker.js:88:  queue.on('progress', onProgress)",
                    )
                ],
            ),
            (
                "Fixed, memory is flat now. How do we catch this earlier next time?",
                "Export process.memoryUsage().heapUsed as a metric and alert on a steady slope over "
                "a few hours. A nightly soak test that runs ten thousand jobs would have shown it.",
                [],
            ),
        ],
    },
    {
        "id": "cc-makefile",
        "format": "claude_code",
        "day": 18,
        "title": "A Makefile for a Python project",
        "turns": [
            (
                "I want make test and make lint to create the virtualenv when it is missing. How?",
                "Make the venv a file target: a stamp file inside .venv that depends on "
                "pyproject.toml. Targets that need the environment depend on the stamp, so the "
                "install only reruns when the dependencies change.",
                [
                    (
                        "Write",
                        {
                            "file_path": "Makefile",
                            "content": ".venv/.stamp: pyproject.toml\n\tpython -m venv .venv",
                        },
                        "File created successfully",
                    )
                ],
            ),
            (
                "make says 'missing separator' on line 2.",
                "Recipe lines must start with a tab, not spaces. Your editor replaced the tab; set "
                "it to keep tabs in Makefiles.",
                [],
            ),
            (
                "How do I stop make from deleting the stamp when the install fails half way?",
                "Write the stamp last with touch, after pip succeeds. Add .DELETE_ON_ERROR so a "
                "failed recipe never leaves a target that looks up to date.",
                [],
            ),
        ],
    },
    {
        "id": "cc-docker-cache",
        "format": "claude_code",
        "day": 21,
        "title": "Docker layer caching",
        "turns": [
            (
                "Every docker build reinstalls all npm packages even when only one source file "
                "changed. Why?",
                "The Dockerfile copies the whole source tree before npm ci, so any change "
                "invalidates that layer. Copy package.json and package-lock.json first, run npm ci, "
                "then copy the rest.",
                [("Read", {"file_path": "Dockerfile"}, "COPY . .\nRUN npm ci\nRUN npm run build")],
            ),
            (
                "Builds in CI still start from scratch.",
                "CI runners start with an empty cache. Use BuildKit's cache export, for example "
                "--cache-to type=registry and --cache-from with the same reference, so the layers "
                "come from the registry.",
                [],
            ),
            (
                "Can I cache the npm download folder too?",
                "Yes, with a cache mount: RUN --mount=type=cache,target=/root/.npm npm ci. The "
                "folder persists across builds on the same builder without ending up in the image.",
                [],
            ),
        ],
    },
    {
        "id": "cc-git-rebase",
        "format": "claude_code",
        "day": 24,
        "title": "Resolving a rebase conflict",
        "turns": [
            (
                "I'm rebasing my feature branch onto main and git stopped with a conflict in "
                "settings.py. What now?",
                "Open the file, keep the lines you want between the conflict markers, then git add "
                "the file and run git rebase --continue. Repeat for each commit that conflicts.",
                [("Bash", {"command": "git status --short"}, "UU app/settings.py")],
            ),
            (
                "I resolved it wrong and the rebase finished. Can I undo it?",
                "Yes: the reflog still has your branch as it was before the rebase. Find the entry "
                "before 'rebase (start)' with git reflog and reset the branch to it with git reset "
                "--hard.",
                [
                    (
                        "Bash",
                        {"command": "git reflog -n 5"},
                        "a1b2c3d HEAD@{4}: commit: add feature flag",
                    )
                ],
            ),
            (
                "How do I avoid resolving the same conflict again on the next rebase?",
                "Turn on rerere with git config rerere.enabled true. Git records how you resolved "
                "a conflict and replays the resolution when the same hunk conflicts again.",
                [],
            ),
        ],
    },
    {
        "id": "cc-oauth-refresh",
        "format": "claude_code",
        "day": 27,
        "title": "OAuth token refresh races",
        "interrupted_at": 1,
        "turns": [
            (
                "Users get logged out randomly. The logs show invalid_grant from the token "
                "endpoint.",
                "invalid_grant on refresh usually means a refresh token was used twice. With "
                "rotating refresh tokens the first use invalidates it, so two tabs refreshing at "
                "once log the user out.",
                [
                    (
                        "Grep",
                        {"pattern": "refresh_token", "path": "web/src/auth"},
                        "web/src/auth/client.ts:31:  const res = await refresh(refresh_token)",
                    )
                ],
            ),
            (
                "How do we make only one refresh happen at a time?",
                "Keep a single in-flight refresh promise: the first caller starts the request and "
                "every other caller awaits the same promise. Across tabs, coordinate with a "
                "BroadcastChannel or the Web Locks API.",
                [],
            ),
            (
                "Should we refresh before the access token expires?",
                "Yes, refresh when about 80 percent of the lifetime has passed, with some jitter, "
                "so requests rarely hit an expired token and clients do not refresh in lockstep.",
                [],
            ),
        ],
    },
    {
        "id": "cc-pandas-groupby",
        "format": "claude_code",
        "day": 30,
        "title": "Slow pandas groupby",
        "turns": [
            (
                "This groupby apply over 5 million rows takes eight minutes. Any way to speed it "
                "up?",
                "apply with a Python function runs once per group in the interpreter. Replace it "
                "with built-in aggregations passed to agg, which run in vectorised code.",
                [
                    (
                        "Read",
                        {"file_path": "etl/daily.py"},
                        "df.groupby('store').apply(lambda g: g['amount'].sum() / g['visits'].sum())",
                    )
                ],
            ),
            (
                "I need a ratio of two sums per group, not a single column aggregate.",
                "Aggregate both sums with agg first and divide the resulting columns afterwards. "
                "That is two vectorised sums and one column division instead of five thousand "
                "Python calls.",
                [],
            ),
            (
                "The store column is a string with few distinct values. Does that matter?",
                "Convert it to the category dtype. Grouping on categorical codes is faster and uses "
                "less memory; pass observed=True so empty categories are not produced.",
                [],
            ),
        ],
    },
    {
        "id": "cc-iso-regex",
        "format": "claude_code",
        "day": 33,
        "title": "A regex for ISO 8601 dates",
        "turns": [
            (
                "I need a regex that accepts dates like 2026-03-14 and rejects 2026-13-01.",
                "Use ^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])$. It bounds the month to 01-12 "
                "and the day to 01-31, but it cannot know that February has 28 days.",
                [],
            ),
            (
                "Then how do I reject February 30?",
                "Do not push calendar rules into the regex. Match the shape with the regex, then "
                "call date.fromisoformat on the string and treat a ValueError as invalid.",
                [
                    (
                        "Bash",
                        {
                            "command": 'python -c "import datetime; '
                            "datetime.date.fromisoformat('2026-02-30')\""
                        },
                        "ValueError: day is out of range for month",
                    )
                ],
            ),
        ],
    },
    {
        "id": "amp-bash-traps",
        "format": "amplifier",
        "day": 36,
        "title": "Bash scripts with set -euo pipefail",
        "turns": [
            (
                "My deploy script keeps going after a failed curl. How do I make it stop?",
                "Start the script with set -euo pipefail. -e stops on a failing command, -u on an "
                "unset variable, and pipefail makes a pipeline fail when any command in it fails, "
                "not just the last one.",
                [],
            ),
            (
                "Now it exits but leaves the temp directory behind.",
                "Register a cleanup with trap 'rm -rf \"$tmpdir\"' EXIT right after mktemp. The "
                "EXIT trap runs however the script ends, including on errors from set -e.",
                [("bash", {"command": "grep -n mktemp deploy.sh"}, "12:tmpdir=$(mktemp -d)")],
            ),
            (
                "grep returning no match kills the script. How do I allow that?",
                "grep exits with 1 when nothing matches, and set -e treats that as a failure. "
                "Write grep ... || true where no match is fine, or test the status explicitly in "
                "an if.",
                [],
            ),
        ],
    },
    {
        "id": "amp-faiss-choice",
        "format": "amplifier",
        "day": 39,
        "title": "Choosing a FAISS index",
        "turns": [
            (
                "We have about 100k sentence embeddings of 384 dimensions. Which FAISS index "
                "should we use?",
                "At that size an exact IndexFlatIP is a reasonable default: one query scans 150 MB "
                "and takes tens of milliseconds. Use HNSW when you need sub-millisecond latency.",
                [],
            ),
            (
                "We do need low latency. How do we set up HNSW?",
                "Use IndexHNSWFlat with M around 32 and efConstruction 200, and raise efSearch "
                "well above the default of 16; measure recall at 10 against the exact index to "
                "pick it.",
                [
                    (
                        "python",
                        {
                            "code": "index = faiss.IndexHNSWFlat(384, 32, "
                            "faiss.METRIC_INNER_PRODUCT)"
                        },
                        "ok",
                    )
                ],
            ),
            (
                "Do we need to normalise the vectors for cosine similarity?",
                "Yes. Inner product equals cosine only for unit vectors, so L2-normalise both the "
                "stored vectors and the queries, or use faiss.normalize_L2 before adding.",
                [],
            ),
        ],
    },
    {
        "id": "amp-k8s-probes",
        "format": "amplifier",
        "day": 42,
        "title": "Kubernetes liveness probes restarting pods",
        "turns": [
            (
                "Our API pods restart every few minutes under load. kubectl describe shows "
                "liveness probe failures.",
                "Under load the /health endpoint answers slower than the probe timeout of one "
                "second, so Kubernetes kills healthy pods. Liveness should only fail when the "
                "process is truly stuck.",
                [
                    (
                        "bash",
                        {"command": "kubectl describe pod api-7d9f -n prod"},
                        "Liveness probe failed: Get http://10.0.3.4:8080/health: context deadline "
                        "exceeded",
                    )
                ],
            ),
            (
                "What should the liveness and readiness probes check?",
                "Readiness can check dependencies such as the database, so traffic stops going to "
                "a pod that cannot serve. Liveness should check only that the process responds, "
                "with a generous timeout and failureThreshold.",
                [],
            ),
            (
                "The app takes 90 seconds to warm up. Does that matter?",
                "Add a startupProbe. Liveness checks only begin after the startup probe succeeds, "
                "so slow starts no longer trigger restarts.",
                [],
            ),
        ],
    },
    {
        "id": "amp-csv-encoding",
        "format": "amplifier",
        "day": 45,
        "title": "CSV encoding errors",
        "turns": [
            (
                "pandas.read_csv fails with UnicodeDecodeError: 'utf-8' codec can't decode byte "
                "0xe9. The file comes from a partner's Excel export.",
                "The byte 0xe9 is an e with an acute accent in Windows-1252, so the file is not "
                "UTF-8. Read it with encoding='cp1252', or ask for a UTF-8 export.",
                [],
            ),
            (
                "Some files from the same partner are UTF-8 with a BOM. Can we handle both?",
                "Try encoding='utf-8-sig' first, which also strips the BOM, and fall back to cp1252 "
                "when decoding fails. Log which encoding was used for each file.",
                [("python", {"code": "open('orders.csv','rb').read(4)"}, "b'\\xef\\xbb\\xbfid'")],
            ),
        ],
    },
    {
        "id": "amp-gha-cache",
        "format": "amplifier",
        "day": 48,
        "title": "GitHub Actions dependency cache",
        "turns": [
            (
                "Our GitHub Actions workflow spends four minutes installing Python packages on "
                "every run.",
                "Cache pip's download folder with actions/cache keyed on the hash of your lock "
                "file, or use setup-python's built-in cache: pip option, which does the same.",
                [],
            ),
            (
                "The cache never seems to hit on pull requests.",
                "Caches created on a feature branch are not visible to other branches; pull "
                "requests can read caches from the base branch. Run the workflow once on main so "
                "pull requests have a cache to restore.",
                [],
            ),
            (
                "Can we cache the whole virtualenv instead?",
                "You can, keyed on the Python version and the lock file hash, but restore it only "
                "on an exact key match: a partially matching venv can silently keep stale "
                "packages.",
                [],
            ),
        ],
    },
    {
        "id": "amp-ts-generics",
        "format": "amplifier",
        "day": 51,
        "title": "TypeScript generics for an API client",
        "turns": [
            (
                "I want fetchJson to return the right type for each endpoint without casting "
                "everywhere.",
                "Describe the endpoints in one type map from path to response type, and make "
                "fetchJson generic over a key of that map: function fetchJson<P extends keyof Api>"
                "(path: P): Promise<Api[P]>.",
                [],
            ),
            (
                "TypeScript complains that P could be a number or a symbol.",
                "keyof includes number and symbol keys. Constrain it with P extends keyof Api & "
                "string, and the template literal for the URL type-checks.",
                [],
            ),
        ],
    },
    {
        "id": "amp-sqlite-wal",
        "format": "amplifier",
        "day": 54,
        "title": "SQLite database is locked",
        "turns": [
            (
                "Our small web app on SQLite throws 'database is locked' when two requests write "
                "at once.",
                "Switch the journal to write-ahead logging with PRAGMA journal_mode=WAL. Readers "
                "then no longer block the writer, and set a busy_timeout so a second writer waits "
                "instead of failing.",
                [("bash", {"command": "sqlite3 app.db 'PRAGMA journal_mode;'"}, "delete")],
            ),
            (
                "Is WAL safe on our network file share?",
                "No. WAL needs shared memory between processes on one host, so it does not work "
                "over NFS or SMB. Keep the database on local disk.",
                [],
            ),
        ],
    },
    {
        "id": "cc-timezones",
        "format": "claude_code",
        "day": 57,
        "title": "Timezone bug in scheduled reports",
        "turns": [
            (
                "The daily report for Sydney customers runs at the wrong hour since the clocks "
                "changed.",
                "The job stores a fixed UTC offset of +11:00, so it drifts by an hour when daylight "
                "saving ends. Store the IANA zone name, Australia/Sydney, and convert at run time.",
                [
                    (
                        "Grep",
                        {"pattern": "utcoffset|\\+11:00", "path": "reports"},
                        "reports/schedule.py:40:    tz = timezone(timedelta(hours=11))",
                    )
                ],
            ),
            (
                "Which library should we use for the zone data?",
                "Python's zoneinfo module from the standard library, with the tzdata package "
                "installed on systems that lack the IANA database.",
                [],
            ),
            (
                "How do we test the daylight saving change?",
                "Freeze time just before and after the transition in tests, for example with "
                "time-machine, and assert the job fires at 7:00 local time on both sides.",
                [],
            ),
        ],
    },
]

XSS_TURN: Turn = (
    "A user reported that a comment with HTML broke our page. What was the risk?",
    "That is cross-site scripting: the comment text was inserted into the page as HTML. A "
    "comment such as <script>alert(1)</script> or <img src=x onerror=alert(1)> runs code in "
    "every visitor's browser. Escape text before inserting it, or set textContent instead of "
    "innerHTML.",
    [],
)

QUERIES: list[dict] = [
    # (text, [(conversation, turn)], category, answer, scoped)
    {
        "t": "why did the export test fail only in the full test run",
        "r": [("cc-flaky-fixture", 1)],
        "c": "paraphrase",
        "a": "tmp_path",
    },
    {
        "t": "what did we use to build the postgres index without blocking writes",
        "r": [("cc-pg-index", 0)],
        "c": "single-hop",
        "a": "create index concurrently",
    },
    {
        "t": "which command showed the sequential scan on orders",
        "r": [("cc-pg-index", 0)],
        "c": "tool-usage",
        "a": "explain analyze",
    },
    {
        "t": "why does the stats endpoint get called two times in dev",
        "r": [("cc-react-double-fetch", 0)],
        "c": "paraphrase",
        "a": "strictmode",
    },
    {
        "t": "how to avoid cloning when the borrows overlap",
        "r": [("cc-rust-borrow", 1)],
        "c": "paraphrase",
        "a": "before",
    },
    {
        "t": "do we need sticky sessions for sockets with several backends",
        "r": [("cc-nginx-ws", 2)],
        "c": "single-hop",
        "a": "ip_hash",
    },
    {
        "t": "what metric should we alert on to catch leaks early",
        "r": [("cc-node-leak", 2)],
        "c": "single-hop",
        "a": "heapused",
    },
    {
        "t": "missing separator error in make",
        "r": [("cc-makefile", 1)],
        "c": "single-hop",
        "a": "tab",
    },
    {
        "t": "keep the npm download folder between builds without putting it in the image",
        "r": [("cc-docker-cache", 2)],
        "c": "paraphrase",
        "a": "type=cache",
    },
    {
        "t": "undo a rebase that went wrong",
        "r": [("cc-git-rebase", 1)],
        "c": "single-hop",
        "a": "reflog",
    },
    {
        "t": "remember how a conflict was resolved",
        "r": [("cc-git-rebase", 2)],
        "c": "paraphrase",
        "a": "rerere",
    },
    {
        "t": "which git command listed the conflicted file",
        "r": [("cc-git-rebase", 0)],
        "c": "tool-usage",
        "a": "git status",
    },
    {
        "t": "users logged out because the refresh token was used twice",
        "r": [("cc-oauth-refresh", 0)],
        "c": "paraphrase",
        "a": "invalid_grant",
    },
    {
        "t": "when to refresh the access token",
        "r": [("cc-oauth-refresh", 2)],
        "c": "single-hop",
        "a": "80 percent",
    },
    {
        "t": "ratio of two sums per store",
        "r": [("cc-pandas-groupby", 1)],
        "c": "single-hop",
        "a": None,
    },
    {
        "t": "reject impossible dates like february 30",
        "r": [("cc-iso-regex", 1)],
        "c": "single-hop",
        "a": "fromisoformat",
    },
    {
        "t": "deploy script continues after curl fails",
        "r": [("amp-bash-traps", 0)],
        "c": "paraphrase",
        "a": "pipefail",
    },
    {
        "t": "clean up the temporary directory when the script exits",
        "r": [("amp-bash-traps", 1)],
        "c": "single-hop",
        "a": "trap",
    },
    {
        "t": "grep with no match stops the script",
        "r": [("amp-bash-traps", 2)],
        "c": "single-hop",
        "a": "|| true",
    },
    {
        "t": "which faiss index for one hundred thousand vectors",
        "r": [("amp-faiss-choice", 0)],
        "c": "single-hop",
        "a": "indexflatip",
    },
    {
        "t": "pods restarted because the health check timed out under load",
        "r": [("amp-k8s-probes", 0)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "difference between readiness and liveness checks",
        "r": [("amp-k8s-probes", 1)],
        "c": "single-hop",
        "a": "readiness",
    },
    {
        "t": "slow application startup killed by probes",
        "r": [("amp-k8s-probes", 2)],
        "c": "paraphrase",
        "a": "startupprobe",
    },
    {
        "t": "codec can't decode byte 0xe9 from the partner export",
        "r": [("amp-csv-encoding", 0)],
        "c": "single-hop",
        "a": "cp1252",
    },
    {
        "t": "ci spends minutes installing python packages",
        "r": [("amp-gha-cache", 0)],
        "c": "paraphrase",
        "a": "actions/cache",
    },
    {
        "t": "cache misses on pull requests",
        "r": [("amp-gha-cache", 1)],
        "c": "single-hop",
        "a": "base branch",
    },
    {
        "t": "typed fetch helper per endpoint",
        "r": [("amp-ts-generics", 0)],
        "c": "paraphrase",
        "a": "keyof api",
    },
    {
        "t": "database is locked when two requests write",
        "r": [("amp-sqlite-wal", 0)],
        "c": "single-hop",
        "a": "journal_mode=wal",
    },
    {
        "t": "can we keep the sqlite database on a network share",
        "r": [("amp-sqlite-wal", 1)],
        "c": "paraphrase",
        "a": "local disk",
    },
    {
        "t": "report runs an hour off after daylight saving ended",
        "r": [("cc-timezones", 0)],
        "c": "paraphrase",
        "a": "australia/sydney",
    },
    {
        "t": "test the daylight saving transition",
        "r": [("cc-timezones", 2)],
        "c": "single-hop",
        "a": "time-machine",
    },
    {
        "t": "what did we learn about script injection through comments",
        "r": [("cc-react-double-fetch", 3)],
        "c": "single-hop",
        "a": "textcontent",
    },
    # multi-hop: two turns in different conversations
    {
        "t": "every time we fixed a problem with temporary directories",
        "r": [("cc-flaky-fixture", 1), ("amp-bash-traps", 1)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "connections dropped because of timeouts, in nginx and in kubernetes",
        "r": [("cc-nginx-ws", 1), ("amp-k8s-probes", 0)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "caching dependencies in docker builds and in github actions",
        "r": [("cc-docker-cache", 1), ("amp-gha-cache", 0)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "races between concurrent requests, on the frontend and in auth",
        "r": [("cc-react-double-fetch", 1), ("cc-oauth-refresh", 1)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "locking problems in our databases",
        "r": [("cc-pg-index", 0), ("amp-sqlite-wal", 0)],
        "c": "multi-hop",
        "a": None,
    },
    # temporal and scoped
    {
        "t": "in the postgres session, what did we check after rebuilding the index",
        "r": [("cc-pg-index", 3)],
        "c": "temporal",
        "a": "index scan",
        "scope": "cc-pg-index",
    },
    {
        "t": "in the leak investigation, what was the last thing we discussed",
        "r": [("cc-node-leak", 2)],
        "c": "temporal",
        "a": None,
        "scope": "cc-node-leak",
    },
    {
        "t": "first thing we tried for the flaky export test",
        "r": [("cc-flaky-fixture", 0)],
        "c": "temporal",
        "a": None,
        "scope": "cc-flaky-fixture",
    },
    # Harder queries (issue 14): vague, cross-conversation or worded with another
    # conversation's vocabulary, so that no system is near-perfect on the sample.
    {
        "t": "the problem caused by tabs",
        "r": [("cc-makefile", 1), ("cc-oauth-refresh", 0)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "every fix that came down to a timeout setting",
        "r": [("cc-nginx-ws", 1), ("amp-k8s-probes", 0), ("amp-sqlite-wal", 0)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "what did we raise well above its default of sixteen",
        "r": [("amp-faiss-choice", 1)],
        "c": "paraphrase",
        "a": "efsearch",
    },
    {
        "t": "swapping the order of two calls fixed the error",
        "r": [("cc-rust-borrow", 1)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "what should run every night to catch problems earlier",
        "r": [("cc-node-leak", 2)],
        "c": "paraphrase",
        "a": "soak test",
    },
    {
        "t": "where we used a hash of a file as the key",
        "r": [("amp-gha-cache", 0), ("amp-gha-cache", 2)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "moving a copy step earlier so the slow step is skipped",
        "r": [("cc-docker-cache", 0)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "waiting for the one already running instead of starting another",
        "r": [("cc-oauth-refresh", 1), ("amp-sqlite-wal", 0)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "a percentage we picked",
        "r": [("cc-oauth-refresh", 2)],
        "c": "paraphrase",
        "a": "80 percent",
    },
    {
        "t": "which problems only happen in development builds",
        "r": [("cc-react-double-fetch", 0)],
        "c": "paraphrase",
        "a": "strictmode",
    },
    {
        "t": "an editor setting broke the build",
        "r": [("cc-makefile", 1)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "trouble with files a partner sends us",
        "r": [("amp-csv-encoding", 0), ("amp-csv-encoding", 1)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "reading the first few bytes of a file",
        "r": [("amp-csv-encoding", 1)],
        "c": "tool-usage",
        "a": None,
    },
    {
        "t": "checks that run before the real ones start",
        "r": [("amp-k8s-probes", 2)],
        "c": "paraphrase",
        "a": "startupprobe",
    },
    {
        "t": "problems that only showed up when things ran in parallel",
        "r": [
            ("cc-flaky-fixture", 1),
            ("cc-oauth-refresh", 0),
            ("amp-sqlite-wal", 0),
            ("cc-react-double-fetch", 1),
        ],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "settings whose defaults bit us",
        "r": [("cc-nginx-ws", 1), ("amp-faiss-choice", 1), ("amp-k8s-probes", 0)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "the regression guard we added so it cannot happen again",
        "r": [("cc-flaky-fixture", 3), ("cc-node-leak", 2)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "stale data that looked fine",
        "r": [("cc-react-double-fetch", 1), ("amp-gha-cache", 2)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "keeping a single source of truth for the types",
        "r": [("amp-ts-generics", 0)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "a cheap check first and the expensive one after",
        "r": [("cc-iso-regex", 1)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "code that runs no matter how things end",
        "r": [("amp-bash-traps", 1), ("cc-react-double-fetch", 1)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "fixes that came down to doing the steps in another order",
        "r": [("cc-docker-cache", 0), ("cc-rust-borrow", 1), ("cc-makefile", 2)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "why did the machine kill our process",
        "r": [("cc-node-leak", 0), ("amp-k8s-probes", 0)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "advice to measure before deciding",
        "r": [("amp-faiss-choice", 1), ("cc-node-leak", 0), ("cc-pg-index", 3)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "a tool doing something behind our back",
        "r": [("cc-makefile", 1), ("cc-react-double-fetch", 0)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "what we said to write to the log",
        "r": [("amp-csv-encoding", 1)],
        "c": "paraphrase",
        "a": None,
    },
    {
        "t": "the fix was something in the standard library",
        "r": [("cc-timezones", 1), ("cc-iso-regex", 1)],
        "c": "multi-hop",
        "a": None,
    },
    {
        "t": "everything we did to make builds faster",
        "r": [
            ("cc-docker-cache", 0),
            ("cc-docker-cache", 1),
            ("cc-docker-cache", 2),
            ("amp-gha-cache", 0),
            ("amp-gha-cache", 2),
        ],
        "c": "multi-hop",
        "a": None,
    },
]


def _ts(day: int, minute: int) -> str:
    return (T0 + timedelta(days=day, minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _claude_code(conv: dict, turns: list[Turn]) -> list[dict]:
    sid, day = conv["id"], conv["day"]
    lines: list[dict] = [{"type": "summary", "summary": conv["title"], "leafUuid": f"{sid}-leaf"}]
    parent = None
    n = 0

    def base(kind: str) -> dict:
        nonlocal n, parent
        n += 1
        uid = f"{sid}-{n:03d}"
        rec = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": f"/home/dev/{sid}",
            "sessionId": sid,
            "version": "2.1.40",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": _ts(day, n),
        }
        parent = uid
        return rec

    meta = base("user")
    meta.update(
        isMeta=True,
        message={
            "role": "user",
            "content": "<system-reminder>Project "
            "instructions were loaded from CLAUDE.md.</system-reminder>",
        },
    )
    lines.append(meta)
    for i, (user, answer, tools) in enumerate(turns):
        if conv.get("interrupted_at") == i:
            u = base("user")
            u["message"] = {"role": "user", "content": "Actually wait, first check the server logs"}
            lines.append(u)
            stop = base("user")
            stop["message"] = {
                "role": "user",
                "content": [{"type": "text", "text": "[Request interrupted by user]"}],
            }
            lines.append(stop)
        u = base("user")
        u["message"] = {"role": "user", "content": user}
        lines.append(u)
        mid = f"msg_{sid.replace('-', '')[:12]}{i:02d}"
        sentences = answer.split(". ")
        first = sentences[0] + ("." if len(sentences) > 1 else "")
        rest = ". ".join(sentences[1:])
        a = base("assistant")
        a["message"] = {
            "id": mid,
            "role": "assistant",
            "model": "claude-sonnet-4",
            "content": [{"type": "text", "text": first}],
        }
        lines.append(a)
        for j, (name, inp, out) in enumerate(tools):
            tid = f"toolu_{sid[:6]}{i}{j}"
            a = base("assistant")
            a["message"] = {
                "id": mid,
                "role": "assistant",
                "model": "claude-sonnet-4",
                "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}],
            }
            lines.append(a)
            r = base("user")
            r["message"] = {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tid, "content": out}],
            }
            r["toolUseResult"] = {"stdout": out, "stderr": ""}
            lines.append(r)
        if rest:
            mid2 = mid + "b" if tools else mid
            a = base("assistant")
            a["message"] = {
                "id": mid2,
                "role": "assistant",
                "model": "claude-sonnet-4",
                "content": [{"type": "text", "text": rest}],
            }
            lines.append(a)
    return lines


def _amplifier(conv: dict, turns: list[Turn]) -> list[dict]:
    day = conv["day"]
    lines: list[dict] = []
    k = 0
    for i, (user, answer, tools) in enumerate(turns):
        k += 1
        lines.append({"role": "user", "content": user, "timestamp": _ts(day, k)})
        if i == 1:
            lines.append(
                {
                    "role": "user",
                    "content": "<system-reminder>Hook: remember the "
                    "project's style guide.</system-reminder>",
                }
            )
        calls = []
        for j, (name, inp, _out) in enumerate(tools):
            if j % 2 == 0:
                calls.append({"id": f"call_{i}{j}", "tool": name, "arguments": inp})
            else:
                calls.append(
                    {
                        "id": f"call_{i}{j}",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(inp)},
                    }
                )
        k += 1
        thinking = f"The user asks about: {user[:60]}"
        msg = {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": thinking, "signature": "sig"},
                {"type": "text", "text": answer},
            ],
            "thinking_block": {"type": "thinking", "thinking": thinking},
            "metadata": {"timestamp": _ts(day, k)},
        }
        if calls:
            msg["tool_calls"] = calls
        lines.append(msg)
        for j, (name, _inp, out) in enumerate(tools):
            lines.append(
                {"role": "tool", "tool_call_id": f"call_{i}{j}", "name": name, "content": out}
            )
    return lines


def build() -> None:
    if ROOT.exists():
        shutil.rmtree(ROOT)
    for conv in CONVERSATIONS:
        turns = list(conv["turns"])
        if conv["id"] == "cc-react-double-fetch":
            turns.append(XSS_TURN)
        if conv["format"] == "claude_code":
            folder = ROOT / "transcripts" / "claude_code" / f"-home-dev-{conv['id']}"
            folder.mkdir(parents=True, exist_ok=True)
            lines = _claude_code(conv, turns)
            path = folder / f"{conv['id']}.jsonl"
            sep = (",", ":")
        else:
            folder = (
                ROOT
                / "transcripts"
                / "amplifier"
                / "projects"
                / f"-home-dev-{conv['id']}"
                / "sessions"
                / conv["id"]
            )
            folder.mkdir(parents=True, exist_ok=True)
            lines = _amplifier(conv, turns)
            path = folder / "transcript.jsonl"
            sep = (", ", ": ")
            meta = {
                "session_id": conv["id"],
                "created": _ts(conv["day"], 0),
                "bundle": "bundle:foundation",
                "model": "claude-sonnet-4",
                "turn_count": len(turns),
                "working_dir": f"/home/dev/{conv['id']}",
                "name": conv["title"],
                "description": conv["title"],
            }
            (folder / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n")
        with path.open("w", encoding="utf-8") as fh:
            for line in lines:
                fh.write(json.dumps(line, ensure_ascii=False, separators=sep) + "\n")
    with (ROOT / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for i, q in enumerate(QUERIES, start=1):
            rec = {
                "query_id": f"sample-q{i:03d}",
                "text": q["t"],
                "conversation_id": q.get("scope"),
                "relevant": [f"{c}:t{t}" for c, t in q["r"]],
                "category": q["c"],
                "answer": q["a"],
            }
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    build()
