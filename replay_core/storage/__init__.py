"""Storage: the Store (the only code that speaks SQL), its tables, migrations and retention.

Owns every table and every query. Imports only the ground floor (`events`, `config`); every
other wing reads and writes through `Store`, never through the tables.
"""
