"""What a real model run cost, stage by stage, from the cassettes it recorded (DIBENCH_LLM_RECORD).

Each request is attributed to its stage by its system prompt (extraction, phrasing, judge, agent).
Per stage: requests, HTTP errors (a context overflow is one), replies cut at `max_tokens`
(finish_reason `length`: a runaway reply), prompt and generated tokens, and the server's own time
(llama.cpp's `timings`: prompt_ms + predicted_ms; absent for servers that do not report it).

    python bench/llm_cassette_stats.py out/real/*.jsonl
"""
from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from dibench.generation.questions import PHRASE_SYSTEM
from dibench.generation.validation import JUDGE_SYSTEM
from dibench.ingest.extract import SYSTEM as EXTRACT_SYSTEM

# A request's stage is named by the opening of its system prompt (cassettes keep 80 characters of it).
STAGES = ((EXTRACT_SYSTEM[:40], "extract"), (PHRASE_SYSTEM[:40], "phrase"), (JUDGE_SYSTEM[:40], "judge"))


def stage_of(request: dict[str, Any]) -> str:
    messages = request.get("messages") or [{}]
    system = str(messages[0].get("content") or "")
    if request.get("tools"):
        return "agent"
    return next((name for prefix, name in STAGES if system.startswith(prefix)), "other")


def stats(paths: list[Path]) -> dict[str, dict[str, Any]]:
    out: dict[str, Counter[str]] = defaultdict(Counter)
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            entry = json.loads(line)
            c = out[stage_of(entry["request"])]
            c["requests"] += 1
            response = entry["response"]
            if entry["status"] != 200 or not isinstance(response, dict):
                c["http_errors"] += 1
                if "context" in json.dumps(response):
                    c["context_overflows"] += 1
                continue
            c[f"finish_{response['choices'][0].get('finish_reason')}"] += 1
            usage = response.get("usage") or {}
            c["prompt_tokens"] += usage.get("prompt_tokens", 0)
            c["completion_tokens"] += usage.get("completion_tokens", 0)
            timings = response.get("timings") or {}
            c["server_ms"] += round(timings.get("prompt_ms", 0) + timings.get("predicted_ms", 0))
            c["max_tokens_missing"] += "max_tokens" not in entry["request"]
    return {stage: {**dict(c), "server_s": round(c["server_ms"] / 1000, 1)} for stage, c in sorted(out.items())}


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]]
    if not paths:
        raise SystemExit("usage: python bench/llm_cassette_stats.py CASSETTE.jsonl ...")
    table = stats(paths)
    cols = ["requests", "http_errors", "context_overflows", "finish_length", "max_tokens_missing", "prompt_tokens",
            "completion_tokens", "server_s"]
    print("\t".join(["stage", *cols]))
    for stage, row in table.items():
        print("\t".join([stage, *(str(row.get(c, 0)) for c in cols)]))


if __name__ == "__main__":
    main()
