"""Bugs planted on purpose, for the harness's own tests of its search (not upstream bugs; see impl/known_bugs)."""
