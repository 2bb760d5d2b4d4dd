"""Online mode: one rollout run by the orchestrator through the recording proxy, served by
veRL's own inference servers.

1. ``POST {proxy}/control/rollouts`` (admin token) registers the rollout with
   ``upstreams`` (veRL's server addresses: every call of this rollout goes there, not to the
   proxy's own upstreams), ``policy_version`` (the version of the weights those servers hold:
   the calls are recorded with it) and ``sampling`` (veRL's temperature / top_p / top_k: the
   proxy sets them on every call of the rollout, whatever the harness asked for).
2. The orchestrator runs the harness against the returned URLs: a command (argv template with
   ``{rollout_id} {task_id} {api_key} {openai_base_url} {anthropic_base_url} {proxy_url}``
   placeholders, also passed as ``FORGE_*`` environment variables) or an HTTP hook that receives
   the registration as JSON and returns once it has accepted the run.
3. ``GET {proxy}/control/rollouts/{id}`` is polled until the rollout has a result.
4. ``GET {proxy}/control/rollouts/{id}/trajectory`` gives the assembled samples.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import urllib.error
import urllib.request
from typing import Any, Optional


class OnlineError(RuntimeError):
    """A step of an online rollout failed; the message names the step, URL and status."""


def _request(method: str, url: str, token: Optional[str], body: Optional[dict] = None, timeout: float = 30.0) -> dict:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("content-type", "application/json")
    if token:
        req.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return json.loads(raw) if raw else {}
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")[:500]
        raise OnlineError(f"{method} {url}: HTTP {error.code}: {detail}") from error
    except urllib.error.URLError as error:
        raise OnlineError(f"{method} {url}: {error.reason}") from error


def server_upstreams(addresses: list) -> list[str]:
    """veRL's server addresses (``"ip:port"`` / ``"[v6]:port"``) as OpenAI base URLs.

    Example::

        server_upstreams(["10.0.0.5:41877"])  # ["http://10.0.0.5:41877/v1"]
    """
    out = []
    for address in addresses:
        address = str(address)
        out.append(address.rstrip("/") if address.startswith(("http://", "https://")) else f"http://{address}/v1")
    return out


def sampling_of(sampling_params: dict) -> dict:
    """The part of veRL's per-call ``sampling_params`` the proxy enforces on the harness's calls."""
    out: dict[str, Any] = {}
    for key in ("temperature", "top_p"):
        if sampling_params.get(key) is not None:
            out[key] = float(sampling_params[key])
    if sampling_params.get("top_k") is not None:
        out["top_k"] = int(sampling_params["top_k"])
    return out


class OnlineClient:
    """Runs rollouts through the proxy and an orchestrator hook.

    Example::

        client = OnlineClient("http://127.0.0.1:8080", admin_token="...", orchestrator_command=["bun", "run", "forge", "run-one", "{rollout_id}"])
        trajectory = await client.run_rollout({"experiment": "demo", "task_id": "t1", "upstreams": ["http://10.0.0.5:41877/v1"], "policy_version": 3})
    """

    def __init__(
        self,
        proxy_url: str,
        admin_token: Optional[str],
        orchestrator_command: Optional[list[str]] = None,
        orchestrator_url: Optional[str] = None,
        poll_interval_s: float = 1.0,
        timeout_s: float = 3600.0,
    ) -> None:
        if not orchestrator_command and not orchestrator_url:
            raise ValueError("online mode needs orchestrator_command (argv template) or orchestrator_url (HTTP hook)")
        self.proxy_url = proxy_url.rstrip("/")
        self.admin_token = admin_token
        self.orchestrator_command = orchestrator_command
        self.orchestrator_url = orchestrator_url
        self.poll_interval_s = poll_interval_s
        self.timeout_s = timeout_s

    async def _call(self, method: str, path: str, body: Optional[dict] = None) -> dict:
        return await asyncio.to_thread(_request, method, f"{self.proxy_url}{path}", self.admin_token, body)

    async def register(self, spec: dict) -> dict:
        return await self._call("POST", "/control/rollouts", spec)

    async def start(self, registration: dict, spec: dict) -> None:
        values = {
            "rollout_id": registration["rollout_id"],
            "task_id": spec.get("task_id", ""),
            "api_key": registration.get("api_key", ""),
            "openai_base_url": registration.get("openai_base_url", ""),
            "anthropic_base_url": registration.get("anthropic_base_url", ""),
            "proxy_url": self.proxy_url,
        }
        if self.orchestrator_url:
            await asyncio.to_thread(_request, "POST", self.orchestrator_url, None, {**spec, **registration, **values})
            return
        argv = [part.format(**values) for part in self.orchestrator_command or []]
        env = {**os.environ, **{f"FORGE_{k.upper()}": str(v) for k, v in values.items()}}
        proc = await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            tail = out.decode(errors="replace")[-1000:]
            raise OnlineError(f"orchestrator command {argv!r} exited {proc.returncode}: {tail}")

    async def wait(self, rollout_id: str) -> dict:
        deadline = time.monotonic() + self.timeout_s
        while True:
            state = await self._call("GET", f"/control/rollouts/{rollout_id}")
            if state.get("result"):
                return state
            if time.monotonic() > deadline:
                raise OnlineError(f"rollout {rollout_id}: no result after {self.timeout_s:.0f} s (is the executor reporting /finish?)")
            await asyncio.sleep(self.poll_interval_s)

    async def trajectory(self, rollout_id: str) -> dict:
        return await self._call("GET", f"/control/rollouts/{rollout_id}/trajectory?images=1")

    async def run_rollout(self, spec: dict) -> dict:
        registration = await self.register(spec)
        await self.start(registration, spec)
        await self.wait(registration["rollout_id"])
        return await self.trajectory(registration["rollout_id"])
