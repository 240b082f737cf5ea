"""The flags of ``backstay run``: the harness run and its ``--fallback`` candidates."""
