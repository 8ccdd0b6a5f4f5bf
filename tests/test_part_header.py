"""The batcher measures part headers without building them (engine/batcher.py `header_size`)."""

import pytest

from graphrag_tui.engine.batcher import SIZING_PART_NUMBER, header_size, part_header
from graphrag_tui.engine.tokens import TextSize


@pytest.mark.parametrize("community_id", ["", "ns/1", "synthetic/100000", "社区/七", "mixed-é/🚢"])
@pytest.mark.parametrize("part", [1, 9, 10, 123, SIZING_PART_NUMBER])
def test_header_size_is_the_size_of_the_header(community_id: str, part: int) -> None:
    assert header_size(TextSize.of(community_id), part) == TextSize.of(part_header(community_id, part))
