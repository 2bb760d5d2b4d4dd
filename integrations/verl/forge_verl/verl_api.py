"""veRL 0.9.1's agent-loop API, the version this package follows (docs/verl.md names the wheel).

Imported from veRL itself; there is no stand-in. Without veRL this package does not import, and
says how to get it.
"""

from __future__ import annotations

try:
    from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found]
        AgentLoopBase,
        AgentLoopMetrics,
        AgentLoopOutput,
        DictConfigWrap,
        _agent_loop_registry,
        register,
    )
except ImportError as error:  # pragma: no cover - the message is the point
    raise ImportError(
        "forge_verl needs veRL 0.9.1 (verl.experimental.agent_loop): install it with "
        "`pip install verl==0.9.1 cachetools uvicorn fastapi`, or build the project's pinned "
        f"environment with `bash python/build-env.sh` (.venv/reference). Import failed: {error}"
    ) from error

VERL_VERSION = "0.9.1"

__all__ = [
    "AgentLoopBase",
    "AgentLoopMetrics",
    "AgentLoopOutput",
    "DictConfigWrap",
    "VERL_VERSION",
    "_agent_loop_registry",
    "register",
]
