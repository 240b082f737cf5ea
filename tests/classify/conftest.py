"""Assertions in the shared expectations report both sides, as those in the tests do."""

import pytest

pytest.register_assert_rewrite("tests.classify.expect")
