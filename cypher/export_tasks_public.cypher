// The public export records of ONE domain: only the whitelisted public properties leave the
// server (no gold, SQL, parameters, facts, judge or rule versions), each task once.
UNWIND $keys AS k
MATCH (t:Task {key: k})
WHERE t.domain = $domain
OPTIONAL MATCH (run:Run {key: t.run_key})
RETURN t {.key, .domain, .analysis_type, .tier, .variant, .question, .answer_format, .status, .version,
          .data_fingerprint} AS task,
       run {.*} AS run, [] AS rule_versions
ORDER BY t.key
