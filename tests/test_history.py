"""The run history's module: versions and migrations, run ids, owners, the list's filters,
the recorder's commits while a run goes, and loading a run back as the SearchResult it was."""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import os
import re
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from graphrag_tui.engine import DEFAULT_PROMPTS, ModelError, SearchOptions, SearchResult, Usage
from graphrag_tui.engine.ports import ChatRequest
from graphrag_tui.engine.prompts import map_skeleton
from graphrag_tui.engine.tokens import estimate_tokens
from graphrag_tui.errors import InputError
from graphrag_tui.history import FLUSH_INTERVAL, SCHEMA_VERSION, HistoryError, RunHistory, UnknownRun, new_run_id
from graphrag_tui.history.database import connect, history_error, schema_digest, transaction
from graphrag_tui.history.owner import is_alive, this_process
from graphrag_tui.history.schema import OWN_SCHEMA_SHA256, SCHEMA_V1
from graphrag_tui.history.texts import unpack_text
from graphrag_tui.models.extractive import ExtractiveModel
from graphrag_tui.session.continuation import model_settings_for
from graphrag_tui.session.run import RunSession, SearchRequest
from graphrag_tui.store import CommunityStore
from tests.stores import PAD, build_store

QUESTION = "Who funds the bridge?"


def old_file(path: Path) -> Path:
    """A history as version 1 wrote it: one finished run of two batches."""
    db = sqlite3.connect(path)
    db.executescript(SCHEMA_V1)
    result = {"query": QUESTION, "namespace": "ns", "level": "leaf", "seed": 3, "status": "completed",
              "answer": "Old answer.", "error": None, "detail": None, "summary_count": 2, "batch_count": 2,
              "failed_batch_count": 0, "reduce": {"candidates": [], "prompt_tokens": 10, "budget": 7000, "attempts": []},
              "selected_map_answers": []}
    db.execute(
        "INSERT INTO runs (run_id, started_at, finished_at, status, question, store_path, namespace, level, seed, "
        "shuffle, options, model_settings, model_name, summary_count, batch_count, result) "
        "VALUES ('aaaaaaaa0001', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:09+00:00', 'completed', ?, '/s.db', "
        "'ns', '\"leaf\"', 3, 1, ?, '{\"kind\": \"http\", \"model\": \"m1\"}', 'm1', 2, 2, ?)",
        (QUESTION, SearchOptions().model_dump_json(), json.dumps(result)))
    for index in (0, 1):
        batch = {"index": index, "community_ids": [f"ns/{index}"], "parts": [{"community_id": f"ns/{index}", "part": 1}],
                 "prompt_tokens": 100, "attempts": [], "usefulness": 50, "answer": f"A{index}", "status": "succeeded"}
        db.execute("INSERT INTO batches VALUES ('aaaaaaaa0001', ?, 'ff', x'00', 'succeeded', ?)",
                   (index, json.dumps(batch)))
    db.execute("PRAGMA user_version = 1")
    db.commit()
    db.close()
    return path


def test_an_old_version_files_batch_whose_model_is_not_a_text_is_one_line(tmp_path: Path) -> None:
    path = old_file(tmp_path / "history.db")
    assert RunHistory(path).load("aaaaaaaa0001").batch_models == [None, None]  # (migrated)
    db = sqlite3.connect(path)
    db.execute("UPDATE batches SET model = X'41' WHERE batch_index = 1")  # (a number would be stored as text)
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match=r"cannot be read: run aaaaaaaa0001 has a batch whose model is not a text$"):
        RunHistory(path).load("aaaaaaaa0001")


def test_an_old_version_file_is_migrated_and_its_runs_read(tmp_path: Path) -> None:
    path = old_file(tmp_path / "history.db")
    history = RunHistory(path)
    (summary,) = history.list_runs()
    assert (summary.run_id, summary.status, summary.model, summary.usage_total) == ("aaaaaaaa0001", "completed", "m1", None)
    stored = history.load("aaaaaaaa0001")
    assert stored.result.answer == "Old answer." and stored.batch_models == [None, None]
    assert [b.answer for b in stored.result.batches] == ["A0", "A1"]
    # recorded before prompts were: the built-in ones, and the result says nothing it did not record
    assert stored.prompts == DEFAULT_PROMPTS and stored.result.prompts is None
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 10
    columns = [c[1] for c in db.execute("PRAGMA table_info(runs)")]
    assert {"usage_total", "prompts", "contents", "succeeded_batch_count"} <= set(columns)
    assert "model" in [c[1] for c in db.execute("PRAGMA table_info(batches)")]
    assert db.execute("SELECT count(*) FROM batch_records").fetchone() == (0,)
    # the Runs screen's "ok" column, counted once by the migration from the old rows
    assert db.execute("SELECT succeeded_batch_count FROM runs").fetchone() == (2,)
    assert history.succeeded_batches(["aaaaaaaa0001", "zzzzzzzz0000"]) == {"aaaaaaaa0001": 2, "zzzzzzzz0000": 0}
    # an edited count (terminal escapes in the Runs screen's "ok" column, raw) is none
    for edited in ("\x1b]0;PWNED\x07\x1b[2J", b"\x1b", -7, 2.5):
        db.execute("UPDATE runs SET succeeded_batch_count = ?", (edited,))
        db.commit()
        assert history.succeeded_batches(["aaaaaaaa0001"]) == {"aaaaaaaa0001": 0}
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # migrated, it has the schema of a history made new: its SQL is not read again
    assert schema_digest(db.execute("SELECT type, name, sql FROM sqlite_master").fetchall()) == OWN_SCHEMA_SHA256
    db.close()


def test_a_new_history_has_the_schema_its_digest_names(tmp_path: Path) -> None:
    connection = connect(tmp_path / "history.db")
    schema = connection.execute("SELECT type, name, sql FROM sqlite_master").fetchall()
    connection.close()
    assert schema_digest(schema) == OWN_SCHEMA_SHA256, f"the schema changed: its digest is now {schema_digest(schema)}"


def test_a_write_that_fills_the_disk_says_so(tmp_path: Path) -> None:
    """SQLite rolls a transaction back itself when the disk is full: the ROLLBACK after it
    raised `cannot rollback - no transaction is active`, which replaced the error that said why."""
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute("CREATE TABLE t (x)")
    connection.execute("PRAGMA max_page_count = 3")  # (as a disk with a few pages left)
    with pytest.raises(sqlite3.OperationalError) as info, transaction(connection):
        connection.execute("INSERT INTO t VALUES (zeroblob(100000))")
    assert str(history_error(tmp_path / "h.db", info.value)) == f"run history {tmp_path / 'h.db'}: database or disk is full"
    assert not connection.in_transaction


def test_every_history_connection_commits_to_disk_before_it_returns(tmp_path: Path) -> None:
    """A power cut must lose only what was not committed: WAL with synchronous FULL (NORMAL
    may roll committed groups back), on the connections that write a run and the others."""
    from graphrag_tui.history.database import connect

    for path in (tmp_path / "new.db", old_file(tmp_path / "old.db")):
        connection = connect(path, check_same_thread=False)
        assert connection.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        connection.close()


def test_a_recorders_commits_after_its_first_are_synced(tmp_path: Path) -> None:
    """A run's first commit (its row, or a resume's claim) is not waited onto the disk: the
    next commit's sync carries it there. Every later commit must then be synced (FULL), on a
    new run and on a resumed one, while the run goes."""
    from graphrag_tui.session.continuation import prepare_resume

    store, history = _store(tmp_path), tmp_path / "h.db"
    seen: list[int] = []

    async def go(run: RunSession) -> SearchResult:
        task = asyncio.ensure_future(run.run(SlowModel(0.05), timeout=10))
        while run.run_id is None:
            await asyncio.sleep(0.005)
        recorder = run._recorder
        assert recorder is not None
        seen.append(recorder._connection.execute("PRAGMA synchronous").fetchone()[0])
        run.cancel_event.set()
        return await task

    with CommunityStore.open(store) as opened:
        run = RunSession(opened, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                                  None, shuffle=False))
        assert asyncio.run(go(run)).status == "cancelled"
        stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
        assert stored.status == "cancelled"
        assert asyncio.run(go(prepare_resume(stored, opened, history=history))).status == "cancelled"
    assert seen == [2, 2]  # FULL


