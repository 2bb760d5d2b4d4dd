"""Online mode through the real proxy, driven by veRL 0.9.1's own V1 worker (tests/verl_harness.py),
in the order veRL's sync trainer runs (``trainer_base.py`` ``fit``, ``trainer_sync.py``): the
weights of version 0 (``on_init_end``), training step 1, a weight sync to version 1
(``on_step_end``), a validation pass at global_steps 1 (``_validate`` after ``on_step_end``:
served by version 1), step 2 with an infrastructure error, a weight sync to version 2, and step 3
in which one harness hangs past ``timeout_s``; then the legacy trainer's worker (a training step
and a validation pass) and a V1 step through a proxy in token-in mode.

The bun test (tests/verl/python.test.ts) starts the proxy (its own upstream: a
simulator that must serve nothing here) and a policy simulator playing veRL's inference server
at FORGE_TEST_VERL_SERVER, labelled with its weight version as vLLM labels weights
(``/update_weight_version``); each POST to FORGE_TEST_WEIGHTS_URL restarts it with other
weights and the next version. The loop reads the version from the server, never from
global_steps; the bun test then checks every recorded call against the server that answered
it. What the loop stored goes to FORGE_TEST_ONLINE_OUT."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import unittest
import urllib.request

from tests import verl_harness as vh

SETUP = vh.env_json("FORGE_TEST_SETUP")
HERE = os.path.dirname(__file__)


def need(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run through `bun test tests/verl/python.test.ts`")
    return value


def entry(**extra) -> dict:
    return {
        "name": "forge_agent",
        "_target_": "forge_verl.agent_loop.ForgeAgentLoop",
        "mode": "online",
        "proxy_url": need("FORGE_TEST_PROXY_URL"),
        "orchestrator_command": [sys.executable, os.path.join(HERE, "fake_harness.py"), "{rollout_id}"],
        "experiment": "verl-online",
        "poll_interval_s": 0.05,
        "timeout_s": 120,
        **extra,
    }


def config(loop_entry: dict, **changes: str):
    overrides = vh.replace_overrides(
        SETUP["command"],
        {
            "data.train_files": SETUP["groups"],
            "data.val_files": SETUP["groups"],
            "data.train_batch_size": "2",
            "data.val_batch_size": "2",
            # a harness conversation is longer than the replay records' 64 + 32 tokens
            "data.max_prompt_length": "4096",
            "data.max_response_length": "4096",
            "actor_rollout_ref.rollout.prompt_length": "4096",
            "actor_rollout_ref.rollout.response_length": "4096",
            "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": "8192",
            "actor_rollout_ref.actor.ppo_mini_batch_size": "2",
            "actor_rollout_ref.model.path": vh.tiny_model_dir(),
            "actor_rollout_ref.rollout.agent.agent_loop_config_path": vh.agent_loop_yaml([loop_entry]),
            "actor_rollout_ref.rollout.temperature": "0.7",
            "actor_rollout_ref.rollout.top_p": "0.95",
            "actor_rollout_ref.rollout.val_kwargs.temperature": "0.3",
            "actor_rollout_ref.rollout.val_kwargs.top_p": "0.8",
            "trainer.default_local_dir": str(vh.work_dir() / "checkpoints-online"),
            **changes,
        },
    )
    cfg = vh.compose(overrides)
    vh.validate(cfg)
    return cfg


_server_actor = None
_version = 0


def server_actor():
    """The Ray actor veRL's balancer holds for the server: a stand-in for veRL's
    ``vLLMHttpServer`` (a GPU actor running vLLM) keeping what its weight sync sets,
    ``global_steps`` (``set_global_steps``), which the loop reads from it. Version 0 as after
    ``on_init_end``."""
    global _server_actor
    if _server_actor is None:
        import ray

        @ray.remote
        class ServerActor:
            def __init__(self) -> None:
                self.global_steps = None

            async def set_global_steps(self, global_steps: int) -> None:
                self.global_steps = global_steps

        _server_actor = ServerActor.remote()
        ray.get(_server_actor.set_global_steps.remote(0))
    return _server_actor


def sync_weights() -> None:
    """veRL's weight sync (on_step_end): the bun test gives the server other weights, labelled
    with the next version, and the server actor gets that version (ServerAdapter.update_weights
    → set_global_steps)."""
    import ray

    global _version
    with urllib.request.urlopen(urllib.request.Request(need("FORGE_TEST_WEIGHTS_URL"), data=b"{}", method="POST"), timeout=60) as r:
        assert r.status == 200
    _version += 1
    ray.get(server_actor().set_global_steps.remote(_version))


class OnlineThroughTheProxy(unittest.TestCase):
    def run_batch(self, worker, batch, global_steps: int, validate: bool) -> dict:
        partition = "val" if validate else "train"
        asyncio.run(vh.run_step(worker, batch))
        stored = vh.stored(partition)
        keys = vh.sample_keys(partition)
        data = vh.fetch(keys, ["extra_fields", "rm_scores"], partition) if keys else None
        uids = list(batch["uid"])
        record = {"global_steps": global_steps, "validate": validate, "uids": uids, "sessions": sorted({k.rsplit("_", 1)[0] for k in keys}), "outputs": []}
        for i, key in enumerate(keys):
            extra = data["extra_fields"][i]
            extra = extra if isinstance(extra, dict) else extra.data
            record["outputs"].append(
                {
                    "key": key,
                    "rollout_id": extra["forge_rollout_id"],
                    "sample_id": extra["forge_sample_id"],
                    "min_global_steps": stored[key]["min_global_steps"],
                    "max_global_steps": stored[key]["max_global_steps"],
                    "reward": float(data["rm_scores"][i][-1]),
                }
            )
            self.assertEqual(stored[key]["global_steps"], global_steps)
        for uid in uids:
            self.assertEqual(stored[uid]["status"], "finished", uid)
        vh.clear(partition)
        return record

    def test_steps_validation_weight_syncs_an_infra_error_and_a_timeout(self):
        from forge_verl import COUNTERS

        vh.ensure_ray()
        vh.clear()
        vh.clear("val")
        server = need("FORGE_TEST_VERL_SERVER")
        cfg = config(entry())
        COUNTERS.clear()
        # V1 steps: veRL's balancer holds the server's actor, the version is read from it; the
        # legacy steps below: no actor (fixed servers), the version is vLLM's label (/weight_info).
        worker = vh.worker(cfg, vh.llm_client(cfg, [server], [server_actor()]))
        _, loader = vh.dataloader(cfg, worker.tokenizer, worker.processor)
        steps = []

        steps.append(self.run_batch(worker, vh.next_batch(cfg, loader, global_steps=1), 1, False))
        self.assertEqual(len(steps[-1]["sessions"]), 4)  # 2 rows x rollout.n 2
        sync_weights()
        steps.append(self.run_batch(worker, vh.val_batch(loader, global_steps=1), 1, True))
        self.assertEqual(len(steps[-1]["sessions"]), 2)  # val_kwargs.n = 1
        vh.checked("validation pass")

        os.environ["FORGE_TEST_INFRA_MARKER"] = str(vh.work_dir() / "infra-marker")
        steps.append(self.run_batch(worker, vh.next_batch(cfg, loader, global_steps=2), 2, False))
        del os.environ["FORGE_TEST_INFRA_MARKER"]
        # The infra error is masked; its group falls to one session, which is left out too.
        self.assertEqual(len(steps[-1]["sessions"]), 2)
        self.assertEqual((COUNTERS.get("masked_trajectories"), COUNTERS.get("single_session_groups")), (1, 1))
        vh.checked("masked infra errors")
        vh.checked("groups of one left out")

        sync_weights()
        hang = str(vh.work_dir() / "hang-marker")
        os.environ["FORGE_TEST_HANG_MARKER"] = hang
        cfg3 = config(entry(timeout_s=8))
        worker3 = vh.worker(cfg3, vh.llm_client(cfg3, [server], [server_actor()]))
        started = time.monotonic()
        steps.append(self.run_batch(worker3, vh.next_batch(cfg, loader, global_steps=3), 3, False))
        del os.environ["FORGE_TEST_HANG_MARKER"]
        self.assertLess(time.monotonic() - started, 60)
        self.assertEqual(len(steps[-1]["sessions"]), 2)  # the hung session cancelled, its sibling left alone out
        self.assertEqual((COUNTERS.get("cancelled_trajectories"), COUNTERS.get("single_session_groups")), (1, 2))
        with open(f"{hang}.pid") as f:
            pid = int(f.read())
        with self.assertRaises(ProcessLookupError, msg=f"the hung harness (pid {pid}) is still running"):
            os.kill(pid, 0)
        vh.checked("timed-out session cancelled, harness ended")

        # The legacy trainer (trainer.use_v1=False): veRL's AgentLoopWorker with a DataProto as
        # RayPPOTrainer builds it (global_steps only in meta_info; rows repeated rollout.n
        # times), a training step and a validation pass, both served by version 2.
        cfg4 = config(entry(), **{"trainer.use_v1": "False"})
        for validate in (False, True):
            steps.append(self.run_legacy(cfg4, server, global_steps=4, validate=validate))
        vh.checked("legacy trainer steps")

        # Token-in: the same V1 loop through a proxy in token-in mode (FORGE_TEST_TOKEN_IN_PROXY_URL):
        # the harness drops its reasoning, and every rollout is still one sample.
        cfg5 = config(entry(proxy_url=need("FORGE_TEST_TOKEN_IN_PROXY_URL")))
        worker5 = vh.worker(cfg5, vh.llm_client(cfg5, [server], [server_actor()]))
        record = self.run_batch(worker5, vh.next_batch(cfg5, loader, global_steps=5), 5, False)
        record["token_in"] = True
        self.assertEqual(len(record["sessions"]), 4)
        self.assertEqual(sorted(o["key"].rsplit("_", 1)[1] for o in record["outputs"]), ["0"] * 4)  # one output per session
        steps.append(record)
        vh.checked("token-in online rollouts")

        with open(need("FORGE_TEST_ONLINE_OUT"), "w", encoding="utf-8") as f:
            json.dump({"steps": steps, "hang_log": open(f"{hang}.log").read() if os.path.exists(f"{hang}.log") else ""}, f)

    def run_legacy(self, cfg, server: str, global_steps: int, validate: bool) -> dict:
        import uuid

        import numpy as np
        from verl.experimental.agent_loop.agent_loop import AgentLoopWorker
        from verl.protocol import DataProto

        worker = AgentLoopWorker(cfg, vh.llm_client(cfg, [server]))
        _, loader = vh.dataloader(cfg, worker.tokenizer, worker.processor)
        batch = DataProto.from_single_dict(next(iter(loader)))
        batch.non_tensor_batch["uid"] = np.array([str(uuid.uuid4()) for _ in range(len(batch))], dtype=object)
        n = 1 if validate else cfg.actor_rollout_ref.rollout.n
        batch = batch.repeat(repeat_times=n, interleave=True)
        batch.meta_info = {"global_steps": global_steps, **({"validate": True} if validate else {})}
        out = asyncio.run(worker.generate_sequences(batch))
        self.assertEqual(len(out), len(batch))
        return {"global_steps": global_steps, "validate": validate, "legacy": True, "uids": sorted(set(batch.non_tensor_batch["uid"].tolist())), "sessions": [], "outputs": []}

    def test_async_trainer_modes_are_refused_naming_the_setting(self):
        from forge_verl import ForgeAgentLoop
        from forge_verl.verl_api import DictConfigWrap

        for mode in ("colocate_async", "separate_async"):
            cfg = config(entry(), **{"trainer.v1.trainer_mode": mode})
            with self.assertRaises(ValueError) as caught:
                ForgeAgentLoop(trainer_config=DictConfigWrap(cfg), server_manager=None, tokenizer=None, processor=None, dataset_cls=None, data_config=DictConfigWrap(cfg.data), **{k: v for k, v in entry().items() if k not in ("name", "_target_")})
            self.assertIn(f"trainer.v1.trainer_mode={mode}", str(caught.exception))
            vh.checked("async modes refused")


if __name__ == "__main__":
    unittest.main()
