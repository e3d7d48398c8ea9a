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


class _HNum(str):
    """A CSV cell that holds a number: the text as read, a number where the
    code uses it as one (arithmetic, ordering, comparison with a number, a
    numeric format). Small models add, subtract and compare CSV cells as if
    the csv module gave numbers; it gives text."""

    __slots__ = ()

    def _n(self):
        t = str.strip(self)
        try:
            return int(t)
        except ValueError:
            return float(t)

    def _other(self, o):
        if isinstance(o, _HNum):
            return o._n()
        if isinstance(o, (int, float)) and not isinstance(o, bool):
            return o
        return None

    def _op(self, o, f, text=None):
        n = self._other(o)
        if n is None:
            return text(o) if text else NotImplemented
        return f(self._n(), n)

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b, lambda o: str.__add__(self, o))

    def __radd__(self, o):
        return self._op(o, lambda a, b: b + a)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return self._op(o, lambda a, b: b - a)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._op(o, lambda a, b: b * a)

    def __truediv__(self, o):
        return self._op(o, lambda a, b: a / b)

    def __rtruediv__(self, o):
        return self._op(o, lambda a, b: b / a)

    def __floordiv__(self, o):
        return self._op(o, lambda a, b: a // b)

    def __rfloordiv__(self, o):
        return self._op(o, lambda a, b: b // a)

    def __mod__(self, o):
        return self._op(o, lambda a, b: a % b)

    def __pow__(self, o):
        return self._op(o, lambda a, b: a ** b)

    def __neg__(self):
        return -self._n()

    def __abs__(self):
        return abs(self._n())

    def __round__(self, digits=None):
        return round(self._n(), digits)

    def __float__(self):
        return float(self._n())

    def __int__(self):
        n = self._n()
        if isinstance(n, int):
            return n
        raise ValueError(f"invalid literal for int() with base 10: {str(self)!r}")

    def __index__(self):
        n = self._n()
        if isinstance(n, int):
            return n
        raise TypeError(f"{str(self)!r} is not a whole number")

    def __lt__(self, o):
        return self._op(o, lambda a, b: a < b, lambda o: str.__lt__(self, o))

    def __le__(self, o):
        return self._op(o, lambda a, b: a <= b, lambda o: str.__le__(self, o))

    def __gt__(self, o):
        return self._op(o, lambda a, b: a > b, lambda o: str.__gt__(self, o))

    def __ge__(self, o):
        return self._op(o, lambda a, b: a >= b, lambda o: str.__ge__(self, o))

    def __eq__(self, o):
        if isinstance(o, (int, float)) and not isinstance(o, bool):
            return self._n() == o
        return str.__eq__(self, o)

    def __ne__(self, o):
        return not self.__eq__(o)

    __hash__ = str.__hash__

    def __format__(self, spec):
        if spec and (spec[-1] in "bcdeEfFgGnoxX%" or "," in spec or "_" in spec):
            return format(self._n(), spec)
        return str.__format__(self, spec)

    def __reduce__(self):
        return (_HNum, (str(self),))


_H_NUMBER = None


def _h_cell(text):
    global _H_NUMBER
    if _H_NUMBER is None:
        import re

        _H_NUMBER = re.compile(r"\s*[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*\Z")
    return _HNum(text) if isinstance(text, str) and _H_NUMBER.match(text) else text


class _HReader:
    """csv.reader's rows, with each cell that holds a number an _HNum."""

    def __init__(self, inner):
        self._inner = inner

    def __iter__(self):
        return self

    def __next__(self):
        return [_h_cell(c) for c in next(self._inner)]

    def __getattr__(self, name):
        return getattr(self._inner, name)


def _h_numbers_in_csv():
    import csv

    plain = csv.reader

    def reader(*args, **kwargs):
        return _HReader(plain(*args, **kwargs))

    # csv.DictReader reads its rows through the module's `reader`.
    csv.reader = reader


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
        # The model's frames and Python's, without the prelude's (_HNum).
        frames = [f for f in _h_traceback.extract_tb(tb) if f.filename != "<hermes>"]
        if frames:
            print("Traceback (most recent call last):", file=_h_sys.stderr)
            print("".join(_h_traceback.format_list(frames)), end="", file=_h_sys.stderr)
        print("".join(_h_traceback.format_exception_only(type(e), e)), end="", file=_h_sys.stderr)
        status = 1
    _h_sys.stdout.flush()
    if _h_os.path.isdir(_H_SESSION):
        _h_save(scope)
    _h_sys.exit(status)


_H_TOOLS = ("read_file", "write_file", "list_dir", "search_files")
_H_BASE = ("__name__", "__builtins__")
_h_code = _h_sys.argv[2] if len(_h_sys.argv) > 2 else ""
_h_sys.argv = [""]
_h_numbers_in_csv()
_h_run(_h_code)