def test_a_runs_first_commit_skips_the_wal_headers_sync_only_into_an_empty_wal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's first commit into an empty WAL (a run alone on its history) does not sync the
    new WAL's header (`synchronous` OFF): with no frames of an earlier round in the file, a
    power cut can only lose the commit. Into a WAL with frames (another connection holds it
    open), and into one another process wrote into between the check and the write lock,
    the header is synced (NORMAL). FULL again afterwards."""
    from graphrag_tui.history import recorder
    from graphrag_tui.history.database import connect

    history = tmp_path / "h.db"
    connect(history).close()  # (made; closing deletes its WAL)

    def first_commit_level() -> tuple[int, int]:
        connection = connect(history, check_same_thread=False)
        try:
            with recorder._first_commit(connection, history):
                during = connection.execute("PRAGMA synchronous").fetchone()[0]
            return during, connection.execute("PRAGMA synchronous").fetchone()[0]
        finally:
            connection.close()

    assert first_commit_level() == (0, 2)  # OFF, then FULL
    other = sqlite3.connect(history)
    other.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")  # (a frame, kept while it is open)
    assert os.path.getsize(f"{history}-wal") > 0
    assert first_commit_level() == (1, 2)  # NORMAL
    checks = iter([True])  # empty when first looked at, not under the lock
    real_check = recorder._wal_is_empty
    monkeypatch.setattr(recorder, "_wal_is_empty", lambda wal: next(checks, None) or real_check(wal))
    assert first_commit_level() == (1, 2)
    other.close()


def test_the_last_commit_of_a_short_run_is_synced_by_the_thread_that_closes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that ends within the flush interval commits its records without waiting for the
    disk; the thread that closes its connection syncs the WAL. With another connection open
    on the history (the app and a CLI at once), closing leaves the WAL unsynced and in place,
    so that thread syncs it itself (named after the file a link to the history leads to, as
    SQLite names it); alone, closing checkpoints (syncing) and deletes it."""
    from graphrag_tui.history import recorder

    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(descriptor: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fsync)
    store, history, link = _store(tmp_path), tmp_path / "h.db", tmp_path / "link.db"

    def six_batch_run(path: Path) -> RunSession:
        with CommunityStore.open(store) as opened:
            run = RunSession(opened, history=path)
            run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0,
                                                                            concurrency=1), None, shuffle=False))
            asyncio.run(run.run(SlowModel(0), timeout=10))
        recorder._wait_for_closing()
        return run

    six_batch_run(history)  # (the history made)
    link.symlink_to(history)
    other = sqlite3.connect(history)
    other.execute("SELECT count(*) FROM runs").fetchone()  # (its read opens the WAL)
    run = six_batch_run(link)
    assert synced == [f"{history.resolve()}-wal"]
    assert other.execute("SELECT status, succeeded_batch_count FROM runs WHERE run_id = ?",
                         (run.run_id,)).fetchone() == ("completed", 6)
    other.close()
    synced.clear()
    six_batch_run(history)
    assert (synced, Path(f"{history}-wal").exists()) == ([], False)


def test_a_runs_later_commits_do_not_write_its_contents_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite writes a whole row again when any of its columns changes, and every commit of
    a run updates its row (its counts of batches): with the contents in that row, each commit
    wrote them all again (1.2 MB a commit for 0.6 MB of contents). Another connection reads
    the history from before the run to its end, so no checkpoint copies or resets the WAL:
    what the run's commits wrote is all in it."""
    import random
    import string

    from graphrag_tui.history.database import connect

    monkeypatch.setattr("graphrag_tui.session.run.FLUSH_INTERVAL", 0.05)
    rng = random.Random(7)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 9))) for _ in range(3000)]
    rows = [{"id": f"ns/{i:03d}", "summary_content": " ".join(rng.choices(words, k=300))} for i in range(150)]
    history = tmp_path / "h.db"
    with CommunityStore.open(build_store(tmp_path / "store.db", rows)) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=2500, concurrency=1), 1))
        connect(history).close()
        reader = sqlite3.connect(history, isolation_level=None)
        try:
            reader.execute("BEGIN")
            assert reader.execute("SELECT count(*) FROM runs").fetchone() == (0,)
            result = asyncio.run(run.run(SlowModel(0.03), timeout=30))
            wal = (tmp_path / "h.db-wal").stat().st_size
            reader.execute("ROLLBACK")
            (packed,) = reader.execute("SELECT length(contents) FROM run_plans").fetchone()
            (groups,) = reader.execute("SELECT count(*) FROM batch_records").fetchone()
        finally:
            reader.close()
    assert result.status == "completed" and result.batch_count >= 10
    assert packed > 100_000 and groups >= 4, (packed, groups)
    # the contents once (at the run's start), and each commit's records and counts
    assert packed < wal < packed + 40_000 * groups, (wal, packed, groups)
    assert RunHistory(history).load(run.run_id).result == result  # type: ignore[arg-type]


def test_a_run_recorded_with_full_batch_rows_and_a_list_plan_reads_back(tmp_path: Path) -> None:
    """Earlier version-2 recorders wrote each row's whole BatchResult and the plan as a list of
    [ids, [[id, part]], tokens, hash]; rows now hold only what the run added, the plan the rest."""
    path = old_file(tmp_path / "history.db")
    RunHistory(path).list_runs()  # migrated to the current version
    db = sqlite3.connect(path)
    plan = [[["ns/0"], [["ns/0", 1]], 100, "h0"], [["ns/1", "ns/2"], [["ns/1", 1], ["ns/2", 2]], 120, "h1"]]
    db.execute("UPDATE runs SET plan = ?, status = 'interrupted', result = NULL WHERE run_id = 'aaaaaaaa0001'",
               (json.dumps(plan),))
    db.execute("DELETE FROM batches WHERE batch_index = 1")
    db.commit()
    db.close()
    stored = RunHistory(path).load("aaaaaaaa0001")
    first, second = stored.result.batches
    assert (first.community_ids, first.answer, first.status, first.prompt_tokens) == (("ns/0",), "A0", "succeeded", 100)
    assert (second.community_ids, second.status, second.prompt_tokens) == (("ns/1", "ns/2"), "cancelled", 120)
    assert [(p.community_id, p.part) for p in second.parts] == [("ns/1", 1), ("ns/2", 2)]
    assert [b.content_sha256 for b in stored.batches] == ["ff", "h1"]


def test_a_newer_or_foreign_file_is_refused_and_unchanged(tmp_path: Path) -> None:
    newer = tmp_path / "newer.db"
    db = sqlite3.connect(newer)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    foreign = tmp_path / "foreign.db"
    db = sqlite3.connect(foreign)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    newer_words = rf"written by a newer graphrag-tui \(version {SCHEMA_VERSION + 1};"
    for path, words in ((newer, newer_words), (foreign, "not a run history")):
        before = path.read_bytes()
        with pytest.raises(HistoryError, match=words):
            RunHistory(path).list_runs()
        assert path.read_bytes() == before


def test_run_ids_are_short_sortable_and_prefixes_resolve(tmp_path: Path) -> None:
    early, late = new_run_id(1_700_000_000.0), new_run_id(1_700_000_000.001)
    assert len(early) == len(late) == 12 and early < late and early[:8] != late[:8]
    assert new_run_id(2_000_000_000.0) > late  # sortable across years
    path = old_file(tmp_path / "history.db")
    assert RunHistory(path).load("aaaa").run_id == "aaaaaaaa0001"
    with pytest.raises(UnknownRun, match="no run 'b'"):
        RunHistory(path).load("b")
    with pytest.raises(UnknownRun, match="no run 'AAAA'"):
        RunHistory(path).load("AAAA")


