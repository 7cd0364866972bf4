"""The analysis subcommands that own a module each: ``rescore`` (re-scoring a trace) and ``compare`` (drift between
two runs). ``winners`` and ``curve`` live in analysis/__main__.py, which registers these."""
