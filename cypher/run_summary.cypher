MATCH (t:Task)-[:GENERATED_BY]->(:Run {key: $run})
RETURN t.status AS status, t.analysis_type AS analysis_type, t.tier AS tier, t.variant AS variant,
       t.rejections AS rejections, t.rule_ids AS rule_ids, t.metric_id AS metric_id,
       t.featured_rule AS featured_rule, size(coalesce(t.decisive_rules, [])) AS decisive,
       t.sql_plan AS sql_plan