def test_an_owner_is_alive_while_its_process_runs() -> None:
    assert is_alive(this_process())
    child = subprocess.run([sys.executable, "-c", "from graphrag_tui.history.owner import this_process; "
                            "print(this_process())"], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert not is_alive(child.stdout.strip())  # that process has ended
    forged = json.loads(this_process())
    forged["start"] = "1"  # this pid, another start: a reused pid is not the owner
    assert not is_alive(json.dumps(forged))
    assert not is_alive(None) and not is_alive("garbage")


def _store(tmp_path: Path) -> Path:
    rows = [{"id": f"ns/{i}", "summary_content": f"Community {i}. {PAD}"} for i in range(1, 7)]
    return build_store(tmp_path / "store.db", rows)


class SlowModel:
    """Answers Map after `delay` seconds each."""

    description = "slow test model"

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def complete(self, request: object) -> str:
        await asyncio.sleep(self.delay)
        if getattr(request, "stage", "map") == "reduce":
            return json.dumps({"answer": "Final."})
        return json.dumps({"answer": "Part.", "usefulness": 40})

    async def aclose(self) -> None:
        pass


def committed_batches(history: Path) -> int:
    db = sqlite3.connect(f"file:{history}?mode=ro", uri=True)
    try:
        return db.execute("SELECT sum(succeeded_batch_count) FROM runs").fetchone()[0] or 0
    except sqlite3.OperationalError:
        return 0
    finally:
        db.close()


def test_the_recorder_commits_a_finished_batch_within_the_flush_interval(tmp_path: Path) -> None:
    """Batches finish 0.4 s apart; the first is on disk (read by another connection) well
    within a second of finishing, long before the run ends."""
    history = tmp_path / "h.db"
    delays: list[float] = []

    with CommunityStore.open(_store(tmp_path)) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                                  None, shuffle=False))

        async def go() -> None:
            task = asyncio.ensure_future(run.run(SlowModel(0.4), timeout=10))
            while run.search is None or run.search.batches[0].status != "succeeded":
                await asyncio.sleep(0.01)
            finished = time.monotonic()
            while committed_batches(history) == 0:
                await asyncio.sleep(0.01)
            delays.append(time.monotonic() - finished)
            assert not task.done()
            await task

        asyncio.run(go())
    assert delays[0] < FLUSH_INTERVAL + 0.3, delays
    stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    assert stored.status == "completed" and stored.result == run.result
    assert stat.S_IMODE(history.stat().st_mode) == 0o600


class TimedExtractiveModel(ExtractiveModel):
    """The offline model, which keeps the event loop busy: each Map answer's time."""

    def __init__(self) -> None:
        self.finished: list[float] = []  # time.monotonic(), which another process shares

    async def complete(self, request: ChatRequest) -> str:
        reply = self.reply(request)
        if request.stage == "map":
            self.finished.append(time.monotonic())
        return reply


#: Prints, every 20 ms until stdin closes, a time and the batches committed to the history by then.
WATCHER = """
import sqlite3, sys, threading, time
closed = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
while not closed.wait(0.02):
    at = time.monotonic()
    try:
        db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
        count = db.execute("SELECT sum(succeeded_batch_count) FROM runs").fetchone()[0] or 0
        db.close()
    except sqlite3.OperationalError:
        count = 0
    print(at, count, flush=True)
"""


