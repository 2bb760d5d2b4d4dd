"""Online mode against a stand-in control API (http.server on 127.0.0.1, port 0): register,
run the orchestrator command, poll for the result, fetch the trajectory."""

import asyncio
import json
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from forge_verl import ForgeAgentLoop, OnlineError
from forge_verl._verl import dummy_config

SAMPLE = {
    "sample_id": "r-1#1",
    "rollout_id": "r-1",
    "prompt_ids": [1, 2, 3],
    "response_ids": [10, 4, 11],
    "response_mask": [1, 0, 1],
    "response_logprobs": [-0.5, 0.0, -0.25],
    "reward": 1.0,
    "num_turns": 4,
    "is_final": True,
}


class FakeProxy:
    def __init__(self):
        self.requests = []
        self.polls = 0
        state = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, code, body):
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                state.requests.append(("POST", self.path, self.headers.get("authorization"), body))
                if self.path == "/control/rollouts":
                    self.reply(201, {"rollout_id": "r-1", "api_key": "k", "openai_base_url": "http://x/r/r-1/v1", "anthropic_base_url": "http://x/r/r-1", "policy_version": 0})
                else:
                    self.reply(404, {"error": "no route"})

            def do_GET(self):
                state.requests.append(("GET", self.path, self.headers.get("authorization"), None))
                if self.path == "/control/rollouts/r-1":
                    state.polls += 1
                    self.reply(200, {"rollout": {}, "result": {"reward": 1} if state.polls >= 2 else None, "calls": 2})
                elif self.path == "/control/rollouts/r-1/trajectory":
                    self.reply(200, {"rollout_id": "r-1", "status": "ok", "samples": [{**SAMPLE, "sample_id": "r-1#0", "is_final": False}, SAMPLE]})
                else:
                    self.reply(404, {"error": "no route"})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class OnlineTest(unittest.TestCase):
    def setUp(self):
        self.proxy = FakeProxy()

    def tearDown(self):
        self.proxy.close()

    def run_loop(self, command):
        async def go():
            import os

            os.environ["FORGE_TEST_ADMIN"] = "admin-secret"
            loop = ForgeAgentLoop(
                dummy_config({}), None, None, None, mode="online", proxy_url=self.proxy.url,
                admin_token_env="FORGE_TEST_ADMIN", orchestrator_command=command, poll_interval_s=0.01, timeout_s=5,
            )
            return await loop.run({}, index=3, extra_info={"task_id": "t-7", "experiment": "demo"}, data_source="forge")

        return asyncio.run(go())

    def test_register_run_wait_fetch(self):
        command = [sys.executable, "-c", "import os,sys; assert sys.argv[1]=='r-1' and os.environ['FORGE_API_KEY']=='k'", "{rollout_id}"]
        out = self.run_loop(command)
        self.assertEqual(out.response_ids, SAMPLE["response_ids"])
        self.assertEqual(out.response_mask, SAMPLE["response_mask"])
        self.assertEqual(out.response_logprobs, SAMPLE["response_logprobs"])
        self.assertEqual(out.reward_score, 1.0)
        method, path, auth, body = self.proxy.requests[0]
        self.assertEqual((method, path, auth), ("POST", "/control/rollouts", "Bearer admin-secret"))
        self.assertEqual(body["task_id"], "t-7")
        self.assertEqual(body["experiment"], "demo")
        self.assertGreaterEqual(self.proxy.polls, 2)

    def test_orchestrator_failure_is_reported(self):
        with self.assertRaises(OnlineError) as ctx:
            self.run_loop([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"])
        self.assertIn("exited 3", str(ctx.exception))
        self.assertIn("boom", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
