"""Logging for the daemons: one event per line on stderr, as text or JSON, with the fields ``term``,
``node``, ``vendor`` and ``reason`` passed as ``extra`` (docs/observability.md, "Logs")."""

from __future__ import annotations

import json
import logging
import sys
import threading
import warnings
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, TextIO

__all__ = [
    "FIELDS",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "report_error",
]

LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("debug", "info", "warning", "error")
#: The structured fields a record may carry (``extra={...}``), in the order text shows them.
FIELDS = ("term", "node", "vendor", "reason")
#: Libraries whose loggers must write through our handler only.
LIBRARY_LOGGERS = ("urllib3", "client", "kubernetes", "leaderelection")

_active: str | None = None


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    return {name: value for name in FIELDS if (value := getattr(record, name, None)) is not None}


def _text_value(value: object) -> str:
    text = str(value)
    if not text or any(c.isspace() or c in '"=\\' for c in text) or not text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return text


class TextFormatter(logging.Formatter):
    """``TIME LEVEL LOGGER: key=value ...: message``: the fields once, before the message."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{name}={_text_value(value)}" for name, value in _fields(record).items())
        if fields:  # on a copy: the record goes on to the other handlers as it came
            record = logging.makeLogRecord({**record.__dict__, "message": f"{fields}: {record.message}"})
        return super().formatMessage(record)


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line; the fields as keys of their own."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, value in _fields(record).items():
            entry[name] = value if isinstance(value, int | float | bool) else str(value)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """``warnings.showwarning`` as one ``py.warnings`` record (``captureWarnings`` takes two lines)."""
    if file is not None:  # written somewhere on purpose: leave it be
        file.write(warnings.formatwarning(message, category, filename, lineno, line))
        return
    text = " ".join(str(message).split())
    logging.getLogger("py.warnings").warning("%s: %s (%s:%d)", category.__name__, text, filename, lineno)


def _thread_exception(args: threading.ExceptHookArgs) -> None:
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else "?"
    exc_info = (args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback)
    logging.getLogger("hami_core").critical("unexpected error in thread %s", name, exc_info=exc_info)


def _main_exception(exc_type: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, value, tb)
        return
    logging.getLogger("hami_core").critical("unexpected error", exc_info=(exc_type, value, tb))


def _unraisable(unraisable: Any) -> None:
    exc = unraisable.exc_value
    exc_info = (type(exc), exc, unraisable.exc_traceback) if exc is not None else None
    logging.getLogger("hami_core").error(
        "%s: %r", unraisable.err_msg or "exception ignored", unraisable.object, exc_info=exc_info
    )


def configure_logging(fmt: str, level: str) -> None:
    """Every record (ours, the libraries', Python's warnings, escaped exceptions) to stderr in ``fmt`` (one
    of ``LOG_FORMATS``, as ``log_options`` gives it)."""
    global _active
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        library.handlers[:] = [h for h in library.handlers if isinstance(h, logging.NullHandler)]
        library.propagate = True
    warnings.showwarning = _show_warning
    threading.excepthook = _thread_exception
    sys.excepthook = _main_exception
    sys.unraisablehook = _unraisable
    _active = fmt


def report_error(message: str) -> None:
    """The one error line a command ends with: ``error: MESSAGE`` on stderr, or a JSON record in JSON
    mode (so a daemon started with ``--log-format json`` writes nothing but JSON)."""
    if _active == "json":
        logging.getLogger("hami_core.cli").error("%s", message)
    else:
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()
