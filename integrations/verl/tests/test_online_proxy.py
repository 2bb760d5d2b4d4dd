"""Online mode against the real proxy (started by tests/trajectory-verl-python.test.ts, which
sets FORGE_TEST_PROXY_URL and FORGE_ADMIN_TOKEN): ForgeAgentLoop registers a rollout, runs
fake_harness.py as the orchestrator command, waits for the result and returns the assembled
final sample. The output goes to FORGE_TEST_ONLINE_OUT for the bun test to compare with the
records. Skipped when run alone."""

import asyncio
import json
import os
import sys
import unittest

from forge_verl import ForgeAgentLoop
from forge_verl._verl import dummy_config

PROXY = os.environ.get("FORGE_TEST_PROXY_URL")
HERE = os.path.dirname(__file__)


@unittest.skipUnless(PROXY, "needs FORGE_TEST_PROXY_URL (run through bun test tests/trajectory-verl-python.test.ts)")
class OnlineProxyTest(unittest.TestCase):
    def test_online_rollout_through_the_proxy(self):
        async def go():
            loop = ForgeAgentLoop(
                dummy_config({"actor_rollout_ref": {"rollout": {"response_length": 8192, "prompt_length": 8192}}}),
                None, None, None,
                mode="online",
                proxy_url=PROXY,
                orchestrator_command=[sys.executable, os.path.join(HERE, "fake_harness.py"), "{rollout_id}"],
                poll_interval_s=0.05,
                timeout_s=60,
            )
            return await loop.run({}, index=0, extra_info={"task_id": "hello", "experiment": "verl-online", "group": "g-online"})

        out = asyncio.run(go())
        self.assertEqual(out.reward_score, 1.0)
        self.assertEqual(len(out.response_ids), len(out.response_mask))
        self.assertIn(1, out.response_mask)
        with open(os.environ["FORGE_TEST_ONLINE_OUT"], "w", encoding="utf-8") as f:
            json.dump(
                {
                    "rollout_id": out.extra_fields["forge_rollout_id"],
                    "prompt_ids": out.prompt_ids,
                    "response_ids": out.response_ids,
                    "response_mask": out.response_mask,
                    "response_logprobs": out.response_logprobs,
                    "reward_score": out.reward_score,
                    "num_turns": out.num_turns,
                },
                f,
            )


if __name__ == "__main__":
    unittest.main()
