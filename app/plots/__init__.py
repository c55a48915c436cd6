"""Drawing with matplotlib's object-oriented `Figure` API only (never pyplot: it keeps global state
that leaks and is not thread-safe in a server). Each plot returns image bytes and its alt text.
"""
