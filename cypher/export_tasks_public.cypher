// The public export records of ONE domain (or, with a null $domain, of any: the HTTP task list):
// only properties core/visibility.py declares public leave the server, each task once.
UNWIND $keys AS k
MATCH (t:Task {key: k})
WHERE $domain IS NULL OR t.domain = $domain
OPTIONAL MATCH (run:Run {key: t.run_key})
RETURN t {.key, .domain, .analysis_type, .tier, .variant, .question, .answer_format, .status, .version,
          .data_fingerprint} AS task,
       run {.key, .domain, .seed, .target, .code_version, .gold_version, .started_at, .finished_at,
            .data_fingerprint, .phraser, .judge, .llm_model, .prompt_versions, .phrase_prompt_version,
            .judge_prompt_version, .workers, .resumed, .shortcut_audit, .shortcut_rejected} AS run,
       [] AS rule_versions
ORDER BY t.key