def test_a_busy_event_loop_still_has_a_finished_batch_committed_within_a_second(tmp_path: Path) -> None:
    """An offline model's run keeps its event loop busy, which starves the writer thread of
    the GIL (the loop polls its selector between callbacks, releasing and taking back the
    GIL each time): the run's own thread then writes at the ticks, so every batch is
    committed within a second of finishing. Another process watches the history, so that
    watching gives the writer no GIL."""
    history = tmp_path / "h.db"
    model = TimedExtractiveModel()
    # Long enough that some batches are more than a second old while the Map goes (12,000 Map
    # calls took 1.2 s here, which a slow start of the watcher could miss whole).
    rows = [{"id": f"ns/{i:05d}", "summary_content": f"Community {i} keeps the harbour ledger."} for i in range(30_000)]
    options = SearchOptions(map_budget=estimate_tokens(map_skeleton(QUESTION) + "\n") + 32, map_reserve=0, concurrency=4)
    with CommunityStore.open(build_store(tmp_path / "big.db", rows)) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", options, 1))
        watcher = subprocess.Popen([sys.executable, "-c", WATCHER, str(history)], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        try:
            result = asyncio.run(run.run(model, timeout=60))
        finally:
            seen, _ = watcher.communicate("", timeout=10)
    assert result.batch_count == 30_000 and len(model.finished) == 30_000
    samples = [(float(at), int(count)) for at, count in map(str.split, seen.splitlines())]
    due = [(bisect.bisect(model.finished, at - 1.0), count) for at, count in samples if at < model.finished[-1]]
    assert [(d, c) for d, c in due if c < d] == [] and max(d for d, _ in due) >= 3, due
    stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    assert stored.status == result.status == "no_results" and stored.result == run.result


def test_a_run_that_ends_within_the_flush_interval_starts_no_thread_and_a_longer_one_starts_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that ends within the interval is written at its end by its own thread (starting
    a thread would cost it more than a millisecond); a longer one hands its records to a
    writer thread after one interval. Both are recorded whole. (The interval is stretched
    or shortened so that a loaded machine cannot blur which run is which.)"""
    history = tmp_path / "h.db"
    with CommunityStore.open(_store(tmp_path)) as store:
        for interval, writer_thread in ((30.0, False), (0.05, True)):
            monkeypatch.setattr("graphrag_tui.session.run.FLUSH_INTERVAL", interval)
            seen: set[str] = set()
            run = RunSession(store, history=history,
                             on_event=lambda _, seen=seen: seen.update(t.name for t in threading.enumerate()))
            run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0,
                                                                            concurrency=1), None, shuffle=False))
            asyncio.run(run.run(SlowModel(0.1), timeout=10))  # six batches, 0.1 s each
            assert {name for name in seen if name.startswith("history-")} == (
                {f"history-{run.run_id}"} if writer_thread else set())
            stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
            assert stored.status == "completed" and stored.result == run.result


def test_listing_filters_by_store_status_and_text(tmp_path: Path) -> None:
    path = old_file(tmp_path / "history.db")
    history = RunHistory(path)
    assert [r.run_id for r in history.list_runs(store="/s.db")] == ["aaaaaaaa0001"]
    assert history.list_runs(store="/other.db") == []
    assert [r.run_id for r in history.list_runs(status="completed")] == ["aaaaaaaa0001"]
    assert history.list_runs(status="failed") == []
    assert [r.run_id for r in history.list_runs(text="FUNDS")] == ["aaaaaaaa0001"]
    assert history.list_runs(text="ships") == []
    assert RunHistory(tmp_path / "none.db").list_runs() == []
    assert not (tmp_path / "none.db").exists()  # reading never creates a history
    # any case of any script (SQLite's lower() folds only ASCII: `école` missed `ÉCOLE`)
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET question = 'Où est l''ÉCOLE? Straße'")
    db.commit()
    for text in ("école", "ÉCOLE", "oÙ", "STRASSE"):
        assert [r.run_id for r in history.list_runs(text=text)] == ["aaaaaaaa0001"], text
    assert history.list_runs(text="ecole") == []  # case, not accents
    # an edited row's text that is not UTF-8 made every read an error: it reads with U+FFFD
    db.execute("UPDATE runs SET namespace = 'n' || CAST(x'c3ff' AS TEXT)")
    db.commit()
    db.close()
    assert [(r.run_id, r.namespace) for r in history.list_runs(text="école")] == [("aaaaaaaa0001", "n\ufffd\ufffd")]
    # (the row's question and namespace, edited, are no longer its result's: the run is not shown as another)
    with pytest.raises(HistoryError, match="run aaaaaaaa0001's result is of another question, namespace or level"):
        history.load("aaaaaaaa0001")


def test_a_rerun_uses_the_recorded_endpoint_or_the_flags_over_it(tmp_path: Path) -> None:
    from graphrag_tui.history.seal import seal, seal_key

    path = old_file(tmp_path / "history.db")
    RunHistory(path).list_runs()  # migrated: it has the seal's column
    settings = json.dumps(
        {"kind": "http", "base_url": "http://h:1/v1", "model": "m1", "api_key_env": "MY_KEY", "timeout": 30.0,
         "response_format": "json_schema", "max_response_bytes": 1000, "local_llm": False})
    db = sqlite3.connect(path)
    (store,) = db.execute("SELECT store_path FROM runs WHERE run_id = 'aaaaaaaa0001'").fetchone()
    key = seal_key(create=True)
    assert key is not None
    db.execute("UPDATE runs SET model_settings = ?, seal = ?", (settings, seal(key, "aaaaaaaa0001", store, settings)))
    db.commit()
    db.close()
    stored = RunHistory(path).load("aaaaaaaa0001")
    assert stored.sealed
    recorded = model_settings_for(stored)
    assert (recorded.kind, recorded.base_url, recorded.model, recorded.api_key_env, recorded.timeout,
            recorded.response_format) == ("http", "http://h:1/v1", "m1", "MY_KEY", 30.0, "json_schema")
    other = model_settings_for(stored, {"model": "m2", "base_url": None, "local_llm": False})
    assert (other.base_url, other.model, other.api_key_env, other.response_format) == (
        "http://h:1/v1", "m2", "MY_KEY", "json_schema")


def test_a_run_this_user_did_not_record_is_rerun_only_on_the_model_given(tmp_path: Path) -> None:
    """A history from elsewhere (or an edited row) names any endpoint and any variable: a
    re-run without model flags would send the user's secret there. Its recorded endpoint is
    not used at all, not even under a flag that leaves the base URL out."""
    path = old_file(tmp_path / "history.db")
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET model_settings = ?", (json.dumps(
        {"kind": "http", "base_url": "http://collector.example:1/v1", "model": "m1",
         "api_key_env": "AWS_SECRET_ACCESS_KEY"}),))
    db.commit()
    db.close()
    stored = RunHistory(path).load("aaaaaaaa0001")
    assert not stored.sealed
    with pytest.raises(InputError) as refused:
        model_settings_for(stored)
    assert str(refused.value) == (
        "run aaaaaaaa0001 was not recorded by this user's graphrag-tui (a history from elsewhere, an edited row, or "
        "a run recorded before version 8): its endpoint and key variable are not used; give the model (--base-url, "
        "--model, --api-key-env, or --local-llm)")
    given = model_settings_for(stored, {"model": "m2", "base_url": None, "local_llm": False})
    assert (given.base_url, given.model, given.api_key_env) == (None, "m2", None)
    configured = model_settings_for(stored, {"model": "m2"}, configured={"base_url": "http://mine:2/v1", "headers": None})
    assert (configured.base_url, configured.model) == ("http://mine:2/v1", "m2")  # the user's own, as for a new run


def test_the_resolver_says_where_runs_are_recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from graphrag_tui.config import UserDefaults
    from graphrag_tui.session import SettingsResolver

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    plain = SettingsResolver()
    default = plain.history({})
    assert (default.path, default.enabled, default.source) == (tmp_path / "data" / "graphrag-tui" / "history.db", True,
                                                               "default")
    assert plain.history({"no_history": True}).recording is None
    assert plain.history({"history": Path("~/h.db")}).path == Path.home() / "h.db"
    with pytest.raises(InputError, match="^--history and --no-history cannot be used together$"):
        plain.history({"history": Path("h.db"), "no_history": True})
    labels = {"path": "GRAPHRAG_TUI_HISTORY", "enabled": "config file c: [history] enabled"}
    configured = SettingsResolver(UserDefaults(history={"path": "/runs/h.db", "enabled": False}, labels=labels))
    off = configured.history({})
    assert (off.path, off.enabled, off.source, off.label) == (Path("/runs/h.db"), False, "config",
                                                              "config file c: [history] enabled")
    given = configured.history({"history": Path("/other.db")})
    assert (given.recording, given.source) == (Path("/other.db"), "flag")  # --history records even so
    on = SettingsResolver(UserDefaults(history={"path": "/runs/h.db"}, labels={"path": "GRAPHRAG_TUI_HISTORY"})).history({})
    assert (on.recording, on.source, on.label) == (Path("/runs/h.db"), "environment", "GRAPHRAG_TUI_HISTORY")


BOOM = ModelError("http", "HTTP 500: boom", status=500, raw_response="boom")


class RepliesThenHangs:
    """Each call the next of `steps` (a reply, or an error raised), then calls that never answer."""

    description = "replies, then hangs"

    def __init__(self, steps: list[str | Exception]) -> None:
        self.steps = steps
        self.calls: list[int] = []
        self.hanging = asyncio.Event()

    async def complete(self, request: object) -> str:
        self.calls.append(1)
        if len(self.calls) <= len(self.steps):
            step = self.steps[len(self.calls) - 1]
            if isinstance(step, Exception):
                raise step
            return step
        self.hanging.set()
        await asyncio.Event().wait()
        raise AssertionError("never answers")

    async def aclose(self) -> None:
        pass


def _one_worker_run(store: CommunityStore, history: Path) -> RunSession:
    """The six-batch run of `_store`, one call at a time, in order, recorded in `history`."""
    run = RunSession(store, history=history)
    run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                              None, shuffle=False))
    return run


def test_a_failed_attempt_is_recorded_while_its_batch_goes_on_and_a_cancel_keeps_it(tmp_path: Path) -> None:
    """The first attempt fails (HTTP 500), the second never answers: the first is on disk
    as the batch's attempt so far; cancelling ends the run `cancelled`, resumable."""
    history = tmp_path / "h.db"
    model = RepliesThenHangs([BOOM])
    calls = model.calls
    with CommunityStore.open(_store(tmp_path)) as store:
        run = _one_worker_run(store, history)

        async def go() -> None:
            task = asyncio.ensure_future(run.run(model, timeout=60))
            while len(calls) < 2:
                await asyncio.sleep(0.01)
            deadline = time.monotonic() + 2  # committed within the flush interval (and the load of the machine)
            while time.monotonic() < deadline:
                stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
                if stored.batches and stored.batches[0].result.attempts:
                    break
                await asyncio.sleep(0.05)
            (attempt,) = stored.batches[0].result.attempts
            assert (stored.status, stored.batches[0].status) == ("running", "pending")
            assert (attempt.attempt, attempt.error_kind, attempt.error, attempt.raw_response) == (
                1, "http", "HTTP 500: boom", "boom")
            run.cancel()
            await task

        asyncio.run(go())
    stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    assert stored.status == "cancelled" and run.result is not None and stored.result == run.result
    assert [b.status for b in stored.batches] == ["pending"] * 6


def test_a_run_cancelled_within_an_interval_records_its_batches_at_its_end(tmp_path: Path) -> None:
    """A run cancelled before its first tick is written whole at its end: the batch that
    answered as succeeded, the one cancelled while it went on with its attempts, the others
    as planned."""
    history = tmp_path / "h.db"
    model = RepliesThenHangs(['{"answer": "The council funds it.", "usefulness": 70}', BOOM])
    with CommunityStore.open(_store(tmp_path)) as store:
        run = _one_worker_run(store, history)

        async def go() -> None:
            task = asyncio.ensure_future(run.run(model, timeout=60))
            await model.hanging.wait()
            run.cancel()
            await task

        asyncio.run(go())
    stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    assert stored.status == "cancelled" and run.result is not None and stored.result == run.result
    assert [b.status for b in stored.batches] == ["succeeded", "pending", "pending", "pending", "pending", "pending"]
    assert (stored.batches[0].result.answer, stored.batches[0].result.usefulness) == ("The council funds it.", 70)
    assert [(a.attempt, a.error_kind, a.error) for a in stored.batches[1].result.attempts] == [
        (1, "http", "HTTP 500: boom"), (2, None, "cancelled")]
    assert [len(b.result.attempts) for b in stored.batches[2:]] == [0, 0, 0, 0]


def test_a_value_sqlite_cannot_hold_is_a_warning_and_the_run_goes_on_unrecorded(tmp_path: Path) -> None:
    """A seed past 2^63 (the CLI refuses one; the session takes any int) cannot be an
    SQLite INTEGER: the run is not lost for it."""
    history, warnings = tmp_path / "history.db", []
    with CommunityStore.open(_store(tmp_path)) as store:
        run = RunSession(store, history=history, on_warning=warnings.append)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0), 2**63))
        result = asyncio.run(run.run(ExtractiveModel(), timeout=60))
    assert (result.seed, run.run_id) == (2**63, None)  # (the offline model finds nothing useful here)
    assert [b.status for b in result.batches] == ["succeeded"] * 6
    assert warnings == [f"warning: run history {history}: Python int too large to convert to SQLite INTEGER; "
                        "this run is not recorded"]
    assert RunHistory(history).list_runs() == []


def test_a_record_that_does_not_read_back_is_one_line(tmp_path: Path) -> None:
    path = old_file(tmp_path / "history.db")
    db = sqlite3.connect(path)
    db.execute("UPDATE batches SET result = '{\"index\": 0}' WHERE batch_index = 1")
    db.execute("UPDATE runs SET level = 'x'")
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match=r"^run history .* run aaaaaaaa0001 cannot be read: "):
        RunHistory(path).load("aaaaaaaa0001")
    with pytest.raises(HistoryError, match=r"^run history .* a run cannot be read: "):
        RunHistory(path).list_runs()


@pytest.mark.parametrize("usage", ['{"prompt_tokens": -5000}', '{"prompt_tokens": 1e300}',
                                   '{"completion_tokens": 9007199254740993}', '{"total_tokens": "12"}'])
