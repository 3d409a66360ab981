-- Tables of the demo customer-support company.
-- Runs with search_path set to the target schema (the loader sets it), so names are unqualified.
-- Tables are created bare and filled by COPY; keys, foreign keys and indexes follow in
-- constraints.sql, which is much faster than checking them row by row during the bulk load.

CREATE TABLE plans (
    plan           text          NOT NULL,  -- basic | premium | enterprise
    display_name   text          NOT NULL,
    monthly_fee    numeric(10,2) NOT NULL,  -- EUR per month
    support_hours  text          NOT NULL   -- when agents answer customers without the 24-hour add-on
);

CREATE TABLE countries (
    country_code   char(2) NOT NULL,        -- ISO 3166-1 alpha-2
    country_name   text    NOT NULL,
    region         text    NOT NULL         -- Europe | North America | Latin America | Asia Pacific | Middle East & Africa
);

CREATE TABLE customers (
    customer_id      integer NOT NULL,
    customer_name    text    NOT NULL,
    plan             text    NOT NULL,
    has_24h_support  boolean NOT NULL,      -- around-the-clock support: always on enterprise, an add-on otherwise
    country_code     char(2) NOT NULL,
    signup_date      date    NOT NULL,
    is_internal      boolean NOT NULL       -- internal QA tenants that file automated test tickets
);

CREATE TABLE teams (
    team_id    integer NOT NULL,
    team_name  text    NOT NULL,
    focus      text    NOT NULL
);

CREATE TABLE agents (
    agent_id    integer NOT NULL,
    agent_name  text    NOT NULL,
    team_id     integer NOT NULL,
    hire_date   date    NOT NULL
);

CREATE TABLE tickets (
    ticket_id          integer   NOT NULL,
    customer_id        integer   NOT NULL,
    agent_id           integer   NOT NULL,  -- the assigned agent
    channel            text      NOT NULL CHECK (channel IN ('email', 'phone', 'chat', 'web')),
    priority           text      NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'urgent')),
    category           text      NOT NULL CHECK (category IN ('billing', 'technical', 'account', 'outage', 'general')),
    created_at         timestamp NOT NULL,
    first_response_at  timestamp,           -- first agent (or triage bot) reply; NULL while unanswered
    resolved_at        timestamp,           -- first resolution; NULL while unresolved
    reopened_at        timestamp,           -- first customer reply after resolution, if any
    closed_at          timestamp,           -- closes 28 days after the last resolution (spam at once)
    status             text      NOT NULL CHECK (status IN ('new', 'open', 'waiting_on_customer', 'resolved', 'closed')),
    escalation_type    text      CHECK (escalation_type IN ('transfer', 'engineering', 'management')),
    agent_replies      smallint  NOT NULL,  -- agent replies up to the first resolution
    handle_minutes     integer   NOT NULL,  -- active agent working time logged by the timer
    is_spam            boolean   NOT NULL   -- flagged by the triage bot
);

CREATE TABLE ticket_status_history (
    history_id  bigint    NOT NULL,
    ticket_id   integer   NOT NULL,
    status      text      NOT NULL CHECK (status IN ('new', 'open', 'waiting_on_customer', 'resolved', 'closed')),
    started_at  timestamp NOT NULL,
    ended_at    timestamp               -- NULL for the ticket's current status
);

CREATE TABLE surveys (
    survey_id     integer   NOT NULL,
    ticket_id     integer   NOT NULL,   -- at most one survey per ticket, sent at the first resolution
    score         smallint  NOT NULL CHECK (score BETWEEN 1 AND 5),
    submitted_at  timestamp NOT NULL
);

CREATE TABLE refunds (
    refund_id  integer       NOT NULL,
    ticket_id  integer       NOT NULL,
    kind       text          NOT NULL CHECK (kind IN ('refund', 'service_credit', 'goodwill')),
    amount     numeric(10,2) NOT NULL,  -- EUR
    issued_at  timestamp     NOT NULL
);
