CREATE CONSTRAINT routing_catalog_location_key IF NOT EXISTS FOR (n:CatalogLocation) REQUIRE n.public_id IS UNIQUE
