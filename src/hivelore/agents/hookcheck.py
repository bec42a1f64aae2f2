"""Run a wired hook command once with a sample payload, the way its agent would: for `doctor`.

The command runs exactly as the agent's configuration has it, with the sample on stdin and a
throw-away HIVELORE_HOME, so checking a hook never stages a failure or marks a session in the
user's own stores.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from hivelore.hooks.catalog import kind_of
from hivelore.records import record

TIMEOUT_S = 10


@record
class HookCheck:
    event: str
    ok: bool
    seconds: float
    detail: str  # what went wrong, or a short description of the answer


def sample_payload(agent: str, event: str, cwd: Path) -> dict[str, object]:
    """A small payload of the shape `agent` sends for `event`, in folder `cwd`."""
    kind = kind_of(agent, event)
    if agent == "cursor":
        payload: dict[str, object] = {
            "conversation_id": "hivelore-doctor",
            "generation_id": "hivelore-doctor",
            "hook_event_name": event,
            "workspace_roots": [str(cwd)],
        }
    else:
        payload = {"session_id": "hivelore-doctor", "cwd": str(cwd), "hook_event_name": event}
    if kind == "session_start":
        payload["source"] = "startup"
    elif kind == "prompt":
        payload["prompt"] = "hivelore doctor: is this hook wired?"
    elif kind in ("pre_tool", "post_tool", "tool_failure"):
        payload["tool_name"] = "Bash" if agent != "kiro" else "shell"
        payload["tool_input"] = {"command": "true"}
        if kind == "post_tool":
            payload["tool_response"] = {"stdout": "", "stderr": "", "exit_code": 0}
        if kind == "tool_failure":
            payload["error"] = "hivelore doctor: sample failure"
    return payload


def check_hook(command: str, agent: str, event: str, cwd: Path) -> HookCheck:
    """Run one hook command with a sample payload: it must exit 0 and print nothing or a well-formed answer."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        return HookCheck(event, False, 0.0, f"the command cannot be parsed ({exc})")
    # a bare program name is looked up on PATH, as the agent's shell would
    if not argv or not (Path(argv[0]).is_file() or shutil.which(argv[0])):
        missing = argv[0] if argv else "the command"
        return HookCheck(event, False, 0.0, f"{missing} does not exist: run `hivelore install` again")
    payload = json.dumps(sample_payload(agent, event, cwd))
    with tempfile.TemporaryDirectory(prefix="hivelore-doctor-") as home:
        # Answered in the hook's own process: a hook server started for a throw-away home is waste.
        env = {**os.environ, "HIVELORE_HOME": home, "HIVELORE_HOOK_SERVER": "off"}
        started = time.perf_counter()
        try:
            proc = subprocess.run(
                argv, input=payload, capture_output=True, text=True, cwd=cwd, env=env, timeout=TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            return HookCheck(event, False, TIMEOUT_S, f"no answer within {TIMEOUT_S} s")
        except OSError as exc:
            return HookCheck(event, False, 0.0, f"cannot run it ({exc.strerror})")
        seconds = time.perf_counter() - started
    if proc.returncode != 0:
        why = proc.stderr.strip().splitlines()[-1:] or [""]
        return HookCheck(event, False, seconds, f"exit status {proc.returncode} {why[0]}".strip())
    return _judged(event, agent, proc.stdout, seconds)


def _judged(event: str, agent: str, stdout: str, seconds: float) -> HookCheck:
    text = stdout.strip()
    if not text:
        return HookCheck(event, True, seconds, "ran, said nothing")
    if agent == "kiro":
        return HookCheck(event, True, seconds, f"ran, {len(text)} characters of context")
    try:
        answer = json.loads(text)
    except ValueError:
        return HookCheck(event, False, seconds, "printed something that is not JSON: the agent would reject it")
    if not isinstance(answer, dict) or "\n" in text:
        return HookCheck(event, False, seconds, "printed more than one JSON object")
    return HookCheck(event, True, seconds, "ran, answered " + ", ".join(sorted(answer)))
