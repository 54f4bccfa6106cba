#!/usr/bin/env python3
"""Lists the functions longer than a limit (default 150 lines) in C++ and Python sources.

C++ (.cpp, .h, .cu, .cuh): comments and literals are blanked, then braces are matched; a brace
that opens at namespace or class scope after a header with a parameter list (and no `=` before
it) opens a function, whose body (lambdas and local classes included) counts to its closing brace.
Python: every def, by its AST extent. Exit status 1 when a function is over the limit.

    scripts/check-function-length.py [--max N] [paths...]      (default: src)
"""
import argparse
import ast
import os
import re
import sys

CPP_EXT = (".cpp", ".cc", ".h", ".hpp", ".cu", ".cuh")
SCOPE_WORDS = re.compile(r"^\s*(template\s*<.*>\s*)?(namespace|struct|class|union|enum|extern)\b")


def blank_literals(text):
    """Replaces comments, string and character literals with spaces, keeping newlines."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 digit separators
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            out.append(c)
            i += 1
            continue
        out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
        i = j
    return "".join(out)


def cpp_functions(text):
    """Yields (name, first line, line count) of every function body at namespace or class scope."""
    code = blank_literals(text)
    stack = []  # per open brace: "scope" (namespace, class, initializer) or "function"
    opened = []  # (name, first line) of the function whose body is open
    header_start = 0
    for i, c in enumerate(code):
        if c in ";}" and (not stack or stack[-1] == "scope"):
            header_start = i + 1
        if c == "{":
            if stack and stack[-1] == "function":
                stack.append("function")
                continue
            header = code[header_start:i]
            head = re.sub(r"\s+", " ", header).strip()
            paren = head.find("(")
            is_function = (paren > 0 and not SCOPE_WORDS.match(head) and "=" not in head[:paren].replace("operator", "")
                           and not head.startswith("#"))
            if is_function:
                name = re.findall(r"([~\w:]+(?:operator\W+)?)\s*\(", head)
                start_line = code.count("\n", 0, header_start + len(header) - len(header.lstrip())) + 1
                stack.append("function")
                opened.append((name[0] if name else "?", start_line))
            else:
                stack.append("scope")
            header_start = i + 1
        elif c == "}":
            if not stack:
                continue
            kind = stack.pop()
            if kind == "function" and (not stack or stack[-1] == "scope"):
                name, start_line = opened.pop()
                end_line = code.count("\n", 0, i) + 1
                yield name, start_line, end_line - start_line + 1
            header_start = i + 1


def python_functions(text, path):
    for node in ast.walk(ast.parse(text, path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, start, node.end_lineno - start + 1


def files_under(paths):
    for p in paths:
        if os.path.isfile(p):
            yield p
            continue
        for root, _, names in os.walk(p):
            for n in sorted(names):
                yield os.path.join(root, n)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=150, help="longest allowed function, in lines")
    ap.add_argument("--all", action="store_true", help="list every function over --max/2 as well (no failure)")
    ap.add_argument("paths", nargs="*", default=["src"])
    a = ap.parse_args()
    over = []
    for path in sorted(files_under(a.paths)):
        text = open(path, encoding="utf-8", errors="replace").read()
        if path.endswith(CPP_EXT):
            funcs = cpp_functions(text)
        elif path.endswith(".py"):
            funcs = python_functions(text, path)
        else:
            continue
        for name, line, length in funcs:
            if length > a.max or (a.all and length > a.max // 2):
                over.append((length, f"{path}:{line}: {name}: {length} lines"))
    for length, msg in sorted(over, reverse=True):
        print(msg)
    failed = [m for length, m in over if length > a.max]
    if failed:
        print(f"{len(failed)} function(s) over {a.max} lines", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
