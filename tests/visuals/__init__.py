"""Kind-specific claims: one module per visual kind (the generic contract is tests/test_visuals.py)."""
