"""Writes the broken matrix files of this folder (run from anywhere: ``python tests/corpus/matrix/make_corpus.py``).

Each file starts from a small valid matrix and breaks one thing; MANIFEST.toml lists the expected line
and message per file. Binary cases (junk bytes, Latin-1, NUL) are written as bytes so they stay exact.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

BASE = """name = "broken"
gpus = ["MI300X"]
[methods.none]
[methods.eagle3]
depths = [2, 3]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
[workloads.code]
max_tokens = 128
[load]
concurrency = [1]
[run]
requests_per_cell = 20
"""


def with_(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


TEXT: dict[str, str] = {
    "toml_syntax_error.toml": with_('gpus = ["MI300X"]', 'gpus = ["MI300X"'),
    "toml_duplicate_key.toml": with_('name = "broken"', 'name = "broken"\nname = "again"'),
    "toml_bare_string.toml": with_("max_tokens = 128", "max_tokens = lots"),
    "empty.toml": "",
    "no_methods.toml": BASE.replace("[methods.none]\n[methods.eagle3]\ndepths = [2, 3]\n", ""),
    "unknown_method.toml": with_("[methods.eagle3]", "[methods.eagle9]"),
    "depth_out_of_range.toml": with_("depths = [2, 3]", "depths = [2, 99]"),
    "depth_is_text.toml": with_("depths = [2, 3]", 'depths = ["3"]'),
    "depths_empty.toml": with_("depths = [2, 3]", "depths = []"),
    "family_without_model.toml": with_('model = "Qwen/Qwen3.5-397B-A17B"', "tensor_parallel_size = 2"),
    "gpus_empty.toml": with_('gpus = ["MI300X"]', "gpus = []"),
    "gpus_not_a_list.toml": with_('gpus = ["MI300X"]', 'gpus = "MI300X"'),
    "concurrency_negative.toml": with_("concurrency = [1]", "concurrency = [-4]"),
    "requests_zero.toml": with_("requests_per_cell = 20", "requests_per_cell = 0"),
    "requests_is_bool.toml": with_("requests_per_cell = 20", "requests_per_cell = true"),
    "endpoint_unknown.toml": with_("requests_per_cell = 20", 'requests_per_cell = 20\nendpoint = "grpc"'),
    "env_var_unset.toml": with_('model = "Qwen/Qwen3.5-397B-A17B"', 'model = "${SPECTUNE_CORPUS_NEVER_SET}"'),
    "workload_not_a_table.toml": with_("[workloads.code]\nmax_tokens = 128", "[workloads]\ncode = 3"),
    "request_rate_negative.toml": with_("max_tokens = 128", "max_tokens = 128\nrequest_rate = -2.5"),
    "port_out_of_range.toml": with_("requests_per_cell = 20", "requests_per_cell = 20\nport = 70000"),
    "adaptive_unknown_key.toml": BASE + "[adaptive]\ntarget_rel_width = 0.1\nspeed = 3\n",
    "methods_not_a_table.toml": BASE.replace("[methods.none]\n[methods.eagle3]\ndepths = [2, 3]\n", "")
    .replace('gpus = ["MI300X"]', 'gpus = ["MI300X"]\nmethods = 3'),
    "tp_size_is_text.toml": with_('model = "Qwen/Qwen3.5-397B-A17B"',
                                  'model = "Qwen/Qwen3.5-397B-A17B"\ntensor_parallel_size = "two"'),
    "max_tokens_is_text.toml": with_("max_tokens = 128", 'max_tokens = "lots"'),
    "depths_duplicate.toml": with_("depths = [2, 3]", "depths = [3, 3]"),
    "gpus_duplicate.toml": with_('gpus = ["MI300X"]', 'gpus = ["MI355X", "MI355X"]'),
    "concurrency_duplicate.toml": with_("concurrency = [1]", "concurrency = [1, 16, 1]"),
    "server_config_duplicate.toml": with_("[workloads.code]", '[families.QwenAgain]\nmodel = "Qwen/Qwen3.5-397B-A17B"'
                                                            "\n[workloads.code]"),
    "name_bidi_override.toml": with_('name = "broken"', 'name = "run\\u202egnp.exe"'),
    "name_control_character.toml": with_('name = "broken"', 'name = "run\\u0007\\u001b[31m"'),
    "temperature_is_text.toml": with_("max_tokens = 128", 'max_tokens = 128\ntemperature = "hot"'),
    "timeout_is_text.toml": with_("requests_per_cell = 20", 'requests_per_cell = 20\nstartup_timeout_s = "soon"'),
    "load_not_a_table.toml": with_("[load]\nconcurrency = [1]", "load = 5").replace(
        "load = 5\n", "").replace('gpus = ["MI300X"]', 'gpus = ["MI300X"]\nload = 5'),
    "vllm_args_not_a_list.toml": with_('model = "Qwen/Qwen3.5-397B-A17B"',
                                       'model = "Qwen/Qwen3.5-397B-A17B"\nvllm_args = 5'),
    "extra_not_a_table.toml": with_("depths = [2, 3]", "depths = [2, 3]\nextra = 5"),
    "draft_models_not_a_table.toml": with_('model = "Qwen/Qwen3.5-397B-A17B"',
                                           'model = "Qwen/Qwen3.5-397B-A17B"\ndraft_models = "x"'),
    "run_env_not_a_table.toml": with_("requests_per_cell = 20", 'requests_per_cell = 20\nenv = "A=1"'),
    "deep_nesting.toml": BASE + "junk = " + "[" * 5000 + "]" * 5000 + "\n",
    "timeout_infinite.toml": with_("requests_per_cell = 20", "requests_per_cell = 20\nstall_timeout_s = inf"),
    "temperature_nan.toml": with_("max_tokens = 128", "max_tokens = 128\ntemperature = nan"),
    "run_key_misspelled.toml": with_("requests_per_cell = 20", "request_per_cell = 20"),
    "load_table_misspelled.toml": with_("[load]", "[loads]"),
    "workload_key_misspelled.toml": with_("max_tokens = 128", "max_token = 128"),
    "method_key_misspelled.toml": with_("depths = [2, 3]", "depth = [2, 3]"),
    "family_key_unknown.toml": with_('model = "Qwen/Qwen3.5-397B-A17B"',
                                     'model = "Qwen/Qwen3.5-397B-A17B"\ntp = 2'),
}

BINARY: dict[str, bytes] = {
    "latin1.toml": BASE.replace('name = "broken"', 'name = "caf\u00e9"').encode("latin-1"),
    "nul_bytes.toml": BASE.replace("[load]", "[lo\x00ad]").encode(),
    "binary_junk.toml": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
    "utf16.toml": BASE.encode("utf-16"),
    # A BOM is accepted (Windows editors write one); the error after it keeps its line.
    "bom_then_duplicate_depths.toml": b"\xef\xbb\xbf" + with_("depths = [2, 3]", "depths = [2, 2]").encode(),
}

# Inputs that cannot be committed (a FIFO, links to endless devices, a sparse 3 GB file): built at test time
# by the recipe named, in tests/reliability/test_corpus_cli.py (MATRIX_GENERATORS).
GENERATED: dict[str, tuple[str, int, str]] = {
    "fifo.toml": ("fifo", 0, "not a regular file (a FIFO (named pipe))"),
    "link_to_dev_zero.toml": ("link_dev_zero", 0, "not a regular file (a character device)"),
    "link_to_dev_urandom.toml": ("link_dev_urandom", 0, "not a regular file (a character device)"),
    "huge_sparse.toml": ("sparse_3gb", 0, "more than the 4,194,304-byte limit"),
}


# Expected error per file: (1-based line, 0 = the file as a whole; a substring of the message).
EXPECT: dict[str, tuple[int, str]] = {
    'depths_duplicate.toml': (5, 'methods.eagle3.depths: 3 is listed twice'),
    'gpus_duplicate.toml': (2, "gpus: 'MI355X' is listed twice"),
    'concurrency_duplicate.toml': (11, 'load.concurrency: 1 is listed twice'),
    'server_config_duplicate.toml': (8, 'families.QwenAgain: the same server as families.Qwen'),
    'name_bidi_override.toml': (1, 'name: '),
    'name_control_character.toml': (1, 'control or bidi-override character'),
    'bom_then_duplicate_depths.toml': (5, 'methods.eagle3.depths: 2 is listed twice'),
    'toml_syntax_error.toml': (3, 'Unclosed array'),
    'toml_duplicate_key.toml': (2, 'Cannot overwrite a value'),
    'toml_bare_string.toml': (9, 'Invalid value'),
    'empty.toml': (0, "missing required key 'methods'"),
    'no_methods.toml': (0, "missing required key 'methods'"),
    'unknown_method.toml': (4, 'methods.eagle9: unknown method (did you mean'),
    'run_key_misspelled.toml': (13, "run.request_per_cell: unknown key (did you mean 'requests_per_cell'?)"),
    'load_table_misspelled.toml': (10, "loads: unknown key (did you mean 'load'?)"),
    'workload_key_misspelled.toml': (9, "workloads.code.max_token: unknown key (did you mean 'max_tokens'?)"),
    'method_key_misspelled.toml': (5, "methods.eagle3.depth: unknown key (did you mean 'depths'?)"),
    'family_key_unknown.toml': (8, "families.Qwen.tp: unknown key (expected one of model, tensor_parallel_size, "),
    'depth_out_of_range.toml': (0, 'methods.eagle3.depths: expected integers in [1, 16], got 99'),
    'depth_is_text.toml': (0, "methods.eagle3.depths: expected integers in [1, 16], got '3'"),
    'depths_empty.toml': (0, 'methods.eagle3.depths: expected a non-empty list of integers'),
    'family_without_model.toml': (0, "families.Qwen: missing required key 'model'"),
    'gpus_empty.toml': (0, 'gpus: expected a non-empty list of GPU names'),
    'gpus_not_a_list.toml': (0, 'matrix.gpus: expected list'),
    'concurrency_negative.toml': (0, 'load.concurrency: expected integers in [1, 100000], got -4'),
    'requests_zero.toml': (0, 'run.requests_per_cell: expected an integer in [1, 1000000], got 0'),
    'requests_is_bool.toml': (0, 'run.requests_per_cell: expected an integer in [1, 1000000], got True'),
    'endpoint_unknown.toml': (0, "run.endpoint: expected 'completions' or 'chat'"),
    'env_var_unset.toml': (0, 'environment variable SPECTUNE_CORPUS_NEVER_SET is not set'),
    'workload_not_a_table.toml': (0, 'workloads.code: expected a table'),
    'request_rate_negative.toml': (0, 'workloads.code.request_rate: expected a positive number'),
    'port_out_of_range.toml': (0, 'run.port: expected an integer in [1, 65535]'),
    'adaptive_unknown_key.toml': (0, 'adaptive: unknown key(s) speed'),
    'methods_not_a_table.toml': (0, 'matrix.methods: expected dict'),
    'tp_size_is_text.toml': (0, 'families.Qwen.tensor_parallel_size: expected an integer'),
    'max_tokens_is_text.toml': (0, 'workloads.code.max_tokens: expected an integer'),
    'temperature_is_text.toml': (0, 'workloads.code.temperature: expected a number'),
    'timeout_is_text.toml': (0, 'run.startup_timeout_s: expected a number'),
    'load_not_a_table.toml': (0, 'matrix.load: expected a table'),
    'vllm_args_not_a_list.toml': (0, 'families.Qwen.vllm_args: expected a list'),
    'extra_not_a_table.toml': (0, 'methods.eagle3.extra: expected a table'),
    'draft_models_not_a_table.toml': (0, 'families.Qwen.draft_models: expected a table'),
    'run_env_not_a_table.toml': (0, 'run.env: expected a table'),
    'deep_nesting.toml': (0, 'nested too deeply'),
    'timeout_infinite.toml': (0, 'run.stall_timeout_s: expected a number'),
    'temperature_nan.toml': (0, 'workloads.code.temperature: expected a number'),
    'latin1.toml': (0, 'expected a UTF-8 TOML matrix file'),
    'nul_bytes.toml': (10, 'expected valid TOML'),
    'binary_junk.toml': (0, 'expected a UTF-8 TOML matrix file'),
    'utf16.toml': (0, 'expected a UTF-8 TOML matrix file'),
}


def manifest() -> str:
    out = ["# Broken matrix files (written by make_corpus.py): one defect each, read by runner.matrix.load_matrix",
           "# and `python -m runner plan|run --matrix FILE`. line = expected 1-based line (0 = the file as a",
           "# whole); contains = a substring of the expected one-line message.", ""]
    for name in sorted(EXPECT):
        line, contains = EXPECT[name]
        out += ["[[case]]", f"file = {name!r}", f"line = {line}", f"contains = {contains!r}", ""]
    for name in sorted(GENERATED):
        recipe, line, contains = GENERATED[name]
        out += ["[[case]]", f"file = {name!r}", f"generate = {recipe!r}", f"line = {line}",
                f"contains = {contains!r}", ""]
    return "\n".join(out)


def main() -> None:
    for name, text in TEXT.items():
        (HERE / name).write_text(text, encoding="utf-8")
    for name, data in BINARY.items():
        (HERE / name).write_bytes(data)
    assert set(EXPECT) == set(TEXT) | set(BINARY)
    (HERE / "MANIFEST.toml").write_text(manifest(), encoding="utf-8")


if __name__ == "__main__":
    main()
