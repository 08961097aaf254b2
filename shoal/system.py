"""Small facts about the process and its environment that several components read."""

from __future__ import annotations

import enum
import os
from typing import TypeVar

Choice = TypeVar("Choice", bound=enum.Enum)


def integer_setting(name: str, text: str, minimum: int = 0) -> int:
    """``text`` (the value of setting ``name``) as an integer of at least ``minimum``."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be an integer of at least {minimum}, got {text!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be an integer of at least {minimum}, got {text!r}")
    return value


def choice_setting(kind: type[Choice], name: str, text: str) -> Choice:
    """``text`` (the value of setting ``name``) as the member of ``kind`` with that value, in any case."""
    try:
        return kind(text.strip().lower())
    except ValueError:
        known = ", ".join(str(member.value) for member in kind)
        raise ValueError(f"{name} must be one of {known}, got {text!r}") from None


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
