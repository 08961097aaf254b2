"""Small facts about the process and its environment that several components read."""

from __future__ import annotations

import os


def integer_setting(name: str, text: str, minimum: int = 0) -> int:
    """``text`` (the value of setting ``name``) as an integer of at least ``minimum``."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer of at least {minimum}, got {text!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be an integer of at least {minimum}, got {text!r}")
    return value


def env_integer(name: str, default: int, minimum: int = 0) -> int:
    """Environment variable ``name`` as an integer of at least ``minimum``; ``default`` if unset."""
    text = os.environ.get(name)
    return default if not text else integer_setting(name, text, minimum)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
