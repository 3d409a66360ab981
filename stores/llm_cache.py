"""The on-disk cache of LLM replies, keyed by (model, prompt hash).

A rerun with the same model and the same prompts makes no request and gets the same replies:
generation and extraction are reproducible and free to repeat. One JSON file per reply,
written atomically (a crash never leaves half a file that later reads as a reply).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from langchain_core.messages import AIMessage, BaseMessage, message_to_dict, messages_from_dict


def cache_key(model: str, messages: Sequence[BaseMessage]) -> str:
    payload = json.dumps({"model": model, "messages": [message_to_dict(m) for m in messages]},
                         sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


class ReplyCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> AIMessage | None:
        path = self._path(key)
        if not path.is_file():
            return None
        (message,) = messages_from_dict([json.loads(path.read_text(encoding="utf-8"))])
        return message if isinstance(message, AIMessage) else None

    def put(self, key: str, reply: AIMessage) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(message_to_dict(reply), fh, sort_keys=True, default=str)
        os.replace(tmp, path)
