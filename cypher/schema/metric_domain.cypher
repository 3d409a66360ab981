CREATE INDEX metric_domain IF NOT EXISTS FOR (n:Metric) ON (n.domain)
