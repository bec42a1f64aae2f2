"""How long an agent waits for `hivelore mcp`: spawn → `tools/list` answered, and spawn → the first
`tools/call` answered, set against a bare `python -c pass` measured in the same run.

Each round starts, interleaved: `python -c pass`; `hivelore mcp` with no prepared answers (a new
HIVELORE_HOME: the SDK answers the handshake itself); `hivelore mcp` with the answers `hivelore mcp
--prepare` kept; and `python -m hivelore.mcp` with them (the same server without the start-up of the
CLI, typer and rich). Each server is spoken to as a client does: initialize, notifications/initialized,
tools/list, then at once a tools/call (memory_scopes). Then, prepared, `hivelore mcp` as a 2026 client
speaks to it (Claude Code 2.1.332: server/discover, then tools/list and the call, each in its envelope),
and through the `mcp` SDK's own `Client` in its default mode (`auto`: the same 2026 probe) and in
`legacy` mode (initialize), from `async with Client(...)` to `list_tools()` returned. The command is the
one `hivelore install` writes: the `hivelore` console script with the argument `mcp`. Medians and
minimums over the rounds.

    .venv/bin/python benchmarks/bench_mcp.py            # 7 rounds
    .venv/bin/python benchmarks/bench_mcp.py --runs 3

Target: `tools/list` answered within 1 s of the spawn on an idle 2-core machine, prepared answers.
The exit status is 1 when a server did not answer (its stderr is printed), else 0: figures, no gate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_SECONDS = 1.0
PROTOCOL = "2025-06-18"
HIVELORE = str(Path(sys.executable).with_name("hivelore"))
SERVER = [HIVELORE, "mcp"]
MODULE = [sys.executable, "-m", "hivelore.mcp"]  # the same server without the CLI's typer start-up
MODERN = "2026-07-28"
ENVELOPE = {  # what Claude Code 2.1.332 puts in every request's `_meta` (its clientInfo shortened)
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.332"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class ServerFailed(Exception):
    pass


def _request(rid: int, method: str, params: dict | None = None) -> bytes:
    message: dict = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


def _answer(proc: subprocess.Popen[bytes], rid: int) -> dict:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise ServerFailed(f"the server closed stdout before answering request {rid}")
        message = json.loads(line)
        if message.get("id") == rid:
            return message


def session(home: Path, cwd: Path, command: list[str] = SERVER, modern: bool = False) -> tuple[float, float]:
    """(seconds to the tools/list answer, seconds to the first tools/call answer), from the spawn;
    `modern`: as a 2026 client connects (server/discover, every request in its envelope)."""
    env = {**os.environ, "HIVELORE_HOME": str(home)}
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=cwd, env=env)  # fmt: skip
    assert proc.stdin is not None
    try:
        meta = {"_meta": ENVELOPE} if modern else {}
        if modern:
            proc.stdin.write(_request(1, "server/discover", meta))
        else:
            hello = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
            proc.stdin.write(_request(1, "initialize", hello))
        proc.stdin.flush()
        _answer(proc, 1)
        initialized = b"" if modern else b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
        proc.stdin.write(initialized + _request(2, "tools/list", meta or None))
        proc.stdin.flush()
        _answer(proc, 2)
        listed = time.perf_counter() - start
        proc.stdin.write(_request(3, "tools/call", {"name": "memory_scopes", "arguments": {}, **meta}))
        proc.stdin.flush()
        answer = _answer(proc, 3)
        called = time.perf_counter() - start
        if answer.get("result", {}).get("isError") is not False:
            raise ServerFailed(f"memory_scopes failed: {answer}")
        proc.stdin.close()
        proc.wait(timeout=60)
    except (ServerFailed, ValueError, OSError, subprocess.TimeoutExpired) as exc:
        proc.kill()
        _, err = proc.communicate()
        raise ServerFailed(f"{exc}\n{err.decode(errors='replace')[-2000:]}") from exc
    return listed, called


def sdk_client(home: Path, cwd: Path, mode: str) -> float:
    """Seconds from entering the `mcp` SDK's `Client` (it spawns the server) to `list_tools()` answered."""
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=cwd,
                                   env={**os.environ, "HIVELORE_HOME": str(home)})  # fmt: skip

    async def connect() -> float:
        start = time.perf_counter()
        async with Client(params, mode=mode) as client:
            await client.list_tools()
            return time.perf_counter() - start

    return asyncio.run(connect())


def bare() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="rounds (default 7)")
    args = parser.parse_args(argv)
    series: dict[str, list[float]] = {
        k: []
        for k in (
            "bare", "cold list", "cold call", "warm list", "warm call", "module list", "module call",
            "modern list", "modern call", "sdk auto", "sdk legacy",
        )
    }  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
        root = Path(tmp)
        warm = root / "warm-home"
        subprocess.run([HIVELORE, "mcp", "--prepare"], check=True, capture_output=True,
                       env={**os.environ, "HIVELORE_HOME": str(warm)})  # fmt: skip
        try:
            for round_no in range(args.runs):
                print(f"round {round_no + 1}/{args.runs}", file=sys.stderr)
                series["bare"].append(bare())
                listed, called = session(root / f"cold-home-{round_no}", root)
                series["cold list"].append(listed)
                series["cold call"].append(called)
                listed, called = session(warm, root)
                series["warm list"].append(listed)
                series["warm call"].append(called)
                listed, called = session(warm, root, MODULE)
                series["module list"].append(listed)
                series["module call"].append(called)
                listed, called = session(warm, root, modern=True)
                series["modern list"].append(listed)
                series["modern call"].append(called)
                series["sdk auto"].append(sdk_client(warm, root, "auto"))
                series["sdk legacy"].append(sdk_client(warm, root, "legacy"))
        except ServerFailed as exc:
            print(f"hivelore mcp failed: {exc}", file=sys.stderr)
            return 1
    base = statistics.median(series["bare"])
    print(
        f"spawn → answer, whole process; median and min of {args.runs} rounds; × bare = median / median of "
        f"`python -c pass` ({base * 1000:.0f} ms); load average {os.getloadavg()[0]:.1f} at the end"
    )
    labels = {
        "bare": "python -c pass",
        "cold list": "tools/list, no prepared answers",
        "cold call": "first tools/call, no prepared answers",
        "warm list": "tools/list, prepared answers",
        "warm call": "first tools/call, prepared answers",
        "module list": "tools/list, prepared, python -m hivelore.mcp",
        "module call": "first tools/call, prepared, python -m …",
        "modern list": "tools/list, prepared, 2026 client",
        "modern call": "first tools/call, prepared, 2026 client",
        "sdk auto": "tools/list, prepared, SDK Client auto",
        "sdk legacy": "tools/list, prepared, SDK Client legacy",
    }
    print(f"{'what':<44} {'median ms':>10} {'min ms':>8} {'× bare':>8}  target")
    for key, samples in series.items():
        median = statistics.median(samples)
        target = ""
        if key in ("warm list", "modern list", "sdk auto"):
            target = f"{'PASS' if median <= TARGET_SECONDS else 'MISS'} (≤ {TARGET_SECONDS:g} s)"
        figures = f"{median * 1000:>10,.0f} {min(samples) * 1000:>8,.0f} {median / base:>7.1f}×"
        print(f"{labels[key]:<44} {figures}  {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
