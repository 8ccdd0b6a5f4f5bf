"""A PostgreSQL server that stops answering in the middle of a read (a frozen server, a
stalled host): a table is locked so that the read waits, then the session's server
processes are stopped (SIGSTOP), so that not even a cancel request is answered. Ctrl+C still
ends a command with its one line, and the app still quits."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest

from graphrag_tui.store.schema import TABLES
from tests.cli_runner import EXECUTABLE, clean_env
from tests.conftest import PgDatabase

#: The read every command below waits for: the claims (planning's Map lines, info's counts).
LOCKED = "rag_claims"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _sessions(database: PgDatabase, *, waiting: bool) -> list[int]:
    """The server processes of graphrag-tui's sessions on the database (`waiting`: those
    waiting for a lock)."""
    condition = " AND wait_event_type = 'Lock'" if waiting else ""
    with database.admin_connect() as conn:  # its own transaction: pg_stat_activity is read once per transaction
        return [pid for (pid,) in conn.execute(
            f"SELECT pid FROM pg_stat_activity WHERE datname = %s AND application_name = 'graphrag-tui'{condition}",
            (database.name,))]


class Stall:
    """Stalls graphrag-tui's reads of a database: `lock` holds a lock on LOCKED (until the
    end of `stalled`); `freeze` waits until a graphrag-tui session waits for it, then stops
    every graphrag-tui server process of the database (they go on at the end)."""

    def __init__(self, database: PgDatabase) -> None:
        self.database = database
        self.locker = database.admin_connect()
        self.stopped: list[int] = []

    def lock(self) -> None:
        self.locker.execute("BEGIN")
        self.locker.execute(f"LOCK TABLE {LOCKED} IN ACCESS EXCLUSIVE MODE")

    def freeze(self) -> None:
        deadline = time.monotonic() + 30
        while not _sessions(self.database, waiting=True):
            assert time.monotonic() < deadline, "no graphrag-tui session came to wait for the lock"
            time.sleep(0.05)
        for pid in _sessions(self.database, waiting=False):
            os.kill(pid, signal.SIGSTOP)
            self.stopped.append(pid)


@contextmanager
def stalled(database: PgDatabase) -> Iterator[Stall]:
    stall = Stall(database)
    try:
        yield stall
    finally:
        for pid in stall.stopped:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        stall.locker.close()  # the lock with it


def _finished(process: subprocess.Popen[str], timeout: float) -> tuple[int, str, str]:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"still running {timeout:.0f} s later; stderr: {err!r}") from None
    return process.returncode, out, err


@pytest.mark.parametrize("command", [
    ["plan", "who pays?", "--namespace", "harbor-city", "--no-config"],  # its reads are in read-ahead threads
    ["info"],  # in the main thread
    ["query", "who pays?", "--namespace", "harbor-city", "--no-config", "--no-history",
     "--base-url", "http://127.0.0.1:9/v1"],
], ids=["plan", "info", "query"])
def test_ctrl_c_ends_a_command_whose_server_stopped_answering(sample_pg: PgDatabase, command: list[str]) -> None:
    args = [EXECUTABLE, command[0], sample_pg.url, *command[1:]]
    with stalled(sample_pg) as stall:
        stall.lock()
        process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                   text=True, env=clean_env())
        try:
            stall.freeze()
            interrupted = time.monotonic()
            process.send_signal(signal.SIGINT)
            code, out, err = _finished(process, timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    # the driver's own warning (its cancel request went unanswered) is not a second line
    assert (code, out, err) == (130, "", "graphrag-tui: interrupted\n")
    assert time.monotonic() - interrupted < 12  # the driver waits up to 5 s for its cancel request


APP_CHILD = """
import asyncio, sys, time
from graphrag_tui.store.location import parse_location
from tests.tui.conftest import ask, make_app

