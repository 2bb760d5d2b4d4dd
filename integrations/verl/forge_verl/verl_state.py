"""What the loop reads from veRL 0.9.1 at run time, rather than infer: whether veRL is
validating, which weight version its servers hold, and whether its trainer mode is one whose
servers a registered rollout can follow.

- **Validation.** veRL does not tell ``run()``: ``AgentLoopWorker._run_agent_loop(sampling_params,
  trajectory, ...)`` (``experimental/agent_loop/agent_loop.py:661-695``, both trainers) holds
  ``trajectory["validate"]`` (``get_trajectory_info``, from the batch's ``validate`` that
  ``_validate`` sets, ``trainer_base.py:1066``) and awaits ``run`` with the row's fields only.
  ``validating()`` reads it from that caller's frame while ``run`` starts.
- **Version.** veRL's weight sync stamps the version on each server actor
  (``vLLMHttpServer.set_global_steps``, called by ``ServerAdapter.update_weights(global_steps)``,
  ``workers/rollout/vllm_rollout/vllm_rollout.py:249-250``), the number veRL's own loops get back
  as ``extra_fields["global_steps"]``. ``read_server_version`` reads that attribute from every
  server actor (Ray's ``__ray_call__``), or, for servers without an actor (fixed ``upstreams``),
  vLLM's own label (``GET /weight_info``, ``entrypoints/rl/online/api_router.py:226-229``,
  served with ``VLLM_SERVER_DEV_MODE=1``). The proxy then records, per call, the label the
  answering server reports (docs/verl.md, "Versions").
- **Trainer mode.** ``trainer.v1.trainer_mode`` other than ``sync`` (and veRL's fully async
  policy, ``async_training``) change the balancer's servers and their weights while a rollout
  runs: refused at start, naming the setting.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Optional

logger = logging.getLogger(__name__)

#: The Rollout label of a validation rollout (the proxy's VALIDATION_LABEL).
VALIDATION_LABEL = "openforge.dev/validation"

_warned: set[str] = set()


def validating(depth: int = 8) -> Optional[bool]:
    """Whether the calling ``run`` serves veRL's validation pass: ``trajectory["validate"]`` of
    ``_run_agent_loop`` up the stack. None (with a warning, once) when no such caller is found."""
    frame = sys._getframe(1)
    for _ in range(depth):
        frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            break
        if frame.f_code.co_name == "_run_agent_loop":
            trajectory = frame.f_locals.get("trajectory")
            if isinstance(trajectory, dict) and "validate" in trajectory:
                return bool(trajectory["validate"])
    if "validate" not in _warned:
        _warned.add("validate")
        logger.warning("forge_agent: run() was not called by veRL's AgentLoopWorker._run_agent_loop; validation rollouts cannot be told apart")
    return None


def config_get(config: Any, dotted: str) -> Any:
    """A dotted key of veRL's config (an OmegaConf node, a dict or an object); None where a part is missing."""
    node = config
    for part in dotted.split("."):
        if node is None:
            return None
        node = node.get(part) if hasattr(node, "get") else getattr(node, part, None)
    return node


def refuse_async_trainer(config: Any) -> None:
    """Raises ValueError naming the setting when veRL runs a trainer mode online mode cannot follow."""

    def get(dotted: str) -> Any:
        return config_get(config, dotted)

    if get("async_training") is not None:
        raise ValueError("forge_agent online mode: veRL's fully async policy (async_training) moves weights while rollouts run; use the sync trainer (verl.trainer.main_ppo, trainer.v1.trainer_mode=sync)")
    use_v1 = get("trainer.use_v1")
    mode = get("trainer.v1.trainer_mode")
    if (use_v1 is None or bool(use_v1)) and mode not in (None, "sync"):
        raise ValueError(
            f"forge_agent online mode: trainer.v1.trainer_mode={mode} is not supported: veRL's async modes add and remove "
            "servers from its balancer and abort in-flight requests at weight updates while a registered rollout keeps "
            "its servers; set trainer.v1.trainer_mode=sync"
        )


# Run inside veRL's actors by Ray's ``__ray_call__``. Lambdas: cloudpickle sends them by value,
# so the actors' processes need not import forge_verl.
#: In the load-balancer actor: its server id -> server actor handle map (``add_servers``).
_balancer_handles = lambda balancer: dict(getattr(balancer, "_servers", {}) or {})  # noqa: E731
#: In a server actor: the version its weight sync set (``set_global_steps``).
_actor_version = lambda server: getattr(server, "global_steps", None)  # noqa: E731


def _weight_info(base_url: str, timeout: float = 10.0) -> Optional[str]:
    parts = urllib.parse.urlsplit(base_url)
    url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, "/weight_info", "", ""))
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return str(json.loads(resp.read()).get("weight_version"))
    except (urllib.error.URLError, ValueError, OSError):
        return None


async def read_server_version(upstreams: list[str], handles: list[Any]) -> tuple[int, str]:
    """The weight version every server holds, and where it was read (``actor`` or
    ``weight_info``). Raises OnlineError when a server's version cannot be read or the servers
    disagree (a weight sync under way: not veRL's sync mode)."""
    from .online import OnlineError

    versions: dict[str, int] = {}
    sources = set()
    for url, handle in zip(upstreams, handles):
        value: Any = None
        if handle is not None:
            value = await handle.__ray_call__.remote(_actor_version)
            sources.add("actor")
        else:
            value = await asyncio.to_thread(_weight_info, url)
            sources.add("weight_info")
        try:
            versions[url] = int(str(value))
        except ValueError:
            raise OnlineError(
                f"online mode: cannot read the weight version of server {url} (got {value!r}): veRL's server actor has no "
                "global_steps, or (fixed upstreams) vLLM's GET /weight_info is not served (VLLM_SERVER_DEV_MODE=1) or "
                "its weights were not labelled with the policy version (POST /update_weight_version)"
            ) from None
    if len(set(versions.values())) != 1:
        raise OnlineError(f"online mode: veRL's servers hold different weight versions {versions}: a weight sync is under way (run veRL's sync trainer)")
    return next(iter(versions.values())), ",".join(sorted(sources))


class GroupSettle:
    """The sessions of each veRL row (uid) in this worker process (V1's ``_run_prompt`` runs all
    ``n`` of a row in one worker): ``settle`` returns, once all ``n`` settled, whether exactly
    one of them kept outputs (GRPO would score that group of one on its raw reward)."""

    def __init__(self) -> None:
        self._groups: dict[str, dict] = {}

    async def settle(self, uid: str, n: int, kept: bool, timeout_s: Optional[float] = None) -> bool:
        """``timeout_s``: how long to wait for the siblings (a row with fewer sessions than
        ``n``, veRL's ``__rollout_n__``, never completes): then the session is kept."""
        if n <= 1:
            return False
        group = self._groups.setdefault(uid, {"settled": 0, "kept": 0, "done": asyncio.Event()})
        group["settled"] += 1
        group["kept"] += int(kept)
        if group["settled"] >= n:
            group["done"].set()
        try:
            await asyncio.wait_for(group["done"].wait(), timeout_s)
        except asyncio.TimeoutError:
            logger.warning("forge_agent: row %s: %d of rollout.n=%d sessions settled in %.0f s; not leaving out a group of one", uid, group["settled"], n, timeout_s or 0)
            self._groups.pop(uid, None)
            return False
        alone = group["kept"] == 1
        group["left"] = group.get("left", n) - 1
        if group["left"] == 0:
            self._groups.pop(uid, None)
        return alone
