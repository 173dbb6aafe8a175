"""The frozen Manim CE 0.19.0 namespace used by the API-hallucination checker (spec execution.md §9.1).

The namespace is generated once, at build time, from the installed manim (which must be 0.19.0) and checked into
the repo as ``data/manim_namespace_0.19.0.json``. Scoring never imports manim: it reads the JSON, so the verdicts
do not depend on what the scoring machine has installed.

Regenerate (only on purpose, in a reviewable commit)::

    python -m prism_fast.execute.manim_namespace --write

JSON layout (all lists sorted)::

    {"manim_version": "0.19.0", "python": "3.11.7", "format": 1, "library_versions": {"Pillow": ..., ...},
     "star_names": [...],                     # what `from manim import *` binds
     "type_attrs": [...],                     # dir(type): class-level attributes every class has
     "modules": {"manim.utils.rate_functions": {"names": {name: kind}, "star": [...],
                                                  "loaded_by_import_manim": true}, ...},
     "import_failures": {"manim.x": "ImportError: ..."},
     "classes": {"manim.mobject.geometry.arc.Circle": {
                    "mro": [keys, self first], "own": [dir(cls) minus dir of its bases],
                    "whole": bool,                      # "own" is all of dir(cls) (Enum classes)
                    "inst": [attributes assigned to self in the class's own source],
                    "init": {"params": [...], "varkw": bool, "absorbs": bool} | null,  # own __init__ only
                    "getattr": bool}}}                                  # __getattr__ in cls.__dict__

``kind`` is ``"class:<key>"``, ``"module:<dotted name>"`` or ``""`` (any other object).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import json
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

MANIM_VERSION = "0.19.0"
NAMESPACE_FORMAT = 1
NAMESPACE_PATH = Path(__file__).with_name("data") / f"manim_namespace_{MANIM_VERSION}.json"

# Classes whose __getattr__ implements manim's get_<x>/set_<x> compatibility layer (mobject.py).
MOBJECT_KEY = "manim.mobject.mobject.Mobject"
SCENE_KEY = "manim.scene.scene.Scene"


# --------------------------------------------------------------------------------------------------------------
# Building (needs manim 0.19.0 installed)
# --------------------------------------------------------------------------------------------------------------

def _class_key(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _kind_of(value) -> str:
    if inspect.ismodule(value):
        return f"module:{value.__name__}"
    if inspect.isclass(value):
        return f"class:{_class_key(value)}"
    return ""


def _self_assigned_attrs(cls: type) -> list[str]:
    """Attributes that the class's own methods assign on their first argument (``self.x = ...``)."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError):
        return []
    found: set[str] = set()
    cls_node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if cls_node is None:
        return []
    for item in cls_node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or not item.args.args:
            continue
        self_name = item.args.args[0].arg
        for node in ast.walk(item):
            if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                    and isinstance(node.value, ast.Name) and node.value.id == self_name):
                found.add(node.attr)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr"
                  and len(node.args) >= 2 and isinstance(node.args[0], ast.Name)
                  and node.args[0].id == self_name and isinstance(node.args[1], ast.Constant)
                  and isinstance(node.args[1].value, str)):
                found.add(node.args[1].value)
    return sorted(found)


def _init_info(cls: type) -> dict | None:
    if "__init__" not in cls.__dict__:
        return None
    try:
        sig = inspect.signature(cls.__dict__["__init__"])
    except (TypeError, ValueError):
        return {"params": [], "varkw": True}  # builtin without a signature: accept anything
    params = [p.name for p in list(sig.parameters.values())[1:]
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    varkw_name = next((p.name for p in sig.parameters.values() if p.kind is p.VAR_KEYWORD), None)
    info = {"params": sorted(params), "varkw": varkw_name is not None, "absorbs": False}
    if varkw_name is None or not cls.__module__.startswith("manim"):
        return info
    # Keys read out of **kwargs (kwargs.pop("tip_shape"), kwargs.get(...), kwargs["x"], "x" in kwargs) are
    # accepted keywords too; a **kwargs that is never forwarded with `**kwargs` is absorbed (Animation logs
    # and drops extra keywords), so the accepted set past this class is unknown.
    try:
        fn = ast.parse(textwrap.dedent(inspect.getsource(cls.__dict__["__init__"]))).body[0]
    except (OSError, TypeError, SyntaxError, IndentationError, IndexError):
        info["absorbs"] = True
        return info
    forwarded = False
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            if any(k.arg is None and isinstance(k.value, ast.Name) and k.value.id == varkw_name
                   for k in node.keywords):
                forwarded = True
            if (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == varkw_name and node.func.attr in ("pop", "get", "setdefault")
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                info["params"].append(node.args[0].value)
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == varkw_name
              and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            info["params"].append(node.slice.value)
        elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Constant)
              and isinstance(node.left.value, str) and any(isinstance(c, ast.Name) and c.id == varkw_name
                                                          for c in node.comparators)):
            info["params"].append(node.left.value)
    info["params"] = sorted(set(info["params"]))
    info["absorbs"] = not forwarded
    return info


