-- Clean schema of the PKDD'99 Berka financial dataset.
-- Runs with search_path set to the target schema (the loader sets it), so names are unqualified.
-- Tables are created bare; keys and indexes come after the bulk load (constraints.sql), which is
-- several times faster than checking them row by row during COPY.
-- The original code values (Czech business vocabulary) are kept verbatim; only empty or blank
-- codes become NULL, and YYMMDD integers become real DATE columns.

CREATE TABLE district (
    district_id              integer,        -- A1  district code
    district_name            text,           -- A2  district name
    region                   text,           -- A3  region
    inhabitants              integer,        -- A4  no. of inhabitants
    municipalities_lt_500    integer,        -- A5  no. of municipalities with inhabitants < 499
    municipalities_500_1999  integer,        -- A6  no. of municipalities with inhabitants 500-1999
    municipalities_2000_9999 integer,        -- A7  no. of municipalities with inhabitants 2000-9999
    municipalities_ge_10000  integer,        -- A8  no. of municipalities with inhabitants >= 10000
    cities                   integer,        -- A9  no. of cities
    urban_ratio              numeric(5, 1),  -- A10 ratio of urban inhabitants (percent)
    avg_salary               integer,        -- A11 average salary (CZK per month)
    unemployment_1995        numeric(5, 2),  -- A12 unemployment rate '95 (percent; '?' in the file -> NULL)
    unemployment_1996        numeric(5, 2),  -- A13 unemployment rate '96 (percent)
    entrepreneurs_per_1000   integer,        -- A14 no. of entrepreneurs per 1000 inhabitants
    crimes_1995              integer,        -- A15 no. of committed crimes '95 ('?' in the file -> NULL)
    crimes_1996              integer         -- A16 no. of committed crimes '96
);

CREATE TABLE account (
    account_id   integer,
    district_id  integer,   -- location of the branch
    frequency    text,      -- statement issuance: POPLATEK MESICNE (monthly), POPLATEK TYDNE (weekly), POPLATEK PO OBRATU (after transaction)
    open_date    date       -- original column `date` (YYMMDD)
);

CREATE TABLE client (
    client_id     integer,
    birth_number  text,     -- original YYMMDD code; women have month + 50
    birth_date    date,     -- derived from birth_number
    gender        text,     -- derived from birth_number: 'F' (month + 50) or 'M'
    district_id   integer
);

CREATE TABLE disp (
    disp_id     integer,
    client_id   integer,
    account_id  integer,
    type        text       -- OWNER or DISPONENT (user with rights on the account)
);

-- The original file is `order.asc`; ORDER is a reserved word in SQL, so the table is named for what it holds.
CREATE TABLE permanent_order (
    order_id    integer,
    account_id  integer,
    bank_to     text,           -- bank of the recipient (two-letter code)
    account_to  text,           -- account of the recipient
    amount      numeric(12, 2), -- debited amount (CZK)
    k_symbol    text            -- POJISTNE (insurance), SIPO (household), LEASING, UVER (loan payment); NULL when blank
);

CREATE TABLE trans (
    trans_id         integer,
    account_id       integer,
    trans_date       date,           -- original column `date` (YYMMDD)
    type             text,           -- PRIJEM (credit), VYDAJ (withdrawal), VYBER (cash withdrawal)
    operation        text,           -- VYBER KARTOU, VKLAD, PREVOD Z UCTU, VYBER, PREVOD NA UCET; NULL when blank
    amount           numeric(12, 2), -- amount (CZK)
    balance          numeric(12, 2), -- balance after the transaction (CZK)
    k_symbol         text,           -- POJISTNE, SLUZBY, UROK, SANKC. UROK, SIPO, DUCHOD, UVER; NULL when blank
    partner_bank     text,           -- original column `bank`: bank of the partner
    partner_account  text            -- original column `account`: account of the partner
);

CREATE TABLE loan (
    loan_id     integer,
    account_id  integer,
    grant_date  date,           -- original column `date` (YYMMDD)
    amount      numeric(12, 2), -- amount of money (CZK)
    duration    integer,        -- months
    payments    numeric(12, 2), -- monthly payment (CZK)
    status      text            -- A finished OK, B finished unpaid, C running OK, D running in debt
);

CREATE TABLE card (
    card_id     integer,
    disp_id     integer,
    type        text,   -- junior, classic, gold
    issue_date  date    -- original column `issued` (YYMMDD 00:00:00)
);

COMMENT ON TABLE district IS 'Demographic data of districts; columns A1..A16 of district.asc renamed';
COMMENT ON COLUMN district.district_id IS 'A1: district code';
COMMENT ON COLUMN district.district_name IS 'A2: district name';
COMMENT ON COLUMN district.region IS 'A3: region';
COMMENT ON COLUMN district.inhabitants IS 'A4: no. of inhabitants';
COMMENT ON COLUMN district.municipalities_lt_500 IS 'A5: no. of municipalities with inhabitants < 499';
COMMENT ON COLUMN district.municipalities_500_1999 IS 'A6: no. of municipalities with inhabitants 500-1999';
COMMENT ON COLUMN district.municipalities_2000_9999 IS 'A7: no. of municipalities with inhabitants 2000-9999';
COMMENT ON COLUMN district.municipalities_ge_10000 IS 'A8: no. of municipalities with inhabitants >= 10000';
COMMENT ON COLUMN district.cities IS 'A9: no. of cities';
COMMENT ON COLUMN district.urban_ratio IS 'A10: ratio of urban inhabitants (percent)';
COMMENT ON COLUMN district.avg_salary IS 'A11: average salary';
COMMENT ON COLUMN district.unemployment_1995 IS 'A12: unemployment rate 1995 (percent)';
COMMENT ON COLUMN district.unemployment_1996 IS 'A13: unemployment rate 1996 (percent)';
COMMENT ON COLUMN district.entrepreneurs_per_1000 IS 'A14: no. of entrepreneurs per 1000 inhabitants';
COMMENT ON COLUMN district.crimes_1995 IS 'A15: no. of committed crimes 1995';
COMMENT ON COLUMN district.crimes_1996 IS 'A16: no. of committed crimes 1996';
COMMENT ON TABLE permanent_order IS 'Permanent (standing) payment orders; the original file order.asc';
COMMENT ON COLUMN client.birth_number IS 'Original birth number YYMMDD; women have month + 50';
COMMENT ON COLUMN account.frequency IS 'POPLATEK MESICNE monthly, POPLATEK TYDNE weekly, POPLATEK PO OBRATU after transaction';
COMMENT ON COLUMN trans.type IS 'PRIJEM credit, VYDAJ withdrawal, VYBER withdrawal in cash';
COMMENT ON COLUMN loan.status IS 'A finished no problems, B finished loan not paid, C running OK, D running client in debt';
