"""The SQLite store (the default): every store in ``<state_dir>/state.sqlite``, one module
per domain with the same names as ``backstay.store.redis``. ``open_sqlite_stores``
(``bundle``) gives the engine's bundle; ``_file`` is the connection every store shares
the shape of, ``_schema`` the check of a file before any store writes to it.
"""