def test_a_recorded_usage_past_what_a_call_can_have_is_one_line(tmp_path: Path, usage: str) -> None:
    """A recorded attempt's usage is read as a server's is (a count from 0 to 2**53): a
    negative one was summed into the run's usage, and so into what --max-cost counts."""
    path = old_file(tmp_path / "history.db")
    attempt = {"attempt": 1, "started_at": "2026-01-01T00:00:00+00:00", "duration_s": 0.5}
    db = sqlite3.connect(path)
    db.execute("UPDATE batches SET result = json_set(result, '$.attempts', json(?)) WHERE batch_index = 1",
               (json.dumps([{**attempt, "usage": json.loads(usage)}]),))
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match=r"^run history .* run aaaaaaaa0001 cannot be read: [^\n]+$"):
        RunHistory(path).load("aaaaaaaa0001")
    db = sqlite3.connect(path)
    db.execute("UPDATE batches SET result = json_set(result, '$.attempts', json(?)) WHERE batch_index = 1",
               (json.dumps([{**attempt, "usage": {"prompt_tokens": 2**53}}]),))
    db.commit()
    db.close()
    (batch, *_) = [b for b in RunHistory(path).load("aaaaaaaa0001").result.batches if b.index == 1]
    assert batch.attempts[0].usage is not None and batch.attempts[0].usage.prompt_tokens == 2**53


def test_a_runs_usage_total_may_pass_what_one_call_can_have(tmp_path: Path) -> None:
    """Calls of 2**52 tokens each are allowed, so their sum passes 2**53: such a run was
    recorded and then could not be read (show, export, rerun, resume)."""
    path = old_file(tmp_path / "history.db")
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET result = json_set(result, '$.usage_total', json(?))",
               (json.dumps({"prompt_tokens": 2**54, "total_tokens": 2**54}),))
    db.commit()
    db.close()
    assert RunHistory(path).load("aaaaaaaa0001").result.usage_total == Usage(prompt_tokens=2**54, total_tokens=2**54)


@pytest.mark.parametrize("edit", [
    ("runs", "$.usage_total", {"prompt_tokens": -1}),
    ("runs", "$.cost", {"input": -1e300, "output": 0, "cached": 0, "total": 0}),
    ("runs", "$.estimated_prompt_tokens", -5), ("runs", "$.failed_batch_count", -3), ("runs", "$.batch_count", -1),
    ("runs", "$.reduce.prompt_tokens", -10**12), ("batches", "$.prompt_tokens", -10**12),
])
def test_a_recorded_result_with_a_negative_count_or_cost_is_one_line(tmp_path: Path, edit: tuple[str, str, Any]) -> None:
    path = old_file(tmp_path / "history.db")
    db = sqlite3.connect(path)
    db.execute(f"UPDATE {edit[0]} SET result = json_set(result, ?, json(?))", (edit[1], json.dumps(edit[2])))
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match=r"^run history .* run aaaaaaaa0001 cannot be read: [^\n]+$"):
        RunHistory(path).load("aaaaaaaa0001")


@pytest.mark.parametrize("edit", [('"query":"', '"query":"Another '), ('"namespace":"ns"', '"namespace":"other"'),
                                  ('"level":"leaf"', '"level":2')])
def test_a_recorded_result_of_another_question_namespace_or_level_than_its_row_is_one_line(
    tmp_path: Path, edit: tuple[str, str]
) -> None:
    """`runs list` shows a run's row and `runs show` its result: one edited apart from the
    other made them two different runs, and nothing said so."""
    history, run = _six_batch_run(tmp_path)
    db = sqlite3.connect(history)
    (summary,) = db.execute("SELECT result FROM runs").fetchone()
    assert edit[0] in unpack_text(summary)
    db.execute("UPDATE runs SET result = ?", (unpack_text(summary).replace(*edit),))
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match=rf"^run history .* run {run.run_id} cannot be read: run {run.run_id}'s "
                                           r"result is of another question, namespace or level than its row$"):
        RunHistory(history).load(run.run_id)  # type: ignore[arg-type]


def test_a_recorded_result_counting_other_batches_than_its_plan_is_one_line(tmp_path: Path) -> None:
    history, run = _six_batch_run(tmp_path)
    db = sqlite3.connect(history)
    (summary,) = db.execute("SELECT result FROM runs").fetchone()
    db.execute("UPDATE runs SET result = ?", (unpack_text(summary).replace('"batch_count":6,', '"batch_count":10,'),))
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match=rf"^run history .* run {run.run_id} cannot be read: run {run.run_id}'s "
                                           r"result counts 10 batches, and its plan has 6$"):
        RunHistory(history).load(run.run_id)  # type: ignore[arg-type]


@pytest.mark.parametrize("selection", [
    "not json", "[1]", '{"report": null}', '{"options": {"mode": "bogus"}, "report": null}',
    '{"options": {}, "report": {"mode": "dynamic", "selected": "ns/0"}}',
    '{"options": {}, "report": null, "ratings": {"ns/0": 3}}', '{"options": {}, "report": null, "ratings": [{}]}',
    '{"options": {}, "report": null, "votes": ["ns/0"]}', '{"options": {}, "report": null, "votes": {"ns/0": 3}}',
    '{"options": {}, "report": null, "votes": {"ns/0": [{"rating": "five"}]}}',
    *(f'{{"options": {{}}, "report": null, "ratings_paid": {paid}}}' for paid in (
        "5", '{"usage": {"prompt_tokens": 1}}', '{"usage": {"prompt_tokens": 1}, "estimated_prompt_tokens": 0}',
        '{"usage": {"prompt_tokens": -1, "completion_tokens": 0, "cached_tokens": 0, "total_tokens": 0}, '
        '"estimated_prompt_tokens": 0}',
        '{"usage": {"prompt_tokens": 9223372036854775808, "completion_tokens": 0, "cached_tokens": 0, '
        '"total_tokens": 0}, "estimated_prompt_tokens": 0}',
        '{"usage": {"prompt_tokens": "1", "completion_tokens": 0, "cached_tokens": 0, "total_tokens": 0}, '
        '"estimated_prompt_tokens": 0}',
        '{"usage": {"prompt_tokens": 1, "completion_tokens": 0, "cached_tokens": 0, "total_tokens": 0}, '
        '"estimated_prompt_tokens": true}')),
])
def test_a_damaged_selection_is_one_line(tmp_path: Path, selection: str) -> None:
    path = old_file(tmp_path / "history.db")
    RunHistory(path).list_runs()  # migrated to the current version
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET selection = ?", (selection,))
    db.commit()
    db.close()
    with pytest.raises(HistoryError, match=r"^run history .* run aaaaaaaa0001 cannot be read: [^\n]+$"):
        RunHistory(path).load("aaaaaaaa0001")


def test_a_run_deleted_while_it_goes_gets_no_rows_and_a_warning(tmp_path: Path) -> None:
    """`runs delete` of a running run: the recorder writes nothing more (no batch row without
    its run), and the run ends with one warning line, its result intact."""
    history = tmp_path / "h.db"
    warnings: list[str] = []

    with CommunityStore.open(_store(tmp_path)) as store:
        run = RunSession(store, history=history, on_warning=warnings.append)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                                  None, shuffle=False))

        async def go() -> None:
            task = asyncio.ensure_future(run.run(SlowModel(0.05), timeout=10))
            while run.run_id is None:
                await asyncio.sleep(0.005)
            assert RunHistory(history).delete(run.run_id) == run.run_id
            await task

        asyncio.run(go())
    assert run.result is not None and run.result.status == "completed" and run.result.batch_count == 6
    assert warnings == [f"warning: run history {history}: run {run.run_id} was deleted while it ran; "
                        "the run's record is incomplete"]
    db = sqlite3.connect(history)
    assert db.execute("SELECT count(*) FROM batch_records").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    db.close()


