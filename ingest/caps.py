"""File-size caps as settings: the largest file a reader opens, where that number came from, and how to change it.

Owns the two caps users meet on big data (issue 16):

* the **import cap** (``ingest results``: result files and spectune export tables): default 1 GiB, set by
  ``--max-file-bytes`` on the command, else ``$SPECTUNE_MAX_FILE_BYTES``;
* the **trace cap** (``analysis rescore``, ``ingest trace``): default 4 GiB (ingest.traces.limits), set by
  ``--max-trace-bytes``, else ``$SPECTUNE_MAX_TRACE_BYTES``. The dashboard's upload cap is its own
  (``$SPECTUNE_MAX_UPLOAD_MB``, .streamlit/config.toml's ``maxUploadSize``).

Sizes are bytes or a number with a unit (``512MiB``, ``2GB``, ``1.5GiB``). A file over a cap is refused
before a byte is read, with an error that names the cap's value, where it came from and both ways to
raise it. An export folder spectune writes splits any table larger than the import cap in force into
parts below it (``requests.part-00000.parquet`` …), so an export always imports back under the same cap.
The variables and defaults are declared in ingest.settings (docs/settings.md); this module adds the flags.
"""

from __future__ import annotations

from dataclasses import dataclass

from ingest import settings as settings_mod
from ingest.settings import UNITS, GiB, MiB, Setting, Settings, parse_size  # noqa: F401 (re-exported)


@dataclass(frozen=True, slots=True)
class Cap:
    """One size cap: its name in messages, the flag that sets it, and the setting (ingest.settings) that holds
    its environment variable and default."""

    what: str
    flag: str
    setting: Setting

    @property
    def env(self) -> str:
        return self.setting.env

    @property
    def default(self) -> int:
        return self.setting.default


IMPORT_CAP = Cap("import limit", "--max-file-bytes", settings_mod.MAX_FILE_BYTES)
TRACE_CAP = Cap("trace size limit", "--max-trace-bytes", settings_mod.MAX_TRACE_BYTES)
_FROM_FLAG: dict[str, int] = {}  # env name -> value given on this process's command line


def set_from_flag(cap: Cap, text: str | None) -> None:
    """The command line's value for ``cap`` (None: not given), for this process."""
    if text is None:
        _FROM_FLAG.pop(cap.env, None)
    else:
        _FROM_FLAG[cap.env] = parse_size(text, cap.flag)


def resolve(cap: Cap, settings: Settings | None = None) -> tuple[int, str]:
    """(bytes, where the value came from): the flag, else the environment (``settings``, default: this process's),
    else the default."""
    if cap.env in _FROM_FLAG:
        return _FROM_FLAG[cap.env], cap.flag
    s = settings if settings is not None else settings_mod.load()
    if cap.setting.name in s.from_env:
        return getattr(s, cap.setting.name), f"${cap.env}"
    return cap.default, "default"


def limit(cap: Cap, settings: Settings | None = None) -> int:
    return resolve(cap, settings)[0]


def over_message(cap: Cap, settings: Settings | None = None) -> str:
    """The tail of a "file is N bytes, …" error: the cap, its source, how to raise it (no format fields)."""
    value, source = resolve(cap, settings)
    return (f"over the {value}-byte {cap.what} ({source}); raise it with {cap.flag} SIZE or "
            f"${cap.env}").replace("{", "{{").replace("}", "}}")
