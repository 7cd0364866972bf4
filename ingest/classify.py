"""Workload classifier: prompt text → ``code`` / ``chat`` / ``reasoning`` (or ``unknown``), and workload assignment.

Owns how a trace's requests get a workload. Order of precedence (first that applies wins):

1. the file's own workload column (read by ingest.traces);
2. the per-file choice (``--workload code``; the Azure file-name hint), which fills unlabelled rows;
3. this classifier, for unlabelled rows that carry prompt text;
4. ``unknown`` — shown as such, never guessed.

The classifier is a small, documented rule/feature model (docs/classifier.md), vectorised with polars
string kernels (no model download, no per-row Python). Each feature is a regex count; three scores add
weighted, capped counts:

* code — code fences, language keywords and syntax (``def``, ``{``, ``=>``, ``;`` …), identifiers
  (snake_case, camelCase, ``a.b(``), indented lines, language/tool names and programming vocabulary,
  and "write a … function/script/query" requests;
* reasoning — explicit reasoning requests (step by step, prove, solve, probability, equation …),
  arithmetic expressions, LaTeX, comparison chains ("taller than … than"), and word-problem vocabulary
  that only counts when the prompt has numbers;
* chat — a prior (chat is the catch-all: open questions, writing, advice) plus writing/advice phrases.

The highest score wins. Text with no letters and no code or math signal is ``unknown``. Accuracy on
the labelled set data/samples/labelled_prompts.jsonl is measured by tests/ingest/test_classify.py
and reported in docs/classifier.md.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

LABELS = ("code", "chat", "reasoning")
UNKNOWN = "unknown"
CHAT_PRIOR = 0.8

# name -> (regex, weight, cap, score). Counts are capped so one repeated token cannot dominate.
# Language names use ASCII word boundaries ``(?-u:\b)`` so "写一个Python函数" still matches "Python".
_I = "(?i)"
_B = r"(?-u:\b)"
FEATURES: dict[str, tuple[str, float, int, str]] = {
    "fence": (r"```|~~~", 3.0, 2, "code"),
    "keyword": (r"\b(?:def|elif|lambda|import|return|func|fn|impl|struct|enum|const|let|var|void|public|private|"
                r"static|interface|async|await|yield|println!?|printf|console\.log|System\.out|std::|"
                r"#include|#define|SELECT|INSERT|UPDATE|DELETE|CREATE TABLE|JOIN|GROUP BY|sudo|pip|npm|git)\b"
                r"|\bclass [A-Z]\w*", 1.2, 6, "code"),
    "syntax": (r"[{};]|==|!=|=>|->|::|\+\+|&&|\|\||</?[a-z]+>|\w\[\w*\]|\w\(\)", 0.35, 12, "code"),
    "identifier": (r"\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z][A-Za-z0-9]+\b|\b\w+\.\w+\(", 0.8, 6, "code"),
    "indented": (r"(?m)^(?: {2,}|\t)\S", 0.5, 6, "code"),
    "error_name": (r"\b[A-Z]\w*(?:Error|Exception)\b|(?i:segfault|segmentation fault|traceback|stack ?trace|"
                   r"null ?pointer|cannot read propert|undefined is not|not defined)", 1.5, 2, "code"),
    "language": (_I + _B + r"(?:python|javascript|typescript|java|c\+\+|c#|golang|rust|ruby|php|kotlin|swift|"
                 r"scala|haskell|perl|bash|shell|powershell|sql|mysql|postgres(?:ql)?|sqlite|html|css|react|vue|"
                 r"angular|django|flask|fastapi|pandas|numpy|pytorch|tensorflow|matplotlib|regex|regular "
                 r"expression|json|yaml|xml|docker(?:file)?|kubernetes|terraform|linux|unix|vim|emacs|git(?:hub)?|"
                 r"npm|api|sdk|jupyter|excel formula|vba|matlab|webpack|node\.?js|jvm|http|rest api|graphql|"
                 r"aws|s3|nginx|cron|gcc|llvm)" + _B + r"|\bin (?:C|Go|R)\b", 1.5, 3, "code"),
    "vocabulary": (_I + _B + r"(?:code|coding|function|method|bug|debug(?:ging)?|compil(?:e|er|ation)|refactor|"
                   r"implement(?:ation)?|algorithm|script|program(?:ming)?|unit tests?|variable|loop|array|"
                   r"strings?|recursion|recursive|library|framework|endpoint|database|query|queries|repository|"
                   r"commit|syntax|runtime|exception|deploy|backend|frontend|data structure|linked list|hash ?map|"
                   r"dict(?:ionar(?:y|ies))?|list of dicts|binary tree|trie|big-?o|time complexity|quicksort|"
                   r"mergesort|terminal|command line|cli|dependency injection|garbage collection|closure|threads?|"
                   r"goroutine|migration|config(?:uration)?|dataframe|groupby|model|layers?|tensor|request|"
                   r"headers?|passwords? securely|编程|代码|函数|程序)" + _B, 0.9, 6, "code"),
    "write_code": (_I + r"\b(?:write|create|implement|generate|give me|fix|debug|refactor|optimi[sz]e|convert|"
                   r"translate|port|build|show me how to use)\b[^.?!\n]{0,60}\b(?:function|script|program|class|"
                   r"method|query|regex|code|snippet|module|endpoint|component|unit tests?|bash|sql|python|"
                   r"javascript|typescript|rust|java|go|c\+\+|tool|config|formula)\b", 2.5, 1, "code"),
    "reason_strong": (_I + r"\b(?:step[- ]by[- ]step|show (?:your|all|the) (?:work|math)|prove|proof|derive|deduce|"
                      r"solve|probability|expected (?:value|number)|equation|inequalit(?:y|ies)|theorem|lemma|"
                      r"integral|derivative|determinant|factori[sz]e|simplify|evaluate|divisible|remainder|"
                      r"prime (?:factors?|numbers?)|odd numbers?|even numbers?|greatest common divisor|gcd|"
                      r"least common multiple|lcm|lowest terms|fraction|logic puzzle|riddle|puzzle|syllogism|"
                      r"which of the following|true or false|argument (?:is )?valid|valid (?:argument|inference)|"
                      r"contradiction|knights?|knaves?|truth-?tellers?|always lies?|how many ways|combinations|"
                      r"permutations|sequence|next number|interior angles?|surface area|perimeter|log base|"
                      r"converge|reason(?:ing)? (?:carefully|through|step)|reason through|labels are (?:all )?wrong|"
                      r"is (?:this|it) possible)\b|多少|等于|证明|计算", 2.0, 3, "reasoning"),
    "reason_numeric": (_I + r"\b(?:how many|how much|how long|how far|how old|what is|calculate|compute|find|"
                       r"percent(?:age)?|average|ratio|rate|speed|per hour|km/h|mph|minutes?|hours?|days?|years? "
                       r"old|older|younger|twice|half|times as|each|total|left over|remaining|costs?|price|change|"
                       r"discount|interest|profit|area|volume|equals?|angle|servings?)\b|\d\s*%\s*of\b|"
                       r"wie viele|cuánto|a qué hora", 0.9, 4, "numbers"),
    "numbers": (r"\d+(?:[.,]\d+)?", 0.3, 4, "numbers"),
    "arithmetic": (r"\d\s*[-+*/×÷^=<>≤≥%]\s*\(?\d|\b[a-z]\s*[=^]\s*\d|\d\s*[a-z]\s*[+\-=]|[√π∑∫∞≠≈]|"
                   r"\\(?:frac|sqrt|sum|int|cdot|times|le|ge|neq)\b|\$[^$\n]{1,80}\$|\d\.\d+\.\.\.",
                   1.2, 4, "reasoning"),
    "comparison": (_I + r"\b(?:taller|shorter|older|younger|faster|slower|heavier|lighter|richer|larger|smaller|"
                   r"more \w+ than|more than \w+\.|left of|right of|sits? (?:next to|between)|"
                   r"all \w+ are|some \w+ are|no \w+ are)\b", 0.8, 4, "reasoning"),
    "chat_phrase": (_I + r"\b(?:write (?:me )?(?:a|an|the) (?:short )?(?:\w+ )?(?:email|letter|poem|story|essay|"
                    r"blog|post|tweet|speech|toast|cover letter|song|haiku|limerick|review|bio|caption|message|"
                    r"note|description)|summari[sz]e|summary|translate|rephrase|paraphrase|proofread|"
                    r"recommend|suggest|advice|tips|ideas? for|opinion|what do you think|tell me about|"
                    r"explain (?:to me )?(?:what|why|how|the)|itinerary|recipe|plan (?:a|my)|benefits|"
                    r"how (?:do|can|should) i (?:deal|cope|tell|ask|start|stay|make|get|become)|should i|"
                    r"feel(?:ing)?|friend|relationship|movie|book|travel|history of|pros and cons|roughly)\b",
                    1.0, 3, "chat"),
}
# Evidence that the text is text at all (any letters, in any script).
_LETTERS = r"[^\W\d_]"


def _count(text: pl.Expr, name: str) -> pl.Expr:
    pattern, _w, cap, _s = FEATURES[name]
    return text.str.count_matches(pattern).fill_null(0).clip(upper_bound=cap).cast(pl.Float64)


def feature_exprs(text: pl.Expr) -> list[pl.Expr]:
    """One capped count column per feature (``f_<name>``), plus ``f_digits`` (numbers present)."""
    exprs = [_count(text, name).alias(f"f_{name}") for name in FEATURES]
    exprs.append((text.str.count_matches(r"\d+").fill_null(0) > 0).cast(pl.Float64).alias("f_digits"))
    exprs.append((text.str.count_matches(_LETTERS).fill_null(0) > 0).alias("f_letters"))
    return exprs


def score_exprs() -> dict[str, pl.Expr]:
    """The three scores from the ``f_*`` columns."""
    scores: dict[str, pl.Expr] = {"code": pl.lit(0.0), "reasoning": pl.lit(0.0), "chat": pl.lit(CHAT_PRIOR)}
    for name, (_p, weight, _cap, target) in FEATURES.items():
        term = pl.col(f"f_{name}") * weight
        if target == "numbers":  # word-problem vocabulary counts only when the prompt has numbers
            scores["reasoning"] = scores["reasoning"] + term * pl.col("f_digits")
        else:
            scores[target] = scores[target] + term
    return scores


def classify_frame(texts: pl.Series) -> pl.DataFrame:
    """Features, scores and the label for each text (for tests, docs and the confusion matrix)."""
    df = pl.DataFrame({"text": texts.cast(pl.String)}).with_columns(feature_exprs(pl.col("text")))
    sc = score_exprs()
    df = df.with_columns(*(v.alias(f"s_{k}") for k, v in sc.items()))
    best = (pl.when((pl.col("s_code") >= pl.col("s_reasoning")) & (pl.col("s_code") > pl.col("s_chat")))
            .then(pl.lit("code"))
            .when(pl.col("s_reasoning") > pl.col("s_chat")).then(pl.lit("reasoning"))
            .otherwise(pl.lit("chat")))
    signal = (pl.col("s_code") >= 1.0) | (pl.col("s_reasoning") >= 1.0)  # a real code or math cue
    unknown = pl.col("text").is_null() | (pl.col("text").str.strip_chars() == "") | (~pl.col("f_letters") & ~signal)
    return df.with_columns(pl.when(unknown).then(pl.lit(UNKNOWN)).otherwise(best).alias("label"))


def classify(texts: Sequence[str | None] | pl.Series) -> list[str]:
    """Labels for prompt texts (``code``/``chat``/``reasoning``; ``unknown`` for empty or letterless text)."""
    series = texts if isinstance(texts, pl.Series) else pl.Series("text", list(texts), dtype=pl.String)
    return classify_frame(series)["label"].to_list()


def assign_workloads(frame: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Fill missing workloads from prompt text; returns the frame and how many rows each source labelled.

    ``frame`` is an ingest.traces frame whose ``workload`` already holds the column and the per-file
    choice. Rows still unlabelled with prompt text are classified; the rest stay null (``unknown``).
    """
    n = frame.height
    missing = frame["workload"].is_null()
    has_text = missing & frame["prompt"].is_not_null() if "prompt" in frame.columns else missing & False
    counts = {"given": int(n - missing.sum()), "classifier": 0, "unknown": 0}
    if has_text.any():
        idx = has_text.arg_true()
        labels = classify_frame(frame["prompt"].gather(idx))["label"]
        labels = labels.set(labels == UNKNOWN, None)  # letterless text stays unassigned, shown as unknown
        frame = frame.with_columns(frame["workload"].scatter(idx, labels))
        counts["classifier"] = int(labels.is_not_null().sum())
    counts["unknown"] = int(frame["workload"].is_null().sum())
    return frame, counts
