"""veRL's agent-loop API, imported lazily so this package loads without veRL.

With veRL installed these are veRL's own ``AgentLoopBase``, ``AgentLoopOutput``,
``AgentLoopMetrics`` and ``register`` (verl/experimental/agent_loop/agent_loop.py). Without it
(CI, where veRL cannot be installed) a minimal stand-in with the same names and fields is used;
it exists for tests only and trains nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

try:  # pragma: no cover - exercised only where veRL is installed
    from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found]
        AgentLoopBase,
        AgentLoopMetrics,
        AgentLoopOutput,
        register,
    )

    VERL_AVAILABLE = True
except ImportError:  # the shim: same names, same fields, no torch/ray/pydantic
    VERL_AVAILABLE = False

    class AgentLoopMetrics:  # type: ignore[no-redef]
        """Stand-in for veRL's AgentLoopMetrics (generate_sequences, tool_calls seconds)."""

        def __init__(self, generate_sequences: float = 0.0, tool_calls: float = 0.0) -> None:
            self.generate_sequences = generate_sequences
            self.tool_calls = tool_calls

        def model_dump(self) -> dict:
            return {"generate_sequences": self.generate_sequences, "tool_calls": self.tool_calls}

    class AgentLoopOutput:  # type: ignore[no-redef]
        """Stand-in for veRL's pydantic AgentLoopOutput, same field names and defaults."""

        def __init__(
            self,
            *,
            prompt_ids: list,
            response_ids: list,
            response_mask: list,
            metrics: Any,
            response_logprobs: Optional[list] = None,
            multi_modal_data: Optional[dict] = None,
            reward_score: Optional[float] = None,
            num_turns: int = 0,
            extra_fields: Optional[dict] = None,
        ) -> None:
            self.prompt_ids = prompt_ids
            self.response_ids = response_ids
            self.response_mask = response_mask
            self.response_logprobs = response_logprobs
            self.multi_modal_data = multi_modal_data
            self.reward_score = reward_score
            self.num_turns = num_turns
            self.metrics = metrics
            self.extra_fields = extra_fields if extra_fields is not None else {}

    class _DummyConfig:
        def __init__(self, config: Any) -> None:
            self.config = config

    class AgentLoopBase:  # type: ignore[no-redef]
        """Stand-in for veRL's AgentLoopBase: same constructor and init_class hook."""

        _class_initialized = False

        def __init__(self, trainer_config: Any, server_manager: Any, tokenizer: Any, processor: Any, **kwargs: Any) -> None:
            self.init_class(config=trainer_config.config, tokenizer=tokenizer, processor=processor, **kwargs)
            self.config = trainer_config.config
            self.server_manager = server_manager
            self.tokenizer = tokenizer
            self.processor = processor
            self.loop = asyncio.get_running_loop()

        @classmethod
        def init_class(cls, config: Any, tokenizer: Any, processor: Any, **kwargs: Any) -> None:
            if cls._class_initialized:
                return
            cls._class_initialized = True

        async def run(self, sampling_params: dict, **kwargs: Any) -> "AgentLoopOutput":
            raise NotImplementedError

    _agent_loop_registry: dict = {}

    def register(agent_name: str):  # type: ignore[no-redef]
        """Stand-in for veRL's register: records the class under ``agent_name``."""

        def decorator(subclass: type) -> type:
            _agent_loop_registry[agent_name] = {"_target_": f"{subclass.__module__}.{subclass.__qualname__}"}
            return subclass

        return decorator


def dummy_config(config: Any):
    """The ``trainer_config`` wrapper veRL hands agent loops (``_DummyConfig``), for tests."""
    try:  # pragma: no cover
        from verl.experimental.agent_loop.agent_loop import _DummyConfig as veRLDummy  # type: ignore

        return veRLDummy(config)
    except ImportError:
        return _DummyConfig(config)


__all__ = ["AgentLoopBase", "AgentLoopMetrics", "AgentLoopOutput", "register", "VERL_AVAILABLE", "dummy_config"]
