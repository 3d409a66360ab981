// What a generation run asked of the LLM: calls per stage, cache hits, failures, prompt sizes (JSON).
MATCH (r:Run {key: $key})
SET r.llm_usage = $usage, r.llm_calls = $calls, r.llm_failures = $failures
