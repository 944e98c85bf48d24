"""Reading a config file: the one loader every command uses.

:func:`load_config` reads a TOML file (``--config``; ``$ADAMM_CONFIG``; else built-in defaults),
validates it and returns the right model: :class:`~edge.config.daemon.DaemonConfig` for a file with
the daemon's keys (``store_id``, ``[[cameras]]`` ...), else :class:`~edge.config.base.AdammConfig`,
or the model the caller asks for (``adamm run`` asks for the daemon's). Every problem is one line
``FILE: key.path: reason``; all of them are reported at once in a :class:`ConfigFileError`.
"""

from __future__ import annotations

import codecs
import difflib
import json
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field
from datetime import date, datetime, time
from pathlib import Path
from typing import Any, TypeVar, cast, get_args, get_origin, overload

from pydantic import BaseModel, ValidationError

from edge.config.base import ID_PATTERN, AdammConfig
from edge.config.daemon import DaemonConfig
from edge.errors import ConfigError

# --------------------------------------------------------------------------- reading a config file
#
# Every problem is one line ``FILE: key.path: reason``. File-level problems (missing, a folder,
# unreadable, not UTF-8 at all) use the key ``file``; TOML syntax errors use the key (or table)
# on the offending line and say the line. A UTF-8 byte-order mark at the start is accepted.

MAX_CONFIG_BYTES = 4 * 1024 * 1024
MAX_NESTING = 32
_MAX_SYNTAX_PROBLEMS = 20
_MAX_ENCODING_PROBLEMS = 5
_MAX_REPORTED = 50
M = TypeVar("M", bound=BaseModel)


