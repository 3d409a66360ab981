CREATE INDEX metric_id IF NOT EXISTS FOR (n:Metric) ON (n.id)
