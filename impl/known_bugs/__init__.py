"""Upstream's pre-fix behaviours, kept as registered targets so the suite proves it still catches them."""
