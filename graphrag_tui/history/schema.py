"""The run history's tables, its version (`PRAGMA user_version`) and the migrations from
every older version. A file of a newer version is refused, never changed."""

from __future__ import annotations

#: The version this code writes. Version 1 had no `usage_total` column and no per-batch model;
#: version 2 no `prompts` column; version 3 wrote a row per batch; version 4 wrote attempts as
#: objects and zlib streams; version 5 wrote the plan and the result's summary as plain JSON
#: (formats.py and texts.py say how each version's data reads); version 6 had no `selection`;
#: version 8 kept a run's plan, contents and Map prompt in its row; version 9 had no `cost_total`.
SCHEMA_VERSION = 10
#: The digest (database.schema_digest) of the schema every history of this version has, made
#: new or migrated (SCHEMA_V1, then each migration): a file whose schema is exactly it holds
#: no SQL of its own. test_history makes a history and checks it.
OWN_SCHEMA_SHA256 = "e9c2855b7d3b933f025277cc05978b59a283bb4c8f7e8da601ed86a0068340f6"

SCHEMA_V1 = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    parent_run_id TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL,
    question TEXT NOT NULL,
    store_path TEXT NOT NULL,
    store_size INTEGER,
    store_mtime_ns INTEGER,
    namespace TEXT NOT NULL,
    level TEXT NOT NULL,
    seed INTEGER,
    shuffle INTEGER NOT NULL,
    options TEXT NOT NULL,
    model_settings TEXT NOT NULL,
    model_name TEXT,
    summary_count INTEGER NOT NULL,
    batch_count INTEGER NOT NULL,
    failed_batch_count INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    -- each batch as planned: [[community ids, [[id, part], ...], prompt tokens, content SHA-256], ...]
    plan TEXT,
    -- the Map messages of batch 0 (zlib JSON): every prompt is this template with its batch's content
    map_prompt BLOB,
    result TEXT
);
CREATE INDEX runs_store ON runs (store_path);
-- A batch has a row once it finished (or has failed attempts): a pending batch is in `plan`.
CREATE TABLE batches (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    batch_index INTEGER NOT NULL,
    content_sha256 TEXT NOT NULL,
    -- the batch's content, the variable part of its Map prompt (zlib, UTF-8)
    content BLOB NOT NULL,
    -- pending (never finished), succeeded or failed
    status TEXT NOT NULL,
    -- the BatchResult JSON once finished (or its failed attempts while it goes on)
    result TEXT,
    PRIMARY KEY (run_id, batch_index)
) WITHOUT ROWID;
"""

#: migrations[v] takes a file from version v to v + 1.
MIGRATIONS: dict[int, str] = {
    1: """
ALTER TABLE runs ADD COLUMN usage_total TEXT;
ALTER TABLE batches ADD COLUMN model TEXT;
""",
    # the run's prompts (the engine's Prompts as JSON: its templates and the answer's form);
    # NULL: a run recorded before, which used the built-in templates
    2: """
ALTER TABLE runs ADD COLUMN prompts TEXT;
""",
    # A run's batch contents once, in its plan's order (`plan` has their lengths), and its
    # batches' records a group per commit: a row per batch cost a run more than 5 % of its
    # time. The `batches` rows of earlier runs stay and are read as they were.
    3: """
ALTER TABLE runs ADD COLUMN contents BLOB;
ALTER TABLE runs ADD COLUMN succeeded_batch_count INTEGER NOT NULL DEFAULT 0;
UPDATE runs SET succeeded_batch_count =
    (SELECT count(*) FROM batches WHERE batches.run_id = runs.run_id AND batches.status = 'succeeded');
CREATE TABLE batch_records (
    run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
    -- the order of the groups: a later record of a batch replaces an earlier one
    seq INTEGER NOT NULL,
    -- the group's batches as a list per field (formats.py), zlib when long
    records BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
""",
    # No table changes: version 5 writes records, summaries and compressed texts that
    # version 4 cannot read, so a version-4 program must refuse the file.
    4: "",
    # No table changes: version 6 compresses the plan and the result's summary when long,
    # which version 5 cannot read.
    5: "",
    # How the run chose its communities (issue 15), as JSON {"options", "report"}: the
    # options from the start, the report (the chosen ids, a dynamic run's ratings) once its
    # communities are planned. NULL: the level's communities (or a run recorded before).
    # An interrupted run has no result to read its selection from, and without it a resume
    # planned the level's communities and refused them as a changed store.
    6: """
ALTER TABLE runs ADD COLUMN selection TEXT;
""",
    # The run's seal (seal.py): its id, store and model settings under this user's key. NULL
    # (a run recorded before) is not trusted: re-run only on a model given on the command line.
    7: """
ALTER TABLE runs ADD COLUMN seal TEXT;
""",
    # A run's plan, contents and Map prompt, written once, in a table of their own: SQLite
    # writes a whole row again when any of its columns changes, and every commit of a run
    # changes its row (its counts of batches), so each commit wrote the run's contents again
    # (1.2 MB a commit for 0.6 MB of contents). Runs recorded before keep theirs in `runs`
    # (moving them would write the whole history once): plan_column reads either.
    # And Reduce's attempts while it goes (NULL once the run has its result, which holds them):
    # a failed attempt was written only at the run's end, so a kill lost it and its usage.
    8: """
CREATE TABLE run_plans (
    run_id TEXT PRIMARY KEY REFERENCES runs (run_id) ON DELETE CASCADE,
    plan TEXT,
    contents BLOB,
    map_prompt BLOB
);
ALTER TABLE runs ADD COLUMN reduce_attempts TEXT;
""",
    # What the run's calls cost so far (the engine's Cost as JSON), beside usage_total: each
    # call priced at the prices of the process that made it, so a run resumed on another
    # model is not priced whole at the new one's. NULL: unpriced, or recorded before.
    9: """
ALTER TABLE runs ADD COLUMN cost_total TEXT;
""",
}

#: The runs with their plans, wherever their version wrote them (plan_column).
#: (Its own columns only: a column a file added to `run_plans` made the runs' names ambiguous.)
RUNS_WITH_PLANS = "runs LEFT JOIN (SELECT run_id, plan, contents, map_prompt FROM run_plans) AS run_plans USING (run_id)"


def plan_column(column: str) -> str:
    """A run's `plan`, `contents` or `map_prompt`, read from RUNS_WITH_PLANS."""
    return f"coalesce(run_plans.{column}, runs.{column})"
