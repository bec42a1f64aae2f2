"""hooks.log: where a hook, which must stay silent to its agent, says what went wrong —
`HIVELORE_HOME/logs/hooks.log`. The hook client, the command and the server all write to it; it
imports nothing of hivelore's but `home`, so the client can log before anything else is loaded.
"""

from __future__ import annotations

import os
import time

from hivelore.home import FILE_MODE, home_path, private_folder

LOG_CAP = 1_000_000  # bytes of hooks.log before it is rotated to hooks.log.1


def log(agent: str, event_name: str, message: str) -> None:
    """One line in HIVELORE_HOME/logs/hooks.log: where a hook, which must stay silent, says what went wrong."""
    path = os.path.join(home_path(os.environ), "logs", "hooks.log")
    try:
        private_folder(os.path.dirname(path))
        if os.path.exists(path) and os.path.getsize(path) > LOG_CAP:
            os.replace(path, path + ".1")
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE)
        with open(fd, "a", encoding="utf-8") as log:
            log.write(f"{stamp} {agent} {event_name}: {' '.join(message.split())[:2000]}\n")
    except OSError:
        pass  # nowhere to write: staying silent is all a hook can do
