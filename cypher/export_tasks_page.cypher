// One page of tasks matching the HTTP API's filters, in key order.
MATCH (t:Task)
WHERE ($domain IS NULL OR t.domain = $domain) AND ($analysis_type IS NULL OR t.analysis_type = $analysis_type)
  AND ($tier IS NULL OR t.tier = $tier) AND ($status IS NULL OR t.status = $status)
  AND ($metric IS NULL OR t.metric_id = $metric) AND ($rule IS NULL OR $rule IN t.rule_ids)
RETURN t {.*} AS task
ORDER BY t.key
SKIP $offset LIMIT $limit