def version_3_run(history: Path, store: Path, question: str) -> str:
    """A run as version 3 recorded it, interrupted after its first batch: the plan with each
    batch's hash, and a row per finished batch holding its content."""
    import hashlib

    from graphrag_tui.history import messages_json
    from graphrag_tui.history.texts import pack_text

    with CommunityStore.open(store) as opened:
        run = RunSession(opened, history=None)
        plan = run.prepare(SearchRequest(question, None, "leaf", SearchOptions(map_budget=330, map_reserve=0,
                                                                               concurrency=1), None, shuffle=False))
    contents = [b.content for b in plan.batches]
    hashes = [hashlib.sha256(c.encode()).hexdigest() for c in contents]
    batches = [{"community_ids": list(b.community_ids), "parts": [{"community_id": p.community_id, "part": p.part}
                for p in b.parts], "prompt_tokens": plan.prompt_tokens(b)} for b in plan.batches]
    db = sqlite3.connect(history)
    db.executescript(SCHEMA_V1 + "ALTER TABLE runs ADD COLUMN usage_total TEXT; ALTER TABLE batches ADD COLUMN model TEXT;"
                     "ALTER TABLE runs ADD COLUMN prompts TEXT; PRAGMA user_version = 3;")
    db.execute(
        "INSERT INTO runs (run_id, started_at, status, question, store_path, namespace, level, seed, shuffle, options, "
        "model_settings, model_name, summary_count, batch_count, plan, map_prompt) VALUES ('aaaaaaaa0003', "
        "'2026-01-01T00:00:00+00:00', 'interrupted', ?, ?, 'ns', '\"leaf\"', NULL, 0, ?, '{\"kind\": \"http\"}', 'm1', "
        "?, ?, ?, ?)",
        (question, str(store), plan.options.model_dump_json(), plan.summary_count, len(plan.batches),
         json.dumps({"hashes": hashes, "batches": batches}),
         pack_text(messages_json(question, contents[0]))))
    answered = {"attempts": [], "usefulness": 40, "answer": "Kept.", "status": "succeeded"}
    db.execute("INSERT INTO batches VALUES ('aaaaaaaa0003', 0, ?, ?, 'succeeded', ?, 'm1')",
               (hashes[0], pack_text(contents[0]), json.dumps(answered)))
    db.commit()
    db.close()
    assert RunHistory(history).list_runs()[0].run_id == "aaaaaaaa0003"  # migrated to this version
    return "aaaaaaaa0003"


def test_a_run_recorded_by_version_3_reads_back_and_resumes_into_this_versions_records(tmp_path: Path) -> None:
    from graphrag_tui.history import content_hash
    from graphrag_tui.session.continuation import prepare_resume

    store, history = _store(tmp_path), tmp_path / "h.db"
    run_id = version_3_run(history, store, QUESTION)
    stored = RunHistory(history).load(run_id)
    assert [b.status for b in stored.batches] == ["succeeded"] + ["pending"] * 5
    assert stored.batches[0].result.answer == "Kept." and stored.batch_models == ["m1"] + [None] * 5
    assert RunHistory(history).succeeded_batches([run_id]) == {run_id: 1}  # counted by the migration
    assert list(RunHistory(history).map_prompts(run_id, [0, 1])) == [0]  # version 3 kept finished batches' contents

    with CommunityStore.open(store) as opened:
        session = prepare_resume(stored, opened, history=history)
        planned = [content_hash(b) for b in session.plan.batches]
        result = asyncio.run(session.run(SlowModel(0), timeout=10))
    assert result.status == "completed" and [b.answer for b in result.batches] == ["Kept."] + ["Part."] * 5

    again = RunHistory(history).load(run_id)
    assert again.status == "completed" and again.result == result
    assert [b.content_sha256 for b in again.batches] == planned
    assert [b.status for b in again.batches] == ["succeeded"] * 6
    assert RunHistory(history).succeeded_batches([run_id]) == {run_id: 6}
    # resumed, the run has every batch's content: each prompt reads back as sent
    prompts = RunHistory(history).map_prompts(run_id, list(range(6)))
    assert sorted(prompts) == list(range(6))
    assert json.loads(prompts[3])[1]["content"].count(session.plan.batches[3].content) == 1


class FlakyModel:
    """Map answers with a usefulness per call (the third is 0); the second call's reply is
    not JSON, so its batch is sent again."""

    description = "flaky test model"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: object) -> str:
        if getattr(request, "stage", "map") == "reduce":
            return json.dumps({"answer": "Final."})
        self.calls += 1
        if self.calls == 2:
            return "not json"
        return json.dumps({"answer": f"Part {self.calls}.", "usefulness": 0 if self.calls == 3 else 40 + self.calls})

    async def aclose(self) -> None:
        pass


def as_version_4(history: Path, result: SearchResult) -> None:
    """Rewrites the history's one run as version 4 wrote it: zlib streams, every column
    whole, each attempt an object without its None fields, the plan's columns together, and
    a summary with its candidates' usefulness and the selected answers."""
    import zlib

    def packed(text: str) -> str | bytes:
        return zlib.compress(text.encode(), 1) if len(text) >= 2048 else text

    def whole(table: dict) -> dict:  # a column of one value written for every row
        rows = table.pop("count")
        return {k: [v["same"]] * rows if isinstance(v, dict) and "same" in v else v for k, v in table.items()}

    db = sqlite3.connect(history)
    for seq, records in db.execute("SELECT seq, records FROM batch_records").fetchall():
        group = whole(json.loads(unpack_text(records)))
        columns, counts = whole(group.pop("attempts")), group.pop("attempt_counts")
        rows = zip(*columns.values(), strict=True)
        attempts = [{k: v for k, v in zip(columns, row, strict=True) if v is not None} for row in rows]
        starts = [sum(counts[:i]) for i in range(len(counts))]
        group["attempts"] = [attempts[start:start + count] for start, count in zip(starts, counts, strict=True)]
        db.execute("UPDATE batch_records SET records = ? WHERE seq = ?", (packed(json.dumps(group)), seq))
    plans_into_runs(db)
    contents, map_prompt, plan, summary = db.execute("SELECT contents, map_prompt, plan, result FROM runs").fetchone()
    plan = json.loads(unpack_text(plan))
    fields = json.loads(unpack_text(summary))
    fields["reduce_candidates"] = whole(fields["reduce_candidates"])
    fields["reduce_candidates"]["usefulness"] = [c.usefulness for c in result.reduce.candidates]
    fields["selected_map_answers"] = [a.model_dump(mode="json") for a in result.selected_map_answers]
    db.execute("UPDATE runs SET contents = ?, map_prompt = ?, plan = ?, result = ?",
               (packed(unpack_text(contents)), packed(unpack_text(map_prompt)),
                json.dumps({**whole(plan["batches"]), **whole(plan["parts"])}), json.dumps(fields)))
    db.execute("ALTER TABLE runs DROP COLUMN selection")  # version 7's
    db.execute("ALTER TABLE runs DROP COLUMN seal")  # version 8's
    db.execute("PRAGMA user_version = 4")
    db.commit()
    db.close()


def plans_into_runs(db: sqlite3.Connection) -> None:
    """The file as version 8 and earlier wrote it: each run's plan, contents and Map prompt
    in its row, no Reduce attempts of their own, and no cost so far."""
    db.execute("UPDATE runs SET (plan, contents, map_prompt) = "
               "(SELECT plan, contents, map_prompt FROM run_plans WHERE run_plans.run_id = runs.run_id)")
    db.execute("DROP TABLE run_plans")
    db.execute("ALTER TABLE runs DROP COLUMN reduce_attempts")
    db.execute("ALTER TABLE runs DROP COLUMN cost_total")


def test_a_run_recorded_by_version_4_reads_back_as_it_was(tmp_path: Path) -> None:
    """Version 5 writes attempts as columns, raw deflate, and summaries without what the
    batches tell; a version-4 file (which a version-4 program wrote) reads back the same,
    failed attempt, zero-usefulness candidate and selected answers included."""
    history = tmp_path / "h.db"
    with CommunityStore.open(_store(tmp_path)) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                                  None, shuffle=False))
        result = asyncio.run(run.run(FlakyModel(), timeout=10))
    assert [len(b.attempts) for b in result.batches] == [1, 2, 1, 1, 1, 1]
    assert result.batches[1].attempts[0].error_kind == "invalid_json"
    assert [c.decision for c in result.reduce.candidates] == ["selected"] * 5 + ["zero_usefulness"]
    assert len(result.selected_map_answers) == 5
    assert RunHistory(history).load(run.run_id).result == result  # type: ignore[arg-type]
    db = sqlite3.connect(history)
    (summary,) = db.execute("SELECT result FROM runs").fetchone()
    db.close()
    assert "selected_map_answers" not in json.loads(unpack_text(summary))  # made again from the batches

    as_version_4(history, result)
    assert RunHistory(history).load(run.run_id).result == result  # type: ignore[arg-type]
    db = sqlite3.connect(history)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 10
    db.close()


