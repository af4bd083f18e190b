"""Avro schemas: parsing, validation and the node graph."""
