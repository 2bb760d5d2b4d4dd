"""A stand-in harness for the online end-to-end test: two chat turns through the proxy with the
rollout's key (the URLs and key come from the FORGE_* variables ForgeAgentLoop's orchestrator
command gets), then the verifier's verdict via the control API. Standard library only."""

import json
import os
import sys
import urllib.request


def post(url, body, token):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("content-type", "application/json")
    req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def main():
    base = os.environ["FORGE_OPENAI_BASE_URL"]
    key = os.environ["FORGE_API_KEY"]
    messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Create hello.txt"}]
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
    for _ in range(3):
        answer = post(f"{base}/chat/completions", {"model": "qwen3", "messages": messages, "tools": tools}, key)
        m = answer["choices"][0]["message"]
        turn = {"role": "assistant", "content": m.get("content") or ""}
        if m.get("tool_calls"):
            turn["tool_calls"] = m["tool_calls"]
        if m.get("reasoning_content"):
            turn["reasoning_content"] = m["reasoning_content"]
        messages.append(turn)
        if not m.get("tool_calls"):
            break
        for tc in m["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": "ok"})
    rollout_id = sys.argv[1]
    post(f"{os.environ['FORGE_PROXY_URL']}/control/rollouts/{rollout_id}/finish", {"reward": 1, "status": "ok"}, os.environ["FORGE_ADMIN_TOKEN"])


if __name__ == "__main__":
    main()
