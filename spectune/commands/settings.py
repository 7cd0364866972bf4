"""``spectune settings``: every setting with its variable, current value, where that value came from, and help.

Parses and prints only: the settings are declared, read and checked in ingest.settings. ``--json`` prints one
JSON document (``{"settings": [...]}``, each entry the setting's declaration plus ``value`` and ``source``);
``--markdown`` prints the table of docs/settings.md. A secret's value is never printed, only whether it is set.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ingest import paths, settings

HIDDEN = "<hidden>"  # a secret's value when it is set


def add_arguments(parser: argparse.ArgumentParser) -> None:
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="one JSON document: each setting's declaration, value "
                                                         "and source")
    out.add_argument("--markdown", action="store_true", help="the table of docs/settings.md (declarations only)")


def shown(setting: settings.Setting, value: Any) -> Any:
    """A value as JSON shows it: paths as text, a set secret hidden."""
    if setting.type == "secret" and value is not None:
        return HIDDEN
    return str(value) if isinstance(value, Path) else value


def document(current: settings.Settings) -> dict[str, Any]:
    return {"settings": [{**s.declaration(), "value": shown(s, getattr(current, s.name)),
                          "source": current.source(s.name)} for s in settings.SETTINGS]}


def _text(value: Any) -> str:
    if value is None:
        return "(unset)"
    return json.dumps(value) if isinstance(value, dict) else str(value)


def markdown_table() -> str:
    """docs/settings.md's table, one row per declared setting (tests/test_settings.py holds the doc to it)."""
    rows = ["| Setting | Variable | Type | Default | Unit | Accepts | Help |",
            "|---|---|---|---|---|---|---|"]
    for s in settings.SETTINGS:
        cells = [f"`{s.name}`", f"`{s.env}`", s.type, f"`{_text(s.default)}`", s.unit or "—", s.accepts(), s.help]
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    if args.markdown:
        print(markdown_table())
        return 0
    current = args.settings  # read once by spectune/cli.py (a bad value: one line there, exit 2)
    doc = document(current)
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    for entry in doc["settings"]:
        unit = f" {entry['unit']}" if entry["unit"] and entry["value"] is not None else ""
        print(f"{entry['name']} = {_text(entry['value'])}{unit}  ({entry['source']}; ${entry['env']})")
        print(f"    {entry['help']}")
        print(f"    accepts {entry['accepts']}; default {_text(entry['default'])}")
    print(f"store in use without --db: {paths.default_db_path(current)}")
    return 0
