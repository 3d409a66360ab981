-- Keys and indexes, added after the bulk load (search_path is the target schema).
ALTER TABLE district ADD PRIMARY KEY (district_id);
ALTER TABLE account ADD PRIMARY KEY (account_id);
ALTER TABLE client ADD PRIMARY KEY (client_id);
ALTER TABLE disp ADD PRIMARY KEY (disp_id);
ALTER TABLE permanent_order ADD PRIMARY KEY (order_id);
ALTER TABLE trans ADD PRIMARY KEY (trans_id);
ALTER TABLE loan ADD PRIMARY KEY (loan_id);
ALTER TABLE card ADD PRIMARY KEY (card_id);

ALTER TABLE account ADD FOREIGN KEY (district_id) REFERENCES district (district_id);
ALTER TABLE client ADD FOREIGN KEY (district_id) REFERENCES district (district_id);
ALTER TABLE disp ADD FOREIGN KEY (client_id) REFERENCES client (client_id);
ALTER TABLE disp ADD FOREIGN KEY (account_id) REFERENCES account (account_id);
ALTER TABLE permanent_order ADD FOREIGN KEY (account_id) REFERENCES account (account_id);
ALTER TABLE trans ADD FOREIGN KEY (account_id) REFERENCES account (account_id);
ALTER TABLE loan ADD FOREIGN KEY (account_id) REFERENCES account (account_id);
ALTER TABLE card ADD FOREIGN KEY (disp_id) REFERENCES disp (disp_id);

-- The metric templates join along these keys and filter trans on its date.
CREATE INDEX ON account (district_id);
CREATE INDEX ON client (district_id);
CREATE INDEX ON disp (account_id);
CREATE INDEX ON disp (client_id);
CREATE INDEX ON permanent_order (account_id);
CREATE INDEX ON trans (account_id, trans_date);
CREATE INDEX ON trans (trans_date);
CREATE INDEX ON loan (account_id);
CREATE INDEX ON card (disp_id);
-- Each dimension of trans with its time window (`dibench domain check berka` lists none missing).
CREATE INDEX ON trans (type, trans_date);
CREATE INDEX ON trans (operation, trans_date);
CREATE INDEX ON trans (k_symbol, trans_date);

-- Only this schema's tables: a bare ANALYZE would scan every schema in the database.
ANALYZE district, account, client, disp, permanent_order, trans, loan, card;
