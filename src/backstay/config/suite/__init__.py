"""A suite file: its model, spec, schema, the loader and one module per section."""
