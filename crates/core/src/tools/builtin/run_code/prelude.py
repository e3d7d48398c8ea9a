# Hermes code actions: the workspace tools as Python functions, and the
# variables of earlier run_code calls of this run. Run before the model's
# code (which is compiled as "<string>", so its tracebacks read as if run
# alone); this file's own frames are left out of every traceback.
import json as _h_json
import os as _h_os
import pickle as _h_pickle
import sys as _h_sys
import traceback as _h_traceback
import types as _h_types

_H_SESSION = "/hermes"
_H_CALLS = _H_SESSION + "/calls.jsonl"
_H_STATE = _H_SESSION + "/state.pickle"
_H_MAX_STATE = 8 << 20


def _h_log(**call):
    try:
        with open(_H_CALLS, "a", encoding="utf-8") as f:
            f.write(_h_json.dumps(call, ensure_ascii=False) + "\n")
    except OSError:
        pass


def _h_path(path):
    text = _h_os.fspath(path)
    norm = _h_os.path.normpath(text)
    if _h_os.path.isabs(text) or norm == ".." or norm.startswith("../"):
        raise PermissionError(f"{text}: outside the workspace (use a path relative to it)")
    if norm == ".hermes" or norm.startswith(".hermes/"):
        raise PermissionError(f"{text}: Hermes's own folder is not the code's to use")
    return norm


def read_file(path):
    """The text of a workspace file."""
    p = _h_path(path)
    with open(p, encoding="utf-8") as f:
        text = f.read()
    _h_log(tool="read_file", path=p)
    return text


def write_file(path, content):
    """Writes text to a workspace file (folders are created); returns the path."""
    p = _h_path(path)
    folder = _h_os.path.dirname(p)
    if folder:
        _h_os.makedirs(folder, exist_ok=True)
    with open(p, "w", encoding="utf-8") as f:
        f.write(content if isinstance(content, str) else str(content))
    _h_log(tool="write_file", path=p)
    return p


def list_dir(path="."):
    """The names in a workspace folder, sorted; folders end with '/'."""
    p = _h_path(path)
    names = sorted(
        n + ("/" if _h_os.path.isdir(_h_os.path.join(p, n)) else "")
        for n in _h_os.listdir(p)
        if n != ".hermes"
    )
    _h_log(tool="list_dir", path=p)
    return names


def search_files(text, path="."):
    """The lines that contain `text` (any case) under a workspace folder:
    a list of {"path", "line", "text"}."""
    root = _h_path(path)
    needle = str(text).lower()
    found = []
    walk = [("", root)] if _h_os.path.isfile(root) else _h_os.walk(root)
    for folder, *rest in walk:
        files = [root] if not rest else [_h_os.path.join(folder, n) for n in sorted(rest[1])]
        if rest:
            rest[0][:] = sorted(d for d in rest[0] if d != ".hermes")
        for name in files:
            try:
                with open(name, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        if needle in line.lower():
                            found.append({"path": _h_os.path.normpath(name), "line": number, "text": line.rstrip("\n")})
            except (OSError, UnicodeDecodeError):
                continue
    _h_log(tool="search_files", path=root, text=str(text))
    return found


def _h_keepable(name, value):
    if name.startswith("_") or name in _H_TOOLS:
        return False
    if isinstance(value, (_h_types.ModuleType, _h_types.FunctionType, type, _h_types.BuiltinFunctionType)):
        return False
    try:
        _h_pickle.dumps(value)
        return True
    except Exception:
        return False


def _h_save(scope):
    kept = {n: v for n, v in scope.items() if _h_keepable(n, v)}
    data = _h_pickle.dumps(kept)
    if len(data) > _H_MAX_STATE:
        kept, data = {}, _h_pickle.dumps({})
    dropped = sorted(
        n for n, v in scope.items()
        if not n.startswith("_") and n not in kept and n not in _H_TOOLS and n not in _H_BASE
        and not isinstance(v, _h_types.ModuleType)
    )
    try:
        with open(_H_STATE, "wb") as f:
            f.write(data)
    except OSError:
        return
    _h_log(kept=sorted(kept), dropped=dropped)


def _h_run(code):
    scope = {"__name__": "__main__", "__builtins__": __builtins__}
    for name in _H_TOOLS:
        scope[name] = globals()[name]
    if _h_os.path.isfile(_H_STATE):
        try:
            with open(_H_STATE, "rb") as f:
                scope.update(_h_pickle.load(f))
        except Exception:
            pass
    status = 0
    try:
        exec(compile(code, "<string>", "exec"), scope)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=_h_sys.stderr)
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "<string>":
            tb = tb.tb_next
        _h_traceback.print_exception(type(e), e, tb)
        status = 1
    _h_sys.stdout.flush()
    if _h_os.path.isdir(_H_SESSION):
        _h_save(scope)
    _h_sys.exit(status)


_H_TOOLS = ("read_file", "write_file", "list_dir", "search_files")
_H_BASE = ("__name__", "__builtins__")
_h_code = _h_sys.argv[2] if len(_h_sys.argv) > 2 else ""
_h_sys.argv = [""]
_h_run(_h_code)
