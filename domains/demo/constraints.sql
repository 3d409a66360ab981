-- Keys and indexes of the demo schema, added after the bulk load (search_path = target schema).

ALTER TABLE plans ADD PRIMARY KEY (plan);
ALTER TABLE countries ADD PRIMARY KEY (country_code);
ALTER TABLE customers ADD PRIMARY KEY (customer_id);
ALTER TABLE teams ADD PRIMARY KEY (team_id);
ALTER TABLE agents ADD PRIMARY KEY (agent_id);
ALTER TABLE tickets ADD PRIMARY KEY (ticket_id);
ALTER TABLE ticket_status_history ADD PRIMARY KEY (history_id);
ALTER TABLE surveys ADD PRIMARY KEY (survey_id);
ALTER TABLE refunds ADD PRIMARY KEY (refund_id);

ALTER TABLE customers ADD FOREIGN KEY (plan) REFERENCES plans (plan);
ALTER TABLE customers ADD FOREIGN KEY (country_code) REFERENCES countries (country_code);
ALTER TABLE agents ADD FOREIGN KEY (team_id) REFERENCES teams (team_id);
ALTER TABLE tickets ADD FOREIGN KEY (customer_id) REFERENCES customers (customer_id);
ALTER TABLE tickets ADD FOREIGN KEY (agent_id) REFERENCES agents (agent_id);
ALTER TABLE ticket_status_history ADD FOREIGN KEY (ticket_id) REFERENCES tickets (ticket_id);
ALTER TABLE surveys ADD FOREIGN KEY (ticket_id) REFERENCES tickets (ticket_id);
ALTER TABLE surveys ADD UNIQUE (ticket_id);
ALTER TABLE refunds ADD FOREIGN KEY (ticket_id) REFERENCES tickets (ticket_id);

CREATE INDEX ON tickets (created_at);
CREATE INDEX ON tickets (customer_id);
CREATE INDEX ON tickets (agent_id);
CREATE INDEX ON ticket_status_history (ticket_id, status);
CREATE INDEX ON surveys (submitted_at);
CREATE INDEX ON refunds (ticket_id);
CREATE INDEX ON refunds (issued_at);
-- What the metrics filter on (`dibench domain check demo` lists no missing index): each
-- dimension of the ticket and refund tables with its time window, and the service-level metric's window.
CREATE INDEX ON tickets (channel, created_at);
CREATE INDEX ON tickets (priority, created_at);
CREATE INDEX ON tickets (category, created_at);
CREATE INDEX ON tickets (resolved_at);
CREATE INDEX ON refunds (kind, issued_at);
