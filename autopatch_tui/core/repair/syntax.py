"""Syntax checks with a real parser per language: Python's own `ast`, tree-sitter grammars for
Java, JavaScript, TypeScript (and TSX) and Go.

`syntax_error(path, text)` names the first syntax error of a source text, or returns None.
`draft_breaks_syntax(path, before, after)` is what patch drafting asks: does the draft make a file
that parsed stop parsing? A file that did not parse before the draft cannot be held against it."""

from __future__ import annotations

import ast
import threading
import warnings
from functools import cache
from typing import Any

from autopatch_tui.core.repair.languages import GO, JAVA, JAVASCRIPT, PYTHON, TSX, TYPESCRIPT, language_of

_local = threading.local()  # a tree-sitter Parser per thread and language


class NoParserError(Exception):
    """No parser is installed for the language (a broken installation)."""


@cache
def _language(lang: str) -> Any:
    try:
        from tree_sitter import Language

        if lang == JAVA:
            import tree_sitter_java as grammar

            return Language(grammar.language())
        if lang == JAVASCRIPT:
            import tree_sitter_javascript as grammar

            return Language(grammar.language())
        if lang in (TYPESCRIPT, TSX):
            import tree_sitter_typescript as grammar

            return Language(grammar.language_tsx() if lang == TSX else grammar.language_typescript())
        if lang == GO:
            import tree_sitter_go as grammar

            return Language(grammar.language())
    except ImportError as exc:
        raise NoParserError(f"the {lang} parser is not installed ({exc.name})") from None
    raise NoParserError(f"no parser for {lang}")


def _parser(lang: str) -> Any:
    parsers = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = _local.parsers = {}
    if lang not in parsers:
        from tree_sitter import Parser

        parsers[lang] = Parser(_language(lang))
    return parsers[lang]


def _first_error(node: Any) -> Any:
    if node.is_error or node.is_missing:
        return node
    for child in node.children:
        if child.has_error or child.is_missing:
            found = _first_error(child)
            if found is not None:
                return found
    return node if node.has_error else None


def syntax_error(path: str, text: str) -> str | None:
    """"line N: …" for the first syntax error of `text` parsed as `path`'s language; None when it
    parses or the language is not one the audit covers."""
    lang = language_of(path)
    if lang == PYTHON:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # e.g. SyntaxWarning for an invalid escape
                ast.parse(text, filename=path)
        except SyntaxError as exc:
            return f"line {exc.lineno or 1}: {exc.msg}"
        except (ValueError, RecursionError, MemoryError):
            return "line 1: the parser cannot read this text"
        return None
    if lang is None:
        return None
    tree = _parser(lang).parse(text.encode("utf-8"))
    if not tree.root_node.has_error:
        return None
    node = _first_error(tree.root_node)
    row = (node.start_point[0] if node is not None else 0) + 1
    what = f"missing {node.type}" if node is not None and node.is_missing else "unexpected text"
    return f"line {row}: {what}"


def draft_breaks_syntax(path: str, before: str, after: str) -> str | None:
    """The syntax error a draft introduces into `path`, or None (also when `before` did not parse)."""
    error = syntax_error(path, after)
    if error is None or syntax_error(path, before) is not None:
        return None
    return error
