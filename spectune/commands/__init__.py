"""The spectune commands, one module per command or group of related commands (spectune/cli.py COMMANDS names
them). A command module only parses arguments and prints: the work is done by runner, analysis and ingest."""
