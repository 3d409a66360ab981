// What a generation run asked of the LLM: calls per stage, cache hits, failures, prompt sizes (JSON);
// returns the model and prompt versions the run recorded at its start, for its summary.
MATCH (r:Run {key: $key})
SET r.llm_usage = $usage, r.llm_calls = $calls, r.llm_failures = $failures
RETURN r.llm_model AS model, r.prompt_versions AS prompt_versions