def test_a_long_plan_and_summary_are_compressed_and_version_5s_plain_json_reads_back(tmp_path: Path) -> None:
    """Version 6 compresses a long plan and a long result summary (a 300-batch run's);
    version 5 wrote both as plain JSON, which reads back the same."""
    from graphrag_tui.history import messages_json
    from graphrag_tui.history.texts import RAW_DEFLATE

    rows = [{"id": f"ns/{i}", "summary_content": f"Community {i}. {PAD}"} for i in range(300)]
    history = tmp_path / "h.db"
    with CommunityStore.open(build_store(tmp_path / "store.db", rows)) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=4),
                                  None, shuffle=False))
        result = asyncio.run(run.run(SlowModel(0), timeout=30))
    assert result.batch_count == 300 and result.status == "completed"
    db = sqlite3.connect(history)
    plans_into_runs(db)
    plan, summary = db.execute("SELECT plan, result FROM runs").fetchone()
    assert plan[:1] == RAW_DEFLATE and summary[:1] == RAW_DEFLATE
    assert len(unpack_text(plan)) > 2048 and len(unpack_text(summary)) > 2048
    assert RunHistory(history).load(run.run_id).result == result  # type: ignore[arg-type]

    db.execute("UPDATE runs SET plan = ?, result = ?", (unpack_text(plan), unpack_text(summary)))
    db.execute("ALTER TABLE runs DROP COLUMN selection")
    db.execute("ALTER TABLE runs DROP COLUMN seal")
    db.execute("PRAGMA user_version = 5")
    db.commit()
    db.close()
    stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    assert stored.result == result and len(stored.batches) == 300
    assert RunHistory(history).map_prompts(run.run_id, [299]) == {  # type: ignore[arg-type]
        299: messages_json(QUESTION, run.plan.batches[299].content)}  # type: ignore[union-attr]
    db = sqlite3.connect(history)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


def test_a_plan_with_a_lone_surrogate_in_a_community_id_reads_back(tmp_path: Path) -> None:
    """UTF-8 cannot carry a lone surrogate (a store can hold one): the plan falls back to
    escaped JSON rather than losing the run's record."""
    from graphrag_tui.engine import BatchResult, PartRef
    from graphrag_tui.history.formats import pack_contents, plan_packed, read_plan

    odd = "ns/\ud800x"
    planned = [BatchResult(index=0, community_ids=(odd, "ns/2"), prompt_tokens=12,
                           parts=(PartRef(community_id=odd, part=1), PartRef(community_id="ns/2", part=3)))]
    contents = [f"{odd} text"]
    text = plan_packed(planned, contents)
    assert "\\ud800" in text
    (batch,) = read_plan(text, pack_contents(contents))
    assert (batch.community_ids, batch.parts, batch.prompt_tokens, batch.content) == (
        (odd, "ns/2"), ((odd, 1), ("ns/2", 3)), 12, contents[0])


def _six_batch_run(tmp_path: Path) -> tuple[Path, RunSession]:
    """A recorded run of six batches, each answered."""
    history = tmp_path / "h.db"
    with CommunityStore.open(_store(tmp_path)) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                                  None, shuffle=False))
        asyncio.run(run.run(SlowModel(0), timeout=10))
    return history, run


def test_records_that_name_what_the_run_does_not_have_are_one_line(tmp_path: Path) -> None:
    history, run = _six_batch_run(tmp_path)
    assert RunHistory(history).load(run.run_id).result == run.result  # type: ignore[arg-type]
    db = sqlite3.connect(history)
    (summary,) = db.execute("SELECT result FROM runs").fetchone()
    db.execute("UPDATE runs SET result = ?", (unpack_text(summary).replace('"batch_index":[0,', '"batch_index":[-1,'),))
    db.commit()
    with pytest.raises(HistoryError, match=r"cannot be read: a Reduce candidate names batch -1, which the run does not "
                                           r"have$"):
        RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    db.execute("UPDATE runs SET result = ?", (summary,))
    from graphrag_tui.history.formats import read_records
    from graphrag_tui.history.texts import pack_text

    (packed,) = db.execute("SELECT records FROM batch_records").fetchone()
    group = json.loads(unpack_text(packed))
    assert sorted(read_records([packed])) == list(range(6)) and group["model_names"] == ["slow test model"]
    assert group["count"] == 6 and group["models"] == {"same": 0}  # one model answered every batch: written once
    for damaged, said in (({"models": [0, 0, 1, 0, 0, 0]}, "a batch record names model 1, which its group does not have"),
                          ({"count": 10**12}, "a recorded column of one value has no usable count of rows (1000000000000)"),
                          ({"count": 7}, "a recorded table of 7 rows has columns of 6 rows"),
                          # a few bytes that claim a million records (it took 4.75 GB for ten million)
                          ({**{k: {"same": v[0]} for k, v in group.items() if isinstance(v, list) and k != "model_names"},
                            "count": 1_000_000, "attempt_counts": {"same": 0}, "attempts": {"count": 0}},
                           "recorded tables of repeated values claim more than 200000 rows"),
                          # numbers no recorder writes: they crashed the app's views, and `runs show --json` wrote
                          # NaN and Infinity, which are not JSON
                          ({"usefulness": [float("nan")] * 6}, "a recorded number is NaN, which JSON does not have"),
                          ({"usefulness": [12345.5] * 6}, "a recorded number is 1e400, past what a float holds"),
                          ({"usefulness": [-1000] * 6}, "batch 0's recorded usefulness -1000 is not a number from 0 to 100"),
                          # a re-run wrote the batches it keeps with their models' names: a list crashed it
                          ({"model_names": [["slow test model"]]}, "a group of batch records names its models "
                                                                   "otherwise than as texts"),
                          ({"model_names": "slow test model"}, "a group of batch records names its models otherwise "
                                                               "than as texts"),
                          # a record of a batch the plan does not have was never read: the run showed its last
                          # batch as never sent, and a re-run sent it again
                          *(({"index": [*group["index"][:-1], index]}, f"run {run.run_id} has a record of batch "
                                                                       f"{index}, which its 6 batches do not have")
                            for index in (10**30, -1, 6)),
                          *(({"index": [*group["index"][:-1], index]}, f"a batch record names batch {named}, which no "
                                                                       "run has")
                            for index, named in (("5", "'5'"), (True, "'True'"), (1.0, "'1.0'"), (None, "'None'")))):
        text = json.dumps({**group, **damaged}).replace("12345.5", "1e400")
        db.execute("UPDATE batch_records SET records = ?", (pack_text(text),))
        db.commit()
        with pytest.raises(HistoryError, match=rf"cannot be read: {re.escape(said)}$"):
            RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    db.close()


def test_a_runs_compressed_texts_unpack_to_at_most_its_limit_in_all(tmp_path: Path, monkeypatch) -> None:
    """Each text within its own limit, five groups of 200 MiB (a 1.2 MB file) took 6 GB to
    read and wrote a 1.7 GB export."""
    from graphrag_tui.history import texts

    history, run = _six_batch_run(tmp_path)
    db = sqlite3.connect(history)
    (plan, contents, result), groups = db.execute(
        "SELECT run_plans.plan, run_plans.contents, result FROM runs JOIN run_plans USING (run_id)").fetchone(), db.execute(
        "SELECT records FROM batch_records").fetchall()
    db.close()
    assert isinstance(contents, bytes)  # compressed
    size = sum(len(unpack_text(t).encode()) for t in (plan, contents, result, *(g for (g,) in groups)) if isinstance(t, bytes))
    monkeypatch.setattr(texts, "RUN_UNPACK_LIMIT", size)
    assert RunHistory(history).load(run.run_id).result == run.result  # type: ignore[arg-type]
    monkeypatch.setattr(texts, "RUN_UNPACK_LIMIT", size - 1)
    with pytest.raises(HistoryError, match=rf"cannot be read: a run's recorded texts unpack to more than {size - 1:,} "
                                           r"bytes in all: graphrag-tui never writes such a run$"):
        RunHistory(history).load(run.run_id)  # type: ignore[arg-type]


