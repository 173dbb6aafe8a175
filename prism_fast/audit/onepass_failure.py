"""A failed one-pass render, inside the render child: may the audit take the render's snapshots, and can the
printed error be the plain render's? (issue 19: a failed render costs one Manim execution, not three).

When manim's CLI prints the exception that ended a one-pass render, :meth:`Frames.examine` walks the traceback of
the exception and of every exception chained to it (``__cause__``, ``__context__``) and accepts the failure only
when

* every frame of prism_fast code in it is a *pass-through* of the observers -- a hooked method (``play``,
  ``remove``, ``render``, ``compile_animation_data`` of the audit's scene classes, the module loader) whose next
  frame is exactly the method it wraps. Those frames are unlinked from the traceback (``tb_next`` is writable),
  so Rich prints the frames a plain render prints. Any other prism_fast frame (a snapshot, a guard, the text
  check) means the observers raised or changed the error: refused;
* no frame is one only the render runs or one whose work depends on the frame rate: manim's camera, renderer
  (but ``CairoRenderer.play``, which only sequences the play), scene file writer, the per-frame loop
  (``Scene.update_to_time``, ``update_mobjects``, ``update_self``, the time progression) and ``Mobject.update``
  (updaters). The audit-only run steps plays at other times (60 fps, or one update), so an error raised there
  need not happen, or not at the same point, in the audit;
* it is no ``NameError`` on a name of manim's module: the audit runs the script in a namespace that already holds
  ``manim.__dict__`` (spatial_audit.md §3 step 4), so a script that never imports ``Scene`` or ``Square`` fails
  in the render only (red team);
* it is not a ``RecursionError`` (the observers' frames change the stack depth), ``MemoryError`` or an exception
  group, and no mobject ``repr`` ran during the render (it prints the audit's injected variable names, which a
  printed error could carry).

Everything else the two executions could disagree on is what the static rule and the observers' reasons already
refuse (a used result of ``remove``, ``config``/time reads, updaters, …): with no reason recorded, the script's
state at every statement outside the per-frame loop is the audit's, so the exception is the one the audit meets
at the same statement. The verdict (``accept``, ``why``, ``where``: ``render`` inside the scene's ``render()``,
else ``runtime``; ``error``: the audit's ``f"{type(exc).__name__}: {exc}"``) goes into the sealed out file; the
parent keeps the failed render as the sample's only execution when ``accept`` holds (audit/onepass.py).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import CodeType, TracebackType

HOOKED = ("play", "remove", "render", "compile_animation_data")
_REFUSED_TYPES = (RecursionError, MemoryError)
_OWN_DIR = os.path.dirname(os.path.abspath(__file__))  # prism_fast/audit: the observers' code
_PACKAGE_DIR = os.path.dirname(_OWN_DIR)  # prism_fast: the render child's own wrappers live in execute/


@dataclass
class Frames:
    """The code objects the examination needs: ``passes`` maps each observer wrapper's code to the codes its next
    frame may have; ``denied`` are render-only or per-frame manim functions; ``denied_dirs`` whole directories."""

    passes: dict[CodeType, set[CodeType]]
    denied: set[CodeType] = field(default_factory=set)
    allowed: set[CodeType] = field(default_factory=set)  # exceptions inside a denied directory
    denied_dirs: tuple[str, ...] = ()
    own_dir: str = _OWN_DIR  # frames from here are the observers' (only pass-throughs may stay)
    package_dir: str = _PACKAGE_DIR  # other prism_fast frames: the render child's wrappers (TeX cache, text boxes)
    render: CodeType | None = None  # manim's Scene.render: an exception under it is a scene error ("render")
    # manim's module names: the audit runs the script in a namespace that already holds them (spatial_audit.md §3
    # step 4), so a NameError on one of them is the render's alone (red team: a script without `from manim import *`)
    preset_names: frozenset = frozenset()

    @classmethod
    def of(cls, scene_cls: type, original_scene: type, extra: dict | None = None) -> "Frames":
        passes: dict[CodeType, set[CodeType]] = {}
        mro = scene_cls.__mro__
        chain = mro[:mro.index(original_scene) + 1]  # the observers' classes and mixins, then manim's Scene
        for name in HOOKED:
            defs = [c.__dict__[name] for c in chain if name in c.__dict__]
            codes = [_code(f) for f in defs]
            for outer, inner in zip(codes, codes[1:]):
                if outer is not None and inner is not None and _is_own(outer, _OWN_DIR):
                    passes.setdefault(outer, set()).add(inner)
        for wrapper, inner in (extra or {}).items():
            passes.setdefault(wrapper, set()).update(inner)

        import manim
        from manim.mobject.mobject import Mobject
        from manim.renderer.cairo_renderer import CairoRenderer

        denied = {_code(f) for f in (original_scene.update_to_time, original_scene.update_mobjects,
                                     original_scene.update_self, original_scene.get_time_progression,
                                     original_scene._get_animation_time_progression, Mobject.update)}
        root = os.path.dirname(os.path.abspath(manim.__file__))
        dirs = tuple(os.path.join(root, *p) for p in (("camera",), ("renderer",), ("scene", "scene_file_writer.py"),
                                                         ("utils", "caching.py")))
        return cls(passes=passes, denied={c for c in denied if c is not None},
                   allowed={_code(CairoRenderer.play)}, denied_dirs=dirs, render=_code(original_scene.render),
                   preset_names=frozenset(vars(manim)))

    def examine(self, exc: BaseException | None, scene_started: bool, repr_seen,
                module_file: str | None = None) -> dict:
        """The verdict on the exception about to be printed: ``{"printed_as_plain", "accept", "why", "where",
        "error", "type"}``.

        ``printed_as_plain``: the only observer frames are pass-throughs (then unlinked from every traceback
        involved, so what is printed is the plain render's) and nothing else of the observers can be in the text;
        otherwise nothing is changed and the sample is rendered again. ``accept`` (implies the former): also no
        render-only or per-frame frame, so the audit meets the same exception at the same statement.

        The first frame of the exception's own traceback is where it was caught (manim's CLI, or the render
        child's top level for the excepthook), the same frame in both executions: it is not examined. With
        ``module_file`` (the excepthook's case: manim's CLI did not catch it) the audit meets it only if it was
        raised while the script's module body ran: anything else is an error of the CLI. ``repr_seen``: a bool, or
        a callable read after the exceptions' texts are built (building them may run a mobject's repr)."""
        if exc is None:
            return {"printed_as_plain": False, "accept": False, "why": "no_exception"}
        in_render = scene_started or any(tb.tb_frame.f_code is self.render for tb in _entries(exc.__traceback__))
        # the text of every exception Rich prints, before ``repr_seen`` is read: an exception whose argument is a
        # mobject (``raise ValueError(circle)``, ``{}[circle]``) runs the mobject's repr (its injected name) only
        # when it is printed
        texts = [_error_text(one) for one in _chain(exc)]
        verdict = {"printed_as_plain": False, "accept": False, "where": "render" if in_render else "runtime",
                   "error": texts[0], "type": type(exc).__name__}
        why = "mobject_repr" if (repr_seen() if callable(repr_seen) else repr_seen) else None
        audit_why = None
        if not isinstance(exc, Exception):
            # a BaseException that is no Exception (``class Boom(BaseException)`` raised by the module body): the
            # audit-only run's child does not catch it either -- its process dies, its row has no salvage
            audit_why = f"exception:{type(exc).__name__}"
        if audit_why is None and module_file is not None and not any(
                tb.tb_frame.f_code.co_name == "<module>" and tb.tb_frame.f_code.co_filename == module_file
                for tb in _entries(exc.__traceback__)):
            audit_why = "not_in_the_script_module"
        strip: list[tuple[BaseException, list[TracebackType]]] = []
        for one in _chain(exc):
            if why:
                break
            if isinstance(one, _REFUSED_TYPES) or isinstance(one, BaseExceptionGroup):
                why = f"exception:{type(one).__name__}"
                break
            if audit_why is None and isinstance(one, NameError) and getattr(one, "name", None) in self.preset_names:
                audit_why = f"name_preset_in_audit:{one.name}"
            entries = _entries(one.__traceback__)
            keep = []
            for i, tb in enumerate(entries):
                code = tb.tb_frame.f_code
                if i == 0 and one is exc:
                    keep.append(tb)  # where it was caught
                    continue
                if code in self.passes:
                    nxt = entries[i + 1].tb_frame.f_code if i + 1 < len(entries) else None
                    if nxt is None or nxt not in self.passes[code]:
                        why = f"observer_frame:{code.co_name}"
                        break
                    continue  # a pass-through: not in the plain render's traceback
                if _is_own(code, self.own_dir):
                    why = f"observer_frame:{code.co_name}"
                    break
                if _is_own(code, self.package_dir):
                    # a wrapper the render child installs for every render (execute/texcache.py, textboxes.py):
                    # printed by the plain render too; the audit meets the error only if it came from what the
                    # wrapper called outside prism_fast, not from the wrapper's own work
                    nxt = entries[i + 1].tb_frame.f_code if i + 1 < len(entries) else None
                    if audit_why is None and (nxt is None or _is_own(nxt, self.package_dir)):
                        audit_why = f"render_only:{code.co_name}"
                    keep.append(tb)
                    continue
                if audit_why is None and (code in self.denied or (
                        code not in self.allowed and code.co_filename.startswith(self.denied_dirs))):
                    audit_why = f"render_only:{code.co_name}"
                keep.append(tb)
            if why:
                break
            strip.append((one, keep))
        if why:
            verdict["why"] = why
            return verdict
        for one, keep in strip:
            if not keep:
                continue
            for a, b in zip(keep, keep[1:]):
                a.tb_next = b
            keep[-1].tb_next = None
            one.__traceback__ = keep[0]
        verdict["printed_as_plain"] = True
        if audit_why:
            verdict["why"] = audit_why
        else:
            verdict["accept"] = True
        return verdict


def _error_text(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:  # noqa: BLE001 - a str() that raises: the audit's own text would differ
        return f"{type(exc).__name__}: <unprintable>"


def _code(func) -> CodeType | None:
    func = getattr(func, "__func__", func)
    return getattr(func, "__code__", None)


def _is_own(code: CodeType, own_dir: str) -> bool:
    return os.path.abspath(code.co_filename).startswith(own_dir + os.sep)


def _entries(tb: TracebackType | None) -> list[TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def _chain(exc: BaseException):
    """The exception and every exception chained to it (as Rich prints them), each once."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        one = todo.pop()
        if id(one) in seen:
            continue
        seen.add(id(one))
        yield one
        for linked in (one.__cause__, one.__context__):
            if linked is not None:
                todo.append(linked)
