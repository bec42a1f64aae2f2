"""The tests marked `agents` drive a real agent CLI: without the pinned CLIs each is skipped, saying
why, or fails where HIVELORE_REQUIRE_AGENT_CLIS=1 (.ci/run) says they must run."""

from __future__ import annotations

import pytest
from real_agents import require_clis


@pytest.fixture(autouse=True)
def agent_clis_installed(request: pytest.FixtureRequest) -> None:
    if request.node.get_closest_marker("agents") is not None:
        require_clis()