async def main():
    app = make_app(parse_location(sys.argv[1]), display_path=None, namespace="harbor-city")
    async with app.run_test(size=(120, 40)) as pilot:
        print("started", flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # the claims are locked now
        await ask(pilot)
        await asyncio.to_thread(sys.stdin.readline)  # the server stopped
        app.exit()
    print("closed", flush=True)

asyncio.run(main())
"""


def test_the_app_quits_while_its_plan_waits_for_a_server_that_stopped_answering(sample_pg: PgDatabase) -> None:
    """The run's planning read waits in a thread; quitting closes the store, which ends
    that read (it used to wait for it, forever)."""
    with stalled(sample_pg) as stall:
        child = subprocess.Popen([sys.executable, "-c", APP_CHILD, sample_pg.url], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(), cwd=ROOT)
        try:
            assert child.stdout is not None and child.stdin is not None
            assert select.select([child.stdout], [], [], 60)[0], "the app did not start within 60 s"
            assert child.stdout.readline() == "started\n"  # the app read the store's namespaces
            stall.lock()
            child.stdin.write("\n")
            child.stdin.flush()
            stall.freeze()
            quitting = time.monotonic()
            child.stdin.write("\n")
            child.stdin.flush()
            code, out, err = _finished(child, timeout=30)
        finally:
            if child.poll() is None:
                child.kill()
                child.communicate()
    assert (code, out, err) == (0, "closed\n", "")
    assert time.monotonic() - quitting < 10


def _dead_server_settings(url: str) -> dict[str, str | None]:
    from graphrag_tui.store.location import parse_location
    from graphrag_tui.store.pg_connection import connect

    with connect(parse_location(url)) as conn:
        return {o.keyword.decode(): o.val and o.val.decode() for o in conn.pgconn.info
                if o.keyword in (b"keepalives", b"keepalives_idle", b"keepalives_interval", b"keepalives_count",
                                 b"tcp_user_timeout")}


def test_a_session_finds_out_that_its_servers_host_is_gone_within_about_a_minute(sample_pg: PgDatabase) -> None:
    """A host that vanishes (no process to stop here: packets dropped) is found out by TCP:
    keepalives probe it while a read waits, and what was sent may stay unacknowledged for a
    minute. The URL's own settings are left as they are."""
    assert _dead_server_settings(sample_pg.url) == {
        "keepalives": "1", "keepalives_idle": "20", "keepalives_interval": "10", "keepalives_count": "3",
        "tcp_user_timeout": "60000",
    }
    assert _dead_server_settings(sample_pg.url + "?keepalives_idle=99") == {
        "keepalives": None, "keepalives_idle": "99", "keepalives_interval": None, "keepalives_count": None,
        "tcp_user_timeout": None,
    }


def test_ctrl_c_cancels_a_copy_waiting_for_another_sessions_lock(graphrag_ts_database: PgDatabase) -> None:
    """A write waiting for a lock another session holds: Ctrl+C cancels its statement on
    the server and the copy ends at once, nothing written (it waited until the lock was
    released, which here is never)."""
    database = graphrag_ts_database
    sample = os.path.join(ROOT, "sample_db", "sample.db")
    with stalled(database) as stall:
        stall.lock()
        process = subprocess.Popen([EXECUTABLE, "copy", sample, database.admin_url], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=clean_env())
        try:
            deadline = time.monotonic() + 30
            while not _sessions(database, waiting=True):
                assert time.monotonic() < deadline, "the copy did not come to wait for the lock"
                time.sleep(0.05)
            interrupted = time.monotonic()
            process.send_signal(signal.SIGINT)
            code, out, err = _finished(process, timeout=30)
            took = time.monotonic() - interrupted
            assert _sessions(database, waiting=False) == []  # its session is gone, the lock still held
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert (code, out, err) == (130, "", "graphrag-tui: interrupted: nothing was written\n")
    assert took < 3
    with database.admin_connect() as conn:
        assert [conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in TABLES] == [0] * len(TABLES)
