CREATE TABLE clinics (clinic_id integer PRIMARY KEY, clinic_name text NOT NULL, region text NOT NULL, opened_on date NOT NULL);
CREATE TABLE patients (patient_id integer PRIMARY KEY, age_band text NOT NULL, insurance text NOT NULL,
                       home_clinic_id integer NOT NULL REFERENCES clinics, is_test boolean NOT NULL);
CREATE TABLE appointments (appt_id integer PRIMARY KEY, patient_id integer NOT NULL REFERENCES patients,
                           clinic_id integer NOT NULL REFERENCES clinics, specialty text NOT NULL, mode text NOT NULL,
                           booked_at timestamp NOT NULL, scheduled_at timestamp NOT NULL, status text NOT NULL,
                           cancelled_at timestamp, wait_minutes integer, fee numeric(8,2) NOT NULL);
