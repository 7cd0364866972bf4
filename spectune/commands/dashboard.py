"""``spectune dashboard [STREAMLIT FLAGS…]`` — ``streamlit run`` on the app with the project's Streamlit config.

Streamlit reads ``.streamlit/config.toml`` from the working folder, which an installed copy cannot rely on, so
the project's config (ingest.paths.STREAMLIT_CONFIG: local address, XSRF on, upload cap, no telemetry) is passed
as ``--section.key=value`` flags instead; flags the user gives win (theirs replace ours, key by key) and are
passed through unchanged.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

from ingest import paths


def config_flags(config: Path, user_flags: Sequence[str]) -> list[str]:
    """The config file's options as ``--section.key=value`` flags, minus those ``user_flags`` set."""
    given = {f.lstrip("-").split("=", 1)[0] for f in user_flags if f.startswith("--")}
    with open(config, "rb") as fh:
        table = tomllib.load(fh)
    flags = []
    for section, options in table.items():
        for key, value in options.items():
            name = f"{section}.{key}"
            if name not in given:
                text = str(value).lower() if isinstance(value, bool) else str(value)
                flags.append(f"--{name}={text}")
    return flags


def command(user_flags: Sequence[str]) -> list[str]:
    return ["streamlit", "run", str(paths.DASHBOARD_APP), *config_flags(paths.STREAMLIT_CONFIG, user_flags),
            *user_flags]


def run_words(words: Sequence[str]) -> int:
    """The command with its words unparsed: they are streamlit's flags."""
    user_flags = list(words)
    if user_flags[:1] in (["-h"], ["--help"]):
        print("usage: spectune dashboard [STREAMLIT FLAGS…]  (e.g. --server.port 8502; see `streamlit run --help`)\n"
              f"runs: {' '.join(command([]))}")
        return 0
    from streamlit.web import cli as stcli

    sys.argv = command(user_flags)
    try:
        stcli.main()
    except SystemExit as exc:  # click ends with SystemExit(code)
        return int(exc.code or 0) if not isinstance(exc.code, str) else 2
    return 0