class ConfigFileError(ConfigError):
    """A config file has problems; ``problems`` holds one ``FILE: key.path: reason`` line each."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        n = len(self.problems)
        super().__init__(f"invalid config ({n} problem{'s' if n != 1 else ''}):\n" + "\n".join(self.problems))


def format_problem(source: str, key: str, reason: str) -> str:
    """One report line: ``source: key: reason``."""
    return f"{source}: {key or 'file'}: {reason}"


def read_config_bytes(path: str | os.PathLike[str], *, missing_hint: str) -> bytes:
    """The file's bytes; a :class:`ConfigFileError` (key ``file``) when it cannot be read."""
    p = Path(path)
    source = str(p)

    def fail(reason: str) -> ConfigFileError:
        return ConfigFileError([format_problem(source, "file", reason)])

    try:
        st = p.stat()
    except FileNotFoundError:
        raise fail(f"does not exist; {missing_hint}") from None
    except PermissionError:
        raise fail("cannot be read: permission denied on a folder of its path") from None
    except (OSError, ValueError) as exc:
        raise fail(f"cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise fail("is a folder, not a file: pass the TOML file itself (e.g. config/edge.toml)")
    if not stat.S_ISREG(st.st_mode):
        raise fail("is not a regular file (a pipe, socket or device): pass a TOML file")
    if st.st_size > MAX_CONFIG_BYTES:
        raise fail(f"is {st.st_size} bytes, too large for a config file (at most {MAX_CONFIG_BYTES})")
    try:
        with p.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except PermissionError:
        raise fail(
            "cannot be read: permission denied (make it readable by the user adamm runs as, e.g. chmod 644)"
        ) from None
    except OSError as exc:
        raise fail(f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise fail(f"is larger than {MAX_CONFIG_BYTES} bytes, too large for a config file")
    return data


def _decode(raw: bytes, source: str) -> tuple[str, list[tuple[int, str]]]:
    """Text of ``raw`` (leading UTF-8 BOM dropped) and (line, reason) for each invalid byte run."""
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and not raw.startswith(codecs.BOM_UTF8):
        raise ConfigFileError(
            [format_problem(source, "file", "is saved as UTF-16; save it as UTF-8 (editor: Save as, UTF-8)")]
        )
    base = 3 if raw.startswith(codecs.BOM_UTF8) else 0
    body = raw[base:]
    try:
        return body.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    bad: list[tuple[int, str]] = []
    offset = 0
    for line, chunk in enumerate(body.split(b"\n"), 1):
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as exc:  # one report per line, the first bad byte
            bad.append(
                (
                    line,
                    f"byte offset {base + offset + exc.start} (line {line}, column {exc.start + 1}) is "
                    f"not valid UTF-8 (0x{chunk[exc.start]:02x}): save the file as UTF-8 "
                    "(editor: Save as, encoding UTF-8)",
                )
            )
            if len(bad) >= _MAX_ENCODING_PROBLEMS:
                break
        offset += len(chunk) + 1
    return body.decode("utf-8", errors="replace"), bad


# ------------------------------------------------------------------------ where keys are in the file

_HEADER = re.compile(r"^\s*(\[\[?)([^\[\]]+?)(\]\]?)\s*(?:#.*)?$")
_BARE_OR_QUOTED = r"(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')"
_KEY = re.compile(rf"^\s*({_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*)\s*=(.*)$")
_KEY_PART = re.compile(_BARE_OR_QUOTED)
_STRINGS = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'")


def _split_key(text: str) -> tuple[str, ...]:
    parts = []
    for m in _KEY_PART.finditer(text):
        part = m.group(0)
        parts.append(part[1:-1] if part[:1] in "\"'" else part)
    return tuple(parts)


@dataclass
class _Outline:
    """A forgiving line scan of a TOML text: which key or table each line defines, the first
    line of each key path (pydantic-style, ``cameras.0.id``), headers and bracket depth."""

    lines: list[str]
    first_line: dict[tuple[str, ...], int] = field(default_factory=dict)
    line_path: dict[int, tuple[str, ...]] = field(default_factory=dict)
    headers: list[int] = field(default_factory=list)
    depth: dict[int, int] = field(default_factory=dict)

    @classmethod
    def scan(cls, text: str) -> _Outline:
        out = cls(lines=[ln.rstrip("\r") for ln in text.split("\n")])
        table: tuple[str, ...] = ()
        arrays: dict[tuple[str, ...], int] = {}
        in_string: str | None = None
        depth = 0
        current: tuple[str, ...] = ()
        for n, line in enumerate(out.lines, 1):
            if in_string is not None:
                out.line_path[n] = current
                if line.count(in_string) % 2 == 1:
                    in_string = None
                continue
            if depth == 0 and (m := _HEADER.match(line)) and len(m.group(1)) == len(m.group(3)):
                parts = _split_key(m.group(2))
                resolved: tuple[str, ...] = ()
                for part in parts:
                    resolved += (part,)
                    if resolved in arrays and (m.group(1) == "[" or len(resolved) < len(parts)):
                        resolved += (str(arrays[resolved]),)
                if m.group(1) == "[[":
                    arrays[resolved] = arrays.get(resolved, -1) + 1
                    resolved += (str(arrays[resolved]),)
                table = current = resolved
                out.first_line.setdefault(table, n)
                out.line_path[n] = table
                out.headers.append(n)
                continue
            value = line
            if depth == 0 and (k := _KEY.match(line)):
                current = table + _split_key(k.group(1))
                out.first_line.setdefault(current, n)
                value = k.group(2)
            out.line_path[n] = current if depth or k else table
            for quote in ('"""', "'''"):
                if value.count(quote) % 2 == 1:
                    in_string = quote
                    value = value[: value.index(quote)]
                    break
            code = _STRINGS.sub("", value).split("#", 1)[0]
            deepest = depth
            for ch in code:
                if ch in "[{":
                    depth += 1
                    deepest = max(deepest, depth)
                elif ch in "]}":
                    depth = max(0, depth - 1)
            out.depth[n] = deepest
        return out

    def line_of(self, path: tuple[str, ...]) -> int | None:
        """The first line defining ``path`` or, else, its nearest defined parent."""
        for end in range(len(path), 0, -1):
            if path[:end] in self.first_line:
                return self.first_line[path[:end]]
        return None

    def block_end(self, header_line: int) -> int:
        """The last line of the table whose header is on ``header_line``."""
        later = [h for h in self.headers if h > header_line]
        return (later[0] - 1) if later else len(self.lines)


_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)\s*$")


def _toml_reason(msg: str) -> str:
    if msg == "Invalid value":
        return (
            'the value is not valid TOML: text needs quotes (key = "text"); numbers, true/false '
            "and [arrays] do not"
        )
    if msg.startswith("Illegal character '\\n'") or msg.startswith("Unterminated string"):
        return "a string is not closed: add the closing quote on the same line"
    if msg.startswith("Illegal character"):
        return f"{msg[len('Illegal character ') :]} is not allowed here (control characters cannot be in a TOML file)"
    if msg == "Invalid statement":
        return "not a `key = value` line, a [table] header or a # comment"
    if msg.startswith("Expected '=' after a key"):
        return "expected `=` after the key (key = value)"
    if msg.startswith("Unclosed array"):
        return "an array opened with [ is not closed with ]"
    if msg.startswith("Unclosed inline table"):
        return "an inline table opened with { is not closed with }"
    if msg.startswith("Invalid initial character for a key part"):
        return "a key must be letters, digits, _ or - (put other keys in quotes)"
    if msg.startswith("Expected newline or end of document after a statement"):
        return "only one `key = value` per line (a comment after it starts with #)"
    return f"not valid TOML: {msg}"


def _dotted(path: tuple[str, ...]) -> str:
    return ".".join(path) or "file"


def _syntax_problem(
    outline: _Outline, text_lines: list[str], msg: str, line: int, column: int
) -> tuple[str, str, list[int], bool]:
    """(key, reason, lines to blank before parsing again, whether to go on) for one TOML error."""
    path = outline.line_path.get(line, ())
    if msg.startswith("Cannot declare"):
        first = outline.first_line.get(path, line)
        where = f"; the first is on line {first}: merge the two" if first < line else ""
        return (
            _dotted(path),
            f"table [{'.'.join(path)}] is defined twice (line {line}){where}",
            list(range(line, outline.block_end(line) + 1)),
            True,
        )
    if msg.startswith("Cannot overwrite a value"):
        first = outline.first_line.get(path, line)
        if line in outline.headers:
            lines = list(range(line, outline.block_end(line) + 1))
        else:
            lines = [line]
        if first < line:
            return (
                _dotted(path),
                f"key {'.'.join(path)} is defined twice (line {line}); the first is on line {first}: "
                "keep one",
                lines,
                True,
            )
        for end in range(len(path) - 1, 0, -1):
            earlier = outline.first_line.get(path[:end])
            if earlier is not None and earlier < line:
                return (
                    _dotted(path),
                    f"line {line}: {'.'.join(path[:end])} is already a value (line {earlier}), so it "
                    "cannot also be a table",
                    lines,
                    True,
                )
        return _dotted(path), f"line {line}: {'.'.join(path) or 'this'} is defined twice", lines, True
    reason = f"line {line}, column {column}: {_toml_reason(msg)}"
    standalone = text_lines[line - 1] if 0 < line <= len(text_lines) else ""
    try:
        tomllib.loads(standalone)
        self_contained = False
    except (tomllib.TOMLDecodeError, RecursionError):
        self_contained = True
    if not self_contained or line in outline.headers and not msg.startswith("Invalid"):
        reason += " (the cause may be above: a [, { or quote left open)"
    return _dotted(path), reason, [line], self_contained


def parse_toml_text(raw: bytes | str, source: str) -> tuple[dict[str, Any], list[str], set[tuple[str, ...]]]:
    """The TOML document in ``raw`` (what could be read of it), every problem found while reading
    it (one ``source: key: reason`` line each) and the key paths whose lines were dropped."""
    problems: list[tuple[int, str, str]] = []
    if isinstance(raw, bytes):
        text, bad_bytes = _decode(raw, source)
    else:
        text, bad_bytes = raw.removeprefix("\ufeff"), []
    outline = _Outline.scan(text)
    lines = list(outline.lines)
    dropped: set[tuple[str, ...]] = set()
    for line, reason in bad_bytes:
        problems.append((line, _dotted(outline.line_path.get(line, ())), reason))
    deep = [n for n, deepest in outline.depth.items() if deepest > MAX_NESTING]
    for n in deep[:_MAX_ENCODING_PROBLEMS]:
        path = outline.line_path.get(n, ())
        problems.append(
            (
                n,
                _dotted(path),
                f"line {n}: values nested {outline.depth[n]} levels deep (at most {MAX_NESTING} "
                "[ or { inside each other)",
            )
        )
    for n in deep:
        lines[n - 1] = ""
        dropped.add(outline.line_path.get(n, ()))
    data: dict[str, Any] = {}
    for _ in range(_MAX_SYNTAX_PROBLEMS + 1):
        try:
            data = tomllib.loads("\n".join(lines))
            break
        except RecursionError:
            n = max(outline.depth, key=lambda k: outline.depth[k], default=1)
            path = outline.line_path.get(n, ())
            problems.append((n, _dotted(path), f"line {n}: values nested too deeply"))
            if not lines[n - 1]:
                data = {}
                break
            lines[n - 1] = ""
            dropped.add(path)
        except tomllib.TOMLDecodeError as exc:
            msg = str(exc)
            pos = _TOML_POSITION.search(msg)
            line, column = (int(pos.group(1)), int(pos.group(2))) if pos and pos.group(1) else (len(lines), 1)
            msg = msg[: pos.start()] if pos else msg
            key, reason, blank, go_on = _syntax_problem(outline, lines, msg, line, column)
            problems.append((line, key, reason))
            if len([p for p in problems if p[0] >= 0]) > _MAX_SYNTAX_PROBLEMS:
                go_on = False
            if not go_on or not any(lines[b - 1] for b in blank if 0 < b <= len(lines)):
                data = {}
                break
            for b in blank:
                if 0 < b <= len(lines):
                    dropped.add(outline.line_path.get(b, ()))
                    lines[b - 1] = ""
    else:
        data = {}
    if problems and not data:
        dropped.add(())  # nothing trustworthy was read: no "missing key" reports
    out = [format_problem(source, key, reason) for _, key, reason in sorted(problems, key=lambda p: p[0])]
    return data, out, dropped


# ------------------------------------------------------------------- validation problems, in words


def _show(value: Any, depth: int = 0) -> str:
    """``value`` as it would be written in TOML, cut short."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 60 else text[:57] + '..."'
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if depth >= 3:
        return "..."
    if isinstance(value, list):
        inner = ", ".join(_show(v, depth + 1) for v in value[:4])
        return f"[{inner}{', ...' if len(value) > 4 else ''}]"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {_show(v, depth + 1)}" for k, v in list(value.items())[:4])
        return f"{{{inner}{', ...' if len(value) > 4 else ''}}}"
    return type(value).__name__


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return f"a boolean ({_show(value)})"
    if isinstance(value, int):
        return f"a whole number ({value})"
    if isinstance(value, float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"text ({_show(value)})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime | date | time):
        return f"a date-time ({value.isoformat()})"
    return type(value).__name__


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _model_at(root: type[BaseModel], path: tuple[str, ...]) -> type[BaseModel] | None:
    """The model class that validates the table at ``path`` (list indexes skipped)."""
    model: type[BaseModel] | None = root
    for part in path:
        if part.isdigit() or model is None:
            continue
        info = model.model_fields.get(part)
        found = _models_in(info.annotation) if info is not None else []
        model = found[0] if found else None
    return model


def _table_name(path: tuple[str, ...]) -> str:
    if not path:
        return "the top of the file, before the first [table]"
    if path[-1].isdigit():
        return f"[[{'.'.join(p for p in path[:-1] if not p.isdigit())}]] block {int(path[-1]) + 1}"
    return f"[{'.'.join(p for p in path if not p.isdigit())}]"


def _sections_with(root: type[BaseModel], key: str) -> list[str]:
    """The tables of ``root`` (``[sampling]``, ``[[cameras]]``) that have a key ``key``."""
    out = []
    for name, info in root.model_fields.items():
        for sub in _models_in(info.annotation):
            if key in sub.model_fields:
                out.append(f"[[{name}]]" if get_origin(info.annotation) is list else f"[{name}]")
    return out


def _unknown_key(root: type[BaseModel], loc: tuple[str, ...]) -> str:
    key = loc[-1]
    parent = _model_at(root, loc[:-1])
    names = list(parent.model_fields) if parent is not None else []
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6) or [
        n for n in names if n.lower() == key.lower().replace("-", "_")
    ]
    reason = f"unknown key {key}"
    if close:
        reason += f"; did you mean {close[0]}?"
    elsewhere = [
        s
        for s in _sections_with(root, key)
        if _model_at(root, loc[:-1]) is not _model_at(root, (s.strip("[]"),))
    ]
    if key in root.model_fields and loc[:-1]:
        reason += f" ({key} belongs at the top of the file, before the first [table])"
    elif elsewhere:
        reason += f" ({key} belongs under {' or '.join(elsewhere)})"
    elif not close and names:
        reason += f"; the keys of {_table_name(loc[:-1])} are: {', '.join(names)}"
    return reason


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _range(root: type[BaseModel], loc: tuple[str, ...], value: Any) -> str | None:
    parent = _model_at(root, loc[:-1])
    info = parent.model_fields.get(loc[-1]) if parent is not None else None
    if info is None:
        return None
    parts = []
    for meta in info.metadata:
        for attr, words in (
            ("gt", "greater than"),
            ("ge", "at least"),
            ("lt", "less than"),
            ("le", "at most"),
        ):
            if getattr(meta, attr, None) is not None:
                parts.append(f"{words} {_number(getattr(meta, attr))}")
    if not parts:
        return None
    return f"out of range: must be {' and '.join(parts)}, got {_show(value)}"


def _missing(root: type[BaseModel], loc: tuple[str, ...], data: Any) -> str:
    name = loc[-1]
    parent = _model_at(root, loc[:-1])
    info = parent.model_fields.get(name) if parent is not None else None
    example = f'"{info.examples[0]}"' if info is not None and info.examples else '"..."'
    if info is not None and info.annotation is not str:
        example = "..."
    reason = f"required: add {name} = {example} at {_table_name(loc[:-1])}"
    if info is not None and info.description:
        reason += f" ({info.description})"
    if not loc[:-1] and isinstance(data, dict):
        misplaced = [k for k, v in data.items() if isinstance(v, dict) and name in v]
        if misplaced:
            reason += f"; it is under [{misplaced[0]}] now, where it does not belong"
    return reason


def _reason(root: type[BaseModel], err: Any, loc: tuple[str, ...], data: Any) -> str:
    kind = err["type"]
    value = err.get("input")
    msg = str(err.get("msg", ""))
    if kind == "missing" and loc:
        return _missing(root, loc, data)
    if kind == "extra_forbidden" and loc:
        return _unknown_key(root, loc)
    if kind in ("int_type", "int_parsing", "int_from_float"):
        if isinstance(value, float) and not isinstance(value, bool):
            return f"expected a whole number, got {_show(value)}" + (
                f": write {int(value)}" if value.is_integer() else ""
            )
        hint = ": remove the quotes" if isinstance(value, str) else ": write a whole number"
        return f"expected a number, got {_kind(value)}{hint}"
    if kind in ("float_type", "float_parsing"):
        hint = ": remove the quotes" if isinstance(value, str) else ""
        return f"expected a number, got {_kind(value)}{hint}"
    if kind == "string_type":
        hint = (
            f": write it in quotes, {json.dumps(_show(value))}"
            if isinstance(value, int | float | bool)
            else ""
        )
        return f"expected text in quotes, got {_kind(value)}{hint}"
    if kind == "bool_type":
        return f"expected true or false (no quotes), got {_kind(value)}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"expected a table ({_table_name(loc)} section), got {_kind(value)}"
    if kind == "list_type":
        parent = _model_at(root, loc[:-1])
        info = parent.model_fields.get(loc[-1]) if parent is not None and loc else None
        if info is not None and _models_in(info.annotation):
            return f"expected [[{loc[-1]}]] blocks, got {_kind(value)}"
        return f"expected an array [..., ...], got {_kind(value)}"
    if kind == "literal_error":
        return f"must be {err.get('ctx', {}).get('expected', '?')}, got {_show(value)}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal") and loc:
        return _range(root, loc, value) or f"{msg}, got {_show(value)}"
    if kind == "string_pattern_mismatch":
        if err.get("ctx", {}).get("pattern") == ID_PATTERN:
            return f"must be 1 to 64 letters, digits, _, . or - (no spaces), got {_show(value)}"
        return f"{msg}, got {_show(value)}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error":
        return msg.removeprefix("Value error, ")
    return f"{msg} (got {_show(value)})"


def validation_problems(
    exc: ValidationError,
    model: type[BaseModel],
    source: str,
    data: Any = None,
    *,
    outline: _Outline | None = None,
    dropped: set[tuple[str, ...]] = frozenset(),  # type: ignore[assignment]
) -> list[str]:
    """One ``source: key.path: reason`` line per problem of ``exc`` (``data`` validated as
    ``model``); problems of keys in ``dropped`` (already reported while reading) are left out."""
    lines: list[tuple[int, str]] = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        if any(loc[: len(d)] == d for d in dropped) or (() in dropped and err["type"] == "missing"):
            continue
        reason = _reason(model, err, loc, data)
        line = outline.line_of(loc) if outline is not None else None
        if line is not None and "line " not in reason:
            reason += f" (line {line})"
        lines.append((line or 0, format_problem(source, _dotted(loc), reason)))
    return [text for _, text in sorted(lines, key=lambda p: p[0])]


def format_validation_error(exc: ValidationError, source: str, model: type[BaseModel] = AdammConfig) -> str:
    """One line per problem: ``source: key.path: reason``."""
    return "\n".join(validation_problems(exc, model, source))


def validate_config_data(
    data: dict[str, Any], model: type[M], source: str = "config", **context: Any
) -> tuple[M | None, list[str]]:
    """``data`` validated as ``model``, or None and one problem line per problem."""
    try:
        return model.model_validate(data), []
    except ValidationError as exc:
        return None, validation_problems(exc, model, source, data, **context)
    except RecursionError:
        return None, [format_problem(source, "file", "values nested too deeply")]


def parse_config_text(raw: bytes | str, model: type[M] | None = None, source: str = "config") -> M:
    """A config from TOML text or bytes; a :class:`ConfigFileError` lists every problem. Without
    ``model``: the daemon's for a document with daemon keys, else :class:`AdammConfig`."""
    data, problems, dropped = parse_toml_text(raw, source)
    chosen: Any = model if model is not None else model_for(data)
    outline = _Outline.scan(raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw)
    cfg, more = validate_config_data(data, chosen, source, outline=outline, dropped=dropped)
    problems += more
    if len(problems) > _MAX_REPORTED:
        hidden = len(problems) - _MAX_REPORTED
        problems = problems[:_MAX_REPORTED] + [
            format_problem(source, "file", f"{hidden} more problems not shown: fix the ones above first")
        ]
    if problems or cfg is None:
        raise ConfigFileError(problems or [format_problem(source, "file", "not a valid config")])
    return cast(M, cfg)


def model_for(data: dict[str, Any]) -> type[AdammConfig]:
    """The daemon's model for a document that also configures ``adamm run`` (it has daemon keys),
    else :class:`AdammConfig` (whose report then names any unknown key)."""
    if any(key not in AdammConfig.model_fields and key in DaemonConfig.model_fields for key in data):
        return DaemonConfig
    return AdammConfig


def parse_config(data: dict[str, Any], source: str = "config", model: type[M] | None = None) -> M:
    """``data`` (an already-parsed TOML document) validated as ``model`` (default: chosen as in
    :func:`model_for`); a :class:`ConfigFileError` lists every problem."""
    chosen: Any = model if model is not None else model_for(data)
    cfg, problems = validate_config_data(data, chosen, source)
    if cfg is None:
        raise ConfigFileError(problems)
    return cast(M, cfg)


@overload
def load_config(
    path: str | os.PathLike[str] | None = None,
    model: None = None,
    *,
    missing_hint: str = ...,
) -> AdammConfig: ...


@overload
def load_config(
    path: str | os.PathLike[str] | None,
    model: type[M],
    *,
    missing_hint: str = ...,
) -> M: ...


def load_config(
    path: str | os.PathLike[str] | None = None,
    model: type[BaseModel] | None = None,
    *,
    missing_hint: str = "pass --config with an existing file",
) -> BaseModel:
    """The config of a command: ``path``, else ``$ADAMM_CONFIG``, else built-in defaults.

    Validated as ``model`` when given, else as the daemon's config for a file with the daemon's keys
    (one file serves ``adamm run`` and every other command), else as :class:`AdammConfig`. Without a
    file: the defaults of ``model`` (which then must need no keys) or of :class:`AdammConfig`."""
    chosen = path or os.environ.get("ADAMM_CONFIG")
    if not chosen:
        return (model or AdammConfig)()
    raw = read_config_bytes(chosen, missing_hint=missing_hint)
    cfg: BaseModel = parse_config_text(raw, model, str(chosen))
    return cfg


def parse_daemon_config(data: dict[str, Any], source: str = "config") -> DaemonConfig:
    """``data`` validated as the daemon's config (``source: key: reason`` per problem)."""
    return parse_config(data, source, DaemonConfig)


def parse_daemon_text(raw: bytes | str, source: str = "config") -> DaemonConfig:
    """A daemon TOML document (bytes or text) as read from ``source``."""
    return parse_config_text(raw, DaemonConfig, source)


def load_daemon_config(path: str | os.PathLike[str]) -> DaemonConfig:
    """The daemon's config file ``path`` (``adamm run --config``)."""
    cfg: DaemonConfig = load_config(
        path, DaemonConfig, missing_hint="copy config/edge.example.toml and edit it"
    )
    return cfg
