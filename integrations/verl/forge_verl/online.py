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

A session that ends without a result (past ``timeout_s``, an orchestrator command that failed,
veRL cancelling the task) cancels the rollout (``POST /control/rollouts/{id}/cancel``: the
proxy answers its further calls 409, aborts those in flight and records nothing of it after the
result) and ends the command's whole process session, harness included.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.error
import urllib.parse
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


def selection_query(limits: Any, several: bool) -> dict:
    """The trajectory route's selection parameters for the loop's ``Limits`` (samples.py):
    veRL's ``rollout.prompt_length`` / ``response_length``, the ``overlong`` policy and reward,
    the processor's vision ids; ``final_only`` under the legacy trainer. Auxiliary samples are
    never trained on online (as the export's default, ``--auxiliary drop``)."""
    query = {"auxiliary": "drop", "overlong": limits.overlong, "overlong_reward": repr(float(limits.overlong_reward)), "final_only": "0" if several else "1"}
    if limits.prompt_length is not None:
        query["max_prompt_length"] = str(int(limits.prompt_length))
    if limits.response_length is not None:
        query["max_response_length"] = str(int(limits.response_length))
    if limits.vision:
        query["vision"] = ",".join(str(int(i)) for i in limits.vision)
    return query


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

    def _values(self, registration: dict, spec: dict) -> dict:
        return {
            "rollout_id": registration["rollout_id"],
            "task_id": spec.get("task_id", ""),
            "api_key": registration.get("api_key", ""),
            "openai_base_url": registration.get("openai_base_url", ""),
            "anthropic_base_url": registration.get("anthropic_base_url", ""),
            "proxy_url": self.proxy_url,
        }

    async def start(self, registration: dict, spec: dict) -> Optional[asyncio.subprocess.Process]:
        """Starts the run: the orchestrator command as a process of its own session (so that a
        cancel ends it and everything it started), or the HTTP hook. Returns the process."""
        values = self._values(registration, spec)
        if self.orchestrator_url:
            await asyncio.to_thread(_request, "POST", self.orchestrator_url, None, {**spec, **registration, **values})
            return None
        argv = [part.format(**values) for part in self.orchestrator_command or []]
        env = {**os.environ, **{f"FORGE_{k.upper()}": str(v) for k, v in values.items()}}
        return await asyncio.create_subprocess_exec(*argv, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True)

    async def wait(self, rollout_id: str, proc: Optional[asyncio.subprocess.Process] = None, output: Optional[asyncio.Future] = None) -> dict:
        """Polls the rollout until it has a result. Raises OnlineTimeout past ``timeout_s`` and
        OnlineError when the orchestrator command (``output``: its ``communicate()``) exits
        non-zero before a result."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            state = await self._call("GET", f"/control/rollouts/{rollout_id}")
            if state.get("result"):
                return state
            if output is not None and output.done() and proc is not None and proc.returncode not in (0, None):
                tail = (output.result()[0] or b"").decode(errors="replace")[-1000:]
                raise OnlineError(f"rollout {rollout_id}: orchestrator command exited {proc.returncode} without a result: {tail}")
            if time.monotonic() > deadline:
                raise OnlineTimeout(f"rollout {rollout_id}: no result after {self.timeout_s:.0f} s (timeout_s); cancelled")
            await asyncio.sleep(self.poll_interval_s)

    async def cancel(self, rollout_id: str, reason: str, status: str = "infra_error") -> dict:
        """``POST /control/rollouts/{id}/cancel``: the proxy refuses the rollout's further calls
        (409), aborts those in flight and records nothing of it after the result."""
        return await self._call("POST", f"/control/rollouts/{rollout_id}/cancel", {"reason": reason[:2000], "status": status})

    async def trajectory(self, rollout_id: str, select: Optional[dict] = None) -> dict:
        """The rollout's trajectory with its images; with ``select`` (``selection_query``), the
        samples the trainer trains on, selected by the proxy (trajectories/select.ts)."""
        query = {"images": "1", **({"select": "1", **select} if select else {})}
        return await self._call("GET", f"/control/rollouts/{rollout_id}/trajectory?{urllib.parse.urlencode(query)}")

    async def run_rollout(self, spec: dict, select: Optional[dict] = None) -> dict:
        """Registers, starts and awaits one rollout; its trajectory. A session that ends without
        the rollout's result (timeout, a failed orchestrator, veRL cancelling the task) cancels
        it at the proxy and ends the orchestrator process and everything it started: no harness
        is left calling the trainer's servers once they sleep or load the next weights."""
        registration = await self.register(spec)
        rollout_id = registration["rollout_id"]
        proc: Optional[asyncio.subprocess.Process] = None
        output: Optional[asyncio.Future] = None
        done = False
        try:
            proc = await self.start(registration, spec)
            # Its output is read all along (a full pipe would block it), kept for an error.
            output = asyncio.ensure_future(proc.communicate()) if proc is not None else None
            await self.wait(rollout_id, proc, output)
            done = True
        except BaseException as error:
            status = "timeout" if isinstance(error, OnlineTimeout) else "infra_error"
            await _shielded(self.cancel(rollout_id, f"the trainer's session ended without a result: {type(error).__name__}: {error}"[:2000], status))
            raise
        finally:
            if proc is not None:
                await _shielded(_end_process(proc, cancelled=not done))
            if output is not None and not output.done():
                output.cancel()
        return await self.trajectory(rollout_id, select)


class OnlineTimeout(OnlineError):
    """The rollout had no result within ``timeout_s``; it was cancelled and its harness ended."""


async def _shielded(coro: Any) -> None:
    # Clean-up must run even when veRL cancels the session's task.
    try:
        await asyncio.shield(asyncio.ensure_future(coro))
    except asyncio.CancelledError:
        pass
    except Exception as error:  # the original error matters more; say what clean-up failed
        import logging

        logging.getLogger(__name__).warning("forge_agent: clean-up failed: %s", error)


async def _end_process(proc: asyncio.subprocess.Process, cancelled: bool, grace_s: float = 5.0, exit_grace_s: float = 60.0) -> None:
    """Ends the orchestrator's process group (SIGTERM, SIGKILL after ``grace_s``). A command
    whose rollout has its result is given ``exit_grace_s`` to exit on its own first (it may
    still be copying results)."""
    if proc.returncode is None and not cancelled:
        try:
            await asyncio.wait_for(proc.wait(), exit_grace_s)
        except asyncio.TimeoutError:
            pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.returncode is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            await asyncio.wait_for(proc.wait(), grace_s)
        except asyncio.TimeoutError:
            continue
    # Whatever it started in its session (a harness that ignored SIGTERM) goes too.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
