"""SPEC §3.2: the Map text of one community, empty sections left out."""

from graphrag_tui.engine.corpus import Claim, CommunityContext, Excerpt
from graphrag_tui.engine.maptext import map_text


def test_summary_only() -> None:
    community = CommunityContext(id="c1", summary="Rivers flood in spring.")
    assert map_text(community) == "[Community summary]: Rivers flood in spring."


def test_summary_goes_in_as_stored() -> None:
    community = CommunityContext(id="c1", summary="  line one\nline two  ")
    assert map_text(community) == "[Community summary]:   line one\nline two  "


def test_claims_with_and_without_object() -> None:
    community = CommunityContext(
        id="c1",
        summary="S.",
        claims=(
            Claim(id="k1", leaf_id="c1", subject="ACME", object="Globex", description="acquired it in 2020"),
            Claim(id="k2", leaf_id="c1", subject="ACME", description="is based in Ohio"),
        ),
    )
    assert map_text(community) == (
        "[Community summary]: S.\n"
        "[Supporting claims]:\n"
        "- ACME (relates to Globex): acquired it in 2020\n"
        "- ACME: is based in Ohio"
    )


def test_full_layout_with_excerpts() -> None:
    community = CommunityContext(
        id="root",
        summary="Trade grew.",
        claims=(
            Claim(id="k1", leaf_id="leaf-a", subject="Port", object="City", description="serves it", chunk_id="ch2"),
            Claim(id="k2", leaf_id="leaf-b", subject="Ship", description="sank", chunk_id="ch1"),
        ),
        excerpts=(
            Excerpt(chunk_id="ch2", content="The port serves the city."),
            Excerpt(chunk_id="ch1", content="A ship sank."),
        ),
    )
    assert map_text(community) == (
        "[Community summary]: Trade grew.\n"
        "[Supporting claims]:\n"
        "- Port (relates to City): serves it\n"
        "- Ship: sank\n"
        "[Source excerpts]:\n"
        "- [Chunk ch2] The port serves the city.\n"
        "- [Chunk ch1] A ship sank."
    )


def test_excerpts_without_claims_and_order_as_given() -> None:
    community = CommunityContext(
        id="c",
        summary="中文摘要",
        excerpts=(Excerpt(chunk_id="z", content="last id first"), Excerpt(chunk_id="a", content="then a")),
    )
    assert map_text(community) == (
        "[Community summary]: 中文摘要\n[Source excerpts]:\n- [Chunk z] last id first\n- [Chunk a] then a"
    )