def test_a_run_abandoned_after_failures_were_committed_counts_each_failure_once(tmp_path: Path) -> None:
    """The process ends mid-run (the app quits): the batches that failed and were already
    committed are not written again, so the run's failed count stays the number of failed
    batches."""
    history = tmp_path / "h.db"

    with CommunityStore.open(_store(tmp_path)) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                                  None, shuffle=False))

        def failed() -> int:
            return sum(b.status == "failed" for b in run.search.batches) if run.search else 0  # type: ignore[union-attr]

        class FailsTwoThenHangs:
            description = "fails two batches then hangs"

            async def complete(self, request: object) -> str:
                if failed() < 2:
                    return "not a reply"
                await asyncio.Event().wait()
                raise AssertionError("never answers")

            async def aclose(self) -> None:
                pass

        def committed_failures() -> int:
            if not history.exists():
                return 0
            db = sqlite3.connect(f"file:{history}?mode=ro", uri=True)
            try:
                return db.execute("SELECT failed_batch_count FROM runs").fetchone()[0]
            except (sqlite3.OperationalError, TypeError):
                return 0
            finally:
                db.close()

        async def go() -> None:
            task = asyncio.ensure_future(run.run(FailsTwoThenHangs(), timeout=60))
            deadline = time.monotonic() + 10
            while committed_failures() < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert committed_failures() == 2 and not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(go())
    stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    assert stored.status == "interrupted"
    assert [b.status for b in stored.batches] == ["failed", "failed", "pending", "pending", "pending", "pending"]
    assert committed_failures() == 2 and stored.summary.failed_batch_count == 2


def test_a_run_abandoned_while_it_reduced_keeps_its_reduce_attempts(tmp_path: Path) -> None:
    """The app quits while Reduce retries: its failed attempt is written (at once, as a
    batch's failed attempt is) and so is the one cancelled in flight, and the interrupted
    run shows both."""
    history = tmp_path / "h.db"
    reduces: list[int] = []

    class ReduceFailsThenHangs:
        description = "Reduce fails then hangs"

        async def complete(self, request: ChatRequest) -> str:
            if request.stage != "reduce":
                return json.dumps({"answer": "Part.", "usefulness": 40})
            reduces.append(1)
            if len(reduces) == 1:
                return "not a reply"
            await asyncio.Event().wait()
            raise AssertionError("never answers")

    def committed() -> list[Any]:
        db = sqlite3.connect(f"file:{history}?mode=ro", uri=True)
        try:
            return db.execute("SELECT reduce_attempts FROM runs WHERE reduce_attempts IS NOT NULL").fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            db.close()

    with CommunityStore.open(_store(tmp_path)) as store:
        run = RunSession(store, history=history)
        run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=330, map_reserve=0, concurrency=1),
                                  None, shuffle=False))

        async def go() -> None:
            task = asyncio.ensure_future(run.run(ReduceFailsThenHangs(), timeout=60))
            deadline = time.monotonic() + 10
            while not (len(reduces) == 2 and history.exists() and committed()) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert len(reduces) == 2 and not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

        asyncio.run(go())
    stored = RunHistory(history).load(run.run_id)  # type: ignore[arg-type]
    assert stored.status == "interrupted" and [b.status for b in stored.batches] == ["succeeded"] * 6
    assert [(a.attempt, a.error_kind, a.error) for a in stored.result.reduce.attempts] == [
        (1, "invalid_json", stored.result.reduce.attempts[0].error), (2, None, "cancelled")]
    assert stored.result.reduce.attempts[0].raw_response == "not a reply"


def test_a_plan_of_repeated_values_that_claims_a_million_batches_is_refused() -> None:
    """186 bytes of plan that claimed a million batches took 1.8 GB and 36 s to read."""
    from graphrag_tui.history.formats import read_plan

    claims = {"count": 1_000_000, "counts": {"same": 1}, "tokens": {"same": 5}, "lengths": {"same": 1}}
    plan = json.dumps({"batches": claims, "parts": {"count": 1_000_000, "ids": {"same": "c"}, "part": {"same": 1}}})
    with pytest.raises(ValueError, match="^recorded tables of repeated values claim more than 200000 rows$"):
        read_plan(plan, "x" * 1_000_000)
    few = json.dumps({"batches": {**claims, "count": 3}, "parts": {"count": 3, "ids": ["a", "b", "c"], "part": {"same": 1}}})
    assert [(b.community_ids, b.content) for b in read_plan(few, "xyz")] == [(("a",), "x"), (("b",), "y"), (("c",), "z")]


#: Records one run of `sys.argv[1]` (a store) into `sys.argv[2]`, with the flush interval
#: `sys.argv[3]` and Map answers `sys.argv[4]` seconds each, prints whether a writer thread
#: took the records over, and exits as soon as the run ends.
RECORD_AND_EXIT = """
import asyncio, sys, threading
from pathlib import Path
from graphrag_tui.engine import SearchOptions
from graphrag_tui.session import run as session_run
from graphrag_tui.session.run import RunSession, SearchRequest
from graphrag_tui.store import CommunityStore
from tests.test_history import QUESTION, SlowModel
with CommunityStore.open(Path(sys.argv[1])) as store:
    threads = set()
    run = RunSession(store, history=Path(sys.argv[2]), on_event=lambda _: threads.update(threading.enumerate()))
    run.prepare(SearchRequest(QUESTION, None, "leaf", SearchOptions(map_budget=20_000, map_reserve=0), None))
session_run.FLUSH_INTERVAL = float(sys.argv[3])
asyncio.run(run.run(SlowModel(float(sys.argv[4])), timeout=60))
print(any(thread.name.startswith("history-") for thread in threads))
"""


def test_a_process_that_ends_right_after_its_run_leaves_the_history_checkpointed(tmp_path: Path) -> None:
    """Closing the history copies its WAL into the file, on a thread of its own so that the
    run does not wait for it; the process waits for it as it exits. (A CLI or benchmark that
    exited at once killed that thread: the WAL grew by each run, and every later process
    opening the history read it whole.) Texts that do not compress make the copy long. The
    first run ends within the flush interval, the second hands its records to a writer
    thread, which closes the connection last."""
    noise = [os.urandom(30_000).hex() for _ in range(40)]
    store = build_store(tmp_path / "noise.db", [{"id": f"ns/{i}", "summary_content": text} for i, text in enumerate(noise)])
    history = tmp_path / "h.db"
    for interval, delay, writer_thread in (("30", "0", "False"), ("0.01", "0.01", "True")):
        child = subprocess.run([sys.executable, "-c", RECORD_AND_EXIT, str(store), str(history), interval, delay],
                               capture_output=True, text=True, cwd=Path(__file__).parent.parent, timeout=120)
        assert (child.returncode, child.stdout.strip()) == (0, writer_thread), child.stderr
        assert not Path(f"{history}-wal").exists()
    assert [r.status for r in RunHistory(history).list_runs()] == ["completed", "completed"]
    assert history.stat().st_size > 2_400_000  # both runs' contents are in the file itself


def test_reading_a_run_pauses_the_collector_and_leaves_it_as_it_was(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A run read back makes objects that all live on: the collector is paused meanwhile
    (it tripled the time to read a 20,000-batch run), then on again, or off if it was."""
    import gc

    import graphrag_tui.history.stored as stored_module

    path = old_file(tmp_path / "history.db")
    seen: list[bool] = []
    read = stored_module._load_run

    def watched(*args: Any) -> Any:
        seen.append(gc.isenabled())
        return read(*args)

    monkeypatch.setattr(stored_module, "_load_run", watched)
    RunHistory(path).load("aaaaaaaa0001")
    assert (seen, gc.isenabled()) == ([False], True)
    gc.disable()
    try:
        RunHistory(path).load("aaaaaaaa0001")
        assert (seen, gc.isenabled()) == ([False, False], False)
    finally:
        gc.enable()


def test_a_history_created_by_another_process_between_two_reads_is_not_taken_for_a_foreign_file(
        tmp_path: Path) -> None:
    """Two processes starting on a new history at once: the one reading the empty file's
    version saw the other's tables once it committed, and refused the file as not a history
    (its run unrecorded). The version and the schema are one read now: the other waits, or
    this one migrates after it."""
    from graphrag_tui.history import database

    path = tmp_path / "history.db"
    path.touch()
    other = sqlite3.connect(path, timeout=0.1, isolation_level=None)
    this = sqlite3.connect(path, timeout=5, isolation_level=None)
    migrated: list[str] = []

    def the_other_migrates(sql: str) -> None:  # as this connection reads the schema
        if sql.startswith("SELECT type, name, sql FROM sqlite_master") and not migrated:
            migrated.append(sql)
            with contextlib.suppress(sqlite3.OperationalError):  # locked out by this one's read
                database._migrate(other, 0)

    this.set_trace_callback(the_other_migrates)
    try:
        database._prepare(this, path)
    finally:
        this.set_trace_callback(None)
        this.close()
        other.close()
    assert migrated
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()
    assert RunHistory(path).list_runs() == []