def _library_versions() -> dict[str, str]:
    from importlib import metadata

    out = {}
    for dist in ("Pillow", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "absent"
    return out


def build_namespace() -> dict:
    """Introspect the installed manim (must be 0.19.0) into the JSON structure described in the module doc."""
    import pkgutil

    import manim

    if manim.__version__ != MANIM_VERSION:
        raise RuntimeError(f"the namespace must be built from manim {MANIM_VERSION}, found {manim.__version__}")

    modules: dict[str, dict] = {}
    failures: dict[str, str] = {}
    classes: dict[str, type] = {}

    def snapshot(name: str, mod, loaded_by_import: bool) -> None:
        names = {}
        for attr in dir(mod):
            try:
                value = getattr(mod, attr)
            except Exception:  # noqa: BLE001 - a lazy attribute that fails is still a name
                names[attr] = ""
                continue
            names[attr] = _kind_of(value)
            if inspect.isclass(value):
                classes.setdefault(_class_key(value), value)
        explicit = getattr(mod, "__all__", None)
        star = list(explicit) if explicit is not None else [a for a in dir(mod) if not a.startswith("_")]
        modules[name] = {"names": dict(sorted(names.items())), "star": sorted(set(star)),
                         "loaded_by_import_manim": loaded_by_import}

    # What a plain `import manim` loads, captured before other submodules are imported (importing more
    # submodules adds attributes to their parent packages).
    for name in sorted(m for m in list(sys.modules) if m == "manim" or m.startswith("manim.")):
        if sys.modules[name] is not None:
            snapshot(name, sys.modules[name], True)
    for info in pkgutil.walk_packages(manim.__path__, "manim.", onerror=lambda n: failures.setdefault(n, "walk")):
        if info.name in modules or info.name.endswith("__main__"):
            continue
        try:
            mod = importlib.import_module(info.name)
        except Exception as exc:  # noqa: BLE001 - recorded in the JSON
            failures[info.name] = f"{type(exc).__name__}: {exc}"
            continue
        snapshot(info.name, mod, False)
    for name in sorted(m for m in list(sys.modules) if m.startswith("manim.") and m not in modules):
        if sys.modules[name] is not None:
            snapshot(name, sys.modules[name], False)

    # Close the class set over base classes (object, ABC, Generic, ...).
    todo = list(classes.values())
    while todo:
        cls = todo.pop()
        for base in cls.__mro__:
            if _class_key(base) not in classes:
                classes[_class_key(base)] = base
                todo.append(base)

    class_json: dict[str, dict] = {}
    for key, cls in sorted(classes.items()):
        full = set(dir(cls))
        inherited = set().union(*(set(dir(b)) for b in cls.__bases__)) if cls.__bases__ else set()
        # Classes whose dir() is not the union along the MRO (Enum's metaclass __dir__) store it whole.
        whole = not inherited <= full
        class_json[key] = {
            "mro": [_class_key(c) for c in cls.__mro__],
            "own": sorted(full if whole else full - inherited),
            "whole": whole,
            "inst": _self_assigned_attrs(cls) if cls.__module__.startswith("manim") else [],
            "init": _init_info(cls),
            "getattr": "__getattr__" in cls.__dict__,
        }
    namespace = {
        "format": NAMESPACE_FORMAT,
        "manim_version": manim.__version__,
        "python": ".".join(map(str, sys.version_info[:3])),
        # Non-manim classes reachable from manim's namespace (PIL.Image.Image, pathlib.Path, ...) carry the dir()
        # of these libraries; their versions are recorded for provenance.
        "library_versions": _library_versions(),
        "star_names": modules["manim"]["star"],
        "type_attrs": sorted(dir(type)),
        "modules": modules,
        "import_failures": dict(sorted(failures.items())),
        "classes": class_json,
    }
    # The compressed records must reproduce dir(cls) exactly; a class where they do not (e.g. a str-mixin Enum,
    # whose metaclass __dir__ hides inherited names) stores its whole dir(). Repeat until stable, since a
    # change can affect subclasses.
    changed = True
    while changed:
        changed = False
        ns = Namespace(namespace)
        for key, cls in sorted(classes.items()):
            if ns.class_dir(key) != frozenset(dir(cls)) and not class_json[key]["whole"]:
                class_json[key]["own"], class_json[key]["whole"] = sorted(dir(cls)), True
                changed = True
    ns = Namespace(namespace)
    for key, cls in classes.items():
        if ns.class_dir(key) != frozenset(dir(cls)):
            raise AssertionError(f"dir() reconstruction failed for {key}")
    return namespace


def write_namespace(path: Path = NAMESPACE_PATH) -> Path:
    data = build_namespace()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------------------------------
# Reading (no manim import)
# --------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)  # identity hash: lru_cache keys on the instance
class Namespace:
    """Read-only view of the frozen namespace JSON."""

    data: dict

    @property
    def star_names(self) -> frozenset[str]:
        return frozenset(self.data["star_names"])

    def has_module(self, dotted: str) -> bool:
        return dotted in self.data["modules"]

    def module_names(self, dotted: str) -> dict[str, str]:
        return self.data["modules"][dotted]["names"]

    def module_star(self, dotted: str) -> list[str]:
        return self.data["modules"][dotted]["star"]

    def has_class(self, key: str) -> bool:
        return key in self.data["classes"]

    def mro(self, key: str) -> list[str]:
        return self.data["classes"][key]["mro"]

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - instances are few and long-lived
    def class_dir(self, key: str) -> frozenset[str]:
        """dir(cls), rebuilt from the per-class ``own`` lists along the MRO."""
        out: set[str] = set()
        for k in self.mro(key):
            record = self.data["classes"][k]
            out.update(record["own"])
            if record["whole"]:
                break
        return frozenset(out)

    @functools.lru_cache(maxsize=4096)  # noqa: B019
    def instance_attrs(self, key: str) -> frozenset[str]:
        """dir(cls) plus attributes that manim's own methods assign on ``self`` anywhere in the MRO."""
        out = set(self.class_dir(key))
        for k in self.mro(key):
            out.update(self.data["classes"][k]["inst"])
        return frozenset(out)

    def is_subclass(self, key: str, base_key: str) -> bool:
        return base_key in self.mro(key)

    def has_dynamic_getattr(self, key: str) -> bool:
        """A __getattr__ other than Mobject's get_/set_ layer accepts any attribute: never check those."""
        return any(self.data["classes"][k]["getattr"] and k != MOBJECT_KEY for k in self.mro(key))

    def init_keywords(self, key: str) -> frozenset[str] | None:
        """Keywords accepted by ``cls(...)`` following **kwargs pass-through along the MRO.

        None when the chain ends in an open ``**kwargs`` (the accepted set is unknown).
        """
        accepted: set[str] = set()
        for k in self.mro(key):
            info = self.data["classes"][k]["init"]
            if info is None:
                continue
            if k == "builtins.object":
                # Extra keywords that reach object.__init__ raise TypeError: the chain is closed.
                return frozenset(accepted)
            accepted.update(info["params"])
            if not info["varkw"]:
                return frozenset(accepted)
            if info.get("absorbs"):
                return None
        return None

    @property
    def sha256(self) -> str:
        import hashlib

        return hashlib.sha256(json.dumps(self.data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@functools.lru_cache(maxsize=4)
def load_namespace(path: str | None = None) -> Namespace:
    p = Path(path) if path else NAMESPACE_PATH
    data = json.loads(p.read_text(encoding="utf-8"))
    if data.get("manim_version") != MANIM_VERSION or data.get("format") != NAMESPACE_FORMAT:
        raise ValueError(f"{p}: namespace is for manim {data.get('manim_version')} format {data.get('format')}, "
                         f"expected manim {MANIM_VERSION} format {NAMESPACE_FORMAT}")
    return Namespace(data)


def namespace_file_sha256(path: Path = NAMESPACE_PATH) -> str:
    """sha256 of the namespace file bytes, recorded in the run manifest (§9.4)."""
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python -m prism_fast.execute.manim_namespace --write")
    print(write_namespace())
