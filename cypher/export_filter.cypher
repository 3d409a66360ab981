// The public selection (service/export.py PublicFilter): tasks whose public fields take one of
// the given values, a null list matching any value. `metric` and `rule` follow the task's
// ON_METRIC and USES_RULE edges. `review` is the state of the reviews of the task's current
// version: unreviewed (none), failed (a reviewer failed a dimension), passed (every one passed).
// Reads only properties core/visibility.py declares public.
MATCH (t:Task)
WHERE ($status IS NULL OR t.status IN $status)
  AND ($domain IS NULL OR t.domain IN $domain)
  AND ($analysis_type IS NULL OR t.analysis_type IN $analysis_type)
  AND ($tier IS NULL OR t.tier IN $tier)
  AND ($variant IS NULL OR t.variant IN $variant)
  AND ($answer_format IS NULL OR t.answer_format IN $answer_format)
  AND ($version IS NULL OR coalesce(t.version, 1) IN $version)
  AND ($key IS NULL OR t.key IN $key)
  AND ($metric IS NULL OR EXISTS { MATCH (t)-[:ON_METRIC]->(m:Metric) WHERE m.id IN $metric })
  AND ($rule IS NULL OR EXISTS { MATCH (t)-[:USES_RULE]->(r:Rule) WHERE r.id IN $rule })
  AND ($review IS NULL OR
       CASE WHEN NOT EXISTS { MATCH (rv:Review)-[:REVIEWS]->(t) WHERE rv.task_version = coalesce(t.version, 1) }
            THEN 'unreviewed'
            WHEN EXISTS { MATCH (rv:Review)-[:REVIEWS]->(t)
                          WHERE rv.task_version = coalesce(t.version, 1) AND NOT rv.passed }
            THEN 'failed'
            ELSE 'passed' END IN $review)
RETURN t.key AS key
