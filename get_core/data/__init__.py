"""User tables: reading, typing, encoding and bounding them before anything is fitted."""
