"""The app on a PostgreSQL store (the throwaway cluster): the masked URL in the header, a run
that survives its connection being dropped, a drill-down that reconnects, one that cannot
reach the database and says so, and a database left unwritten."""

from __future__ import annotations

import threading

from graphrag_tui.engine.options import SearchOptions
from graphrag_tui.store.location import parse_location
from graphrag_tui.tui.screens.community import CommunityScreen
from tests.chat_server import Received, Reply, ScriptedChatServer, community_of, completion, reduce_reply
from tests.conftest import PgDatabase
from tests.pg_stores import settled_writes
from tests.tui.conftest import ask, make_app, screen_text, wait_community, wait_finished, wait_until

SIZE = (140, 44)


def _terminate_sessions(database: PgDatabase) -> int:
    """Ends every graphrag-tui session on the database, as a server restart or a DBA would."""
    with database.admin_connect() as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND application_name = 'graphrag-tui'",
            (database.name,),
        ).fetchall()
    return len(rows)


async def test_a_run_and_drill_downs_on_a_database_that_drops_and_then_refuses_the_connection(sample_pg: PgDatabase) -> None:
    before = settled_writes(sample_pg)
    masked = sample_pg.url.replace(sample_pg.cluster.reader_password, "***")
    release = threading.Event()
    held = threading.Event()

    def script(request: Received) -> Reply:
        if request.stage == "reduce":
            return reduce_reply("The port authority pays.")
        held.set()
        return Reply(completion(f'{{"answer": "Notes on {community_of(request)}.", "usefulness": 50}}'), gate=release)

    with ScriptedChatServer(script) as server:
        app = make_app(parse_location(sample_pg.url), server.base_url, display_path=None, namespace="harbor-city",
                       options=SearchOptions(map_budget=900, map_reserve=0))
        async with app.run_test(size=SIZE) as pilot:
            assert masked.removeprefix("postgresql://") in screen_text(app)  # the header cuts its start
            await ask(pilot)
            await wait_until(pilot, held.is_set, what="the first Map call")
            # The Map texts are planned: the store's connection dropping must not stop the Map work.
            assert _terminate_sessions(sample_pg) >= 1
            release.set()
            await wait_finished(pilot)
            result = app.run_state.result
            assert result is not None and result.status == "completed"
            assert result.failed_batch_count == 0 and result.batch_count > 1
            # The next drill-down opens a new session.
            first = result.batches[0].community_ids[0]
            app.open_community(first)
            await wait_community(pilot)
            screen = app.screen
            assert isinstance(screen, CommunityScreen)
            assert (screen.error, screen.detail.id if screen.detail else None) == (None, first)
            await pilot.press("escape")
            # The database now refuses us: the drill-down says so, the app stays up.
            with sample_pg.admin_connect() as conn:
                conn.execute(f'REVOKE CONNECT ON DATABASE "{sample_pg.name}" FROM PUBLIC, graphrag_reader')
            _terminate_sessions(sample_pg)
            app.open_community(first)
            await wait_community(pilot)
            screen = app.screen
            assert isinstance(screen, CommunityScreen) and screen.detail is None
            assert screen.error is not None
            assert screen.error.startswith(f"Lost the database server of store {masked}: ")
            assert "permission denied for database" in screen.error
            shown = screen_text(app)
            assert "Lost the database server" in shown
            await pilot.press("escape")
            await pilot.pause()
            assert app.is_running and not isinstance(app.screen, CommunityScreen)
            # Let in again, the next drill-down connects again.
            with sample_pg.admin_connect() as conn:
                conn.execute(f'GRANT CONNECT ON DATABASE "{sample_pg.name}" TO graphrag_reader')
            app.open_community(first)
            await wait_community(pilot)
            assert isinstance(app.screen, CommunityScreen) and app.screen.error is None
            await pilot.press("escape")
            for password in sample_pg.passwords:
                assert password not in screen_text(app)
    assert settled_writes(sample_pg) == before


async def _explored(app, query: str) -> tuple[list[str], str, list[str]]:  # type: ignore[no-untyped-def]
    """The tree's roots, then a search's result lines and status, in the app's explore screen."""
    from textual.widgets import OptionList, Static

    from tests.tui.test_explore import labels, open_explore, search

    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_explore(pilot)
        roots = labels(screen)
        await search(pilot, screen, query)
        results = screen.query_one("#search-results", OptionList)
        lines = [results.get_option_at_index(i).prompt.plain.split("\n")[0] for i in range(results.option_count)]
        status = str(screen.query_one("#explore-status", Static).render())
        await pilot.press("down")  # from the box into the results
        assert pilot.app.focused is results
        for index in range(results.option_count):  # every result opens its view from the database
            if lines[index].split(" (")[0] in ("Communities", "Entities", "Claims", "Chunks"):
                continue
            results.highlighted = index
            await pilot.press("enter")
            await pilot.pause()
            opened = pilot.app.screen
            await wait_until(pilot, lambda opened=opened: getattr(opened, "loaded", False),
                             what=f"the view of {lines[index]!r}: {opened!r}")
            assert getattr(opened, "error", None) is None
            await pilot.press("escape")
            await pilot.pause()
    return roots, status, lines


async def test_exploring_a_database_shows_what_the_file_shows(tmp_path, pg_database: PgDatabase) -> None:  # type: ignore[no-untyped-def]
    from tests.explore_stores import guards
    from tests.pg_stores import copy_sqlite_to_postgres

    path = guards(tmp_path / "carol.db")
    copy_sqlite_to_postgres(path, pg_database, strict=False)
    on_file = await _explored(make_app(path, cache_dir=tmp_path / "cache"), "Harrow")
    on_database = await _explored(make_app(parse_location(pg_database.url), cache_dir=tmp_path / "cache2"), "Harrow")
    assert on_file[2][:2] == ["Communities (1)", "Harrow's visit  carol/1"]
    assert on_database == on_file
