"""The harness entry point of ``BaseAdapter.run``: its config split, the captured run,
the attempt capture of a fallback run, and one run's budget.
"""
