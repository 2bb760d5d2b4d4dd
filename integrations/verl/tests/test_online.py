"""Online mode through the real proxy, driven by veRL 0.9.1's own V1 worker (tests/verl_harness.py).

The bun test (tests/trajectory-verl-python.test.ts) starts the proxy (its own upstream: a
simulator that must serve nothing here) and a policy simulator playing veRL's inference server
at FORGE_TEST_VERL_SERVER; veRL's load balancer actor is keyed by that address, as
LLMServerManager keys it by each replica's ``ip:port``. Two steps: step 1 (global_steps 1,
weights of version 0), then a weight change (FORGE_TEST_WEIGHTS_URL: the bun test restarts
the server with other weights), then step 2 (global_steps 2, version 1) in which one rollout
has an infrastructure error. What the loop stored goes to FORGE_TEST_ONLINE_OUT for the bun test
to check against the records."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import unittest
import urllib.request

from tests import verl_harness as vh

SETUP = vh.env_json("FORGE_TEST_SETUP")
HERE = os.path.dirname(__file__)


def need(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: run through `bun test tests/trajectory-verl-python.test.ts`")
    return value


class OnlineThroughTheProxy(unittest.TestCase):
    def test_two_steps_with_a_weight_change_and_an_infra_error(self):
        from forge_verl import COUNTERS

        vh.ensure_ray()
        vh.clear()
        server = need("FORGE_TEST_VERL_SERVER")
        entry = {
            "name": "forge_agent",
            "_target_": "forge_verl.agent_loop.ForgeAgentLoop",
            "mode": "online",
            "proxy_url": need("FORGE_TEST_PROXY_URL"),
            "orchestrator_command": [sys.executable, os.path.join(HERE, "fake_harness.py"), "{rollout_id}"],
            "experiment": "verl-online",
            "poll_interval_s": 0.05,
            "timeout_s": 120,
        }
        overrides = vh.replace_overrides(
            SETUP["command"],
            {
                "data.train_files": SETUP["groups"],
                "data.val_files": SETUP["groups"],
                "data.train_batch_size": "2",
                # a harness conversation is longer than the replay records' 64 + 32 tokens
                "data.max_prompt_length": "4096",
                "data.max_response_length": "4096",
                "actor_rollout_ref.rollout.prompt_length": "4096",
                "actor_rollout_ref.rollout.response_length": "4096",
                "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": "8192",
                "actor_rollout_ref.actor.ppo_mini_batch_size": "2",
                "actor_rollout_ref.model.path": vh.tiny_model_dir(),
                "actor_rollout_ref.rollout.agent.agent_loop_config_path": vh.agent_loop_yaml([entry]),
                "actor_rollout_ref.rollout.temperature": "0.7",
                "actor_rollout_ref.rollout.top_p": "0.95",
                "trainer.default_local_dir": str(vh.work_dir() / "checkpoints-online"),
            },
        )
        cfg = vh.compose(overrides)
        vh.validate(cfg)
        COUNTERS.clear()
        worker = vh.worker(cfg, vh.llm_client(cfg, [server]))
        _, loader = vh.dataloader(cfg, worker.tokenizer, worker.processor)
        steps = []
        for global_steps in (1, 2):
            if global_steps == 2:
                # veRL's on_step_end: the servers load the step's weights (here: the bun test swaps them).
                with urllib.request.urlopen(urllib.request.Request(need("FORGE_TEST_WEIGHTS_URL"), data=b"{}", method="POST"), timeout=60) as r:
                    self.assertEqual(r.status, 200)
                os.environ["FORGE_TEST_INFRA_MARKER"] = str(vh.work_dir() / "infra-marker")
            batch = vh.next_batch(cfg, loader, global_steps=global_steps)
            asyncio.run(vh.run_step(worker, batch))
            stored = vh.stored()
            keys = vh.sample_keys()
            data = vh.fetch(keys, ["extra_fields", "rm_scores"]) if keys else None
            sessions = sorted({k.rsplit("_", 1)[0] for k in keys})
            uids = list(batch["uid"])
            record = {"global_steps": global_steps, "uids": uids, "outputs": []}
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
                self.assertEqual((stored[key]["min_global_steps"], stored[key]["max_global_steps"]), (global_steps - 1, global_steps - 1), f"{key}: served by the weights of step {global_steps - 1}")
                vh.checked("online outputs")
            # Every prompt group is terminal; step 1 stores all 2 × 2 sessions, step 2 one less.
            for uid in uids:
                self.assertEqual(stored[uid]["status"], "finished", uid)
            self.assertEqual(len(sessions), 4 if global_steps == 1 else 3)
            steps.append(record)
            vh.clear()
        self.assertEqual(COUNTERS.get("masked_trajectories"), 1)
        vh.checked("masked infra errors")
        with open(need("FORGE_TEST_ONLINE_OUT"), "w", encoding="utf-8") as f:
            json.dump(steps, f)


if __name__ == "__main__":
    unittest.main()
