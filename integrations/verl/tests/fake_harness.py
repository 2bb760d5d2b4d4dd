"""A stand-in harness for the online tests: chat turns through the proxy with the rollout's key
(URLs and key from the FORGE_* variables ForgeAgentLoop's orchestrator command gets), then the
verifier's verdict through the control API. It asks for temperature 0.1 on purpose: the proxy
must send veRL's sampling instead. With FORGE_TEST_INFRA_MARKER set, the first run to create
that file reports an infrastructure error after its first call. With FORGE_TEST_HANG_MARKER set,
the first run to create that file hangs after its first call, an orphan that goes on calling
(each answer's status appended to <marker>.log, its pid in <marker>.pid) until it is killed.
Standard library only."""

import hashlib
import json
import os
import sys
import time
import urllib.error
import urllib.request


def post(url, body, token):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")
    req.add_header("content-type", "application/json")
    req.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def first_to_claim(path):
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


def main():
    rollout_id = sys.argv[1]
    base = os.environ["FORGE_OPENAI_BASE_URL"]
    key = os.environ["FORGE_API_KEY"]
    finish = f"{os.environ['FORGE_PROXY_URL']}/control/rollouts/{rollout_id}/finish"
    admin = os.environ["FORGE_ADMIN_TOKEN"]
    marker = os.environ.get("FORGE_TEST_INFRA_MARKER")
    hang = os.environ.get("FORGE_TEST_HANG_MARKER")
    messages = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Create hello.txt"}]
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
    for turn in range(3):
        answer = post(f"{base}/chat/completions", {"model": "qwen3", "messages": messages, "tools": tools, "temperature": 0.1}, key)
        if turn == 0 and marker and first_to_claim(marker):
            post(finish, {"reward": 0, "status": "infra_error", "error": "sandbox lost (test)"}, admin)
            return
        if turn == 0 and hang and first_to_claim(hang):
            orphan(hang, f"{base}/chat/completions", {"model": "qwen3", "messages": messages}, key)
        m = answer["choices"][0]["message"]
        entry = {"role": "assistant", "content": m.get("content") or ""}
        if m.get("tool_calls"):
            entry["tool_calls"] = m["tool_calls"]
        if m.get("reasoning_content"):
            entry["reasoning_content"] = m["reasoning_content"]
        messages.append(entry)
        if not m.get("tool_calls"):
            break
        for tc in m["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": tc["id"], "content": "ok"})
    reward = hashlib.sha256(rollout_id.encode()).digest()[0] % 2
    post(finish, {"reward": reward, "status": "ok" if reward else "failed"}, admin)


def orphan(marker, url, body, key):
    with open(f"{marker}.pid", "w") as f:
        f.write(str(os.getpid()))
    while True:
        time.sleep(0.2)
        try:
            post(url, body, key)
            status = 200
        except urllib.error.HTTPError as error:
            status = error.code
        except OSError:
            status = 0
        with open(f"{marker}.log", "a") as f:
            f.write(f"{time.time()} {status}\n")


if __name__ == "__main__":
    main()
