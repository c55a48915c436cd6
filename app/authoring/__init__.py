"""Tools for bank authors: export a bank to Moodle (GIFT or Moodle XML) and self-test every question.

`cli.init_app(app)` registers the `export-quiz` and `selftest-quizzes` commands.
"""
