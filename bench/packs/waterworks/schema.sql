CREATE TABLE areas (area_id integer PRIMARY KEY, area_name text NOT NULL, region text NOT NULL);
CREATE TABLE customers (customer_id integer PRIMARY KEY, area_id integer NOT NULL REFERENCES areas,
                        segment text NOT NULL, meter_type text NOT NULL, account_kind text NOT NULL,
                        on_hardship boolean NOT NULL, joined_on date NOT NULL);
CREATE TABLE meter_reads (read_id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers,
                          read_on date NOT NULL, read_type text NOT NULL, consumption_m3 numeric(10,3) NOT NULL);
CREATE TABLE bills (bill_id integer PRIMARY KEY, customer_id integer NOT NULL REFERENCES customers,
                    bill_kind text NOT NULL, issued_on date NOT NULL, due_on date NOT NULL,
                    amount numeric(10,2) NOT NULL, drought_levy numeric(8,2) NOT NULL, paid_on date);
CREATE INDEX ON bills (issued_on);
