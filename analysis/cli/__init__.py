"""The speed machinery of the read-only answers (answer cache, precompute, matrix cache). The commands themselves
are in spectune/commands/."""
