"""TextExpand's ``ast`` mode (spec text_expand.md §3): a small abstract interpreter over the parsed module.
Module-level statements bind constants, then the ``construct`` body of every top-level class is walked, calls to
top-level functions and ``self`` methods are simulated, and text-producing calls (§2) contribute their
constant-evaluated arguments (``text_expand_eval``). Quirks (Q-TEXT-…) are switches of the ``Profile``.
"""

from __future__ import annotations

import ast

from prism_fast.metrics.text_expand_eval import (MAX_LOOP_ITEMS, METHODS, UNKNOWN, ConstantEvaluator,
                                                 ExtractionBudgetExceeded, bind_target, callee_name,
                                                 constructor_table, flatten_to_strings, non_blank, unbind_target)
from prism_fast.profile import REFERENCE, Profile


# --------------------------------------------------------------------------------------------------------------
# §3 static walk
# --------------------------------------------------------------------------------------------------------------

def _nested_def_key(name: str) -> tuple[str, str]:
    """Environment key of a function defined inside a walked body (Q-TEXT-6 improved). A tuple can never clash
    with a variable name, and it is copied with the environment, so it follows the same block scoping."""
    return ("<nested def>", name)


def _is_staticmethod(func: ast.FunctionDef) -> bool:
    return any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in func.decorator_list)


class StaticTextWalker:
    """The abstract interpreter of §3 over one parsed module."""

    def __init__(self, tree: ast.Module, profile: Profile = REFERENCE):
        self.profile = profile
        self.functions: dict[str, ast.FunctionDef] = {}
        self.classes: dict[str, dict[str, ast.FunctionDef]] = {}
        self.module_statements: list[ast.stmt] = []
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = {
                    child.name: child for child in node.body if isinstance(child, ast.FunctionDef)
                }
            else:
                self.module_statements.append(node)
        self.global_env: dict = {}
        self.evaluator = ConstantEvaluator(profile, self.global_env)
        self.constructors = constructor_table(profile)
        self._simulate_nested = profile.fixes("Q-TEXT-6")
        self._unbind_unknown = profile.fixes("Q-TEXT-7")
        self.loop_items = 0  # unrolled so far (MAX_LOOP_ITEMS)

    def extract(self) -> list[str]:
        """Module statements first (texts discarded, constants kept), then every construct in source order."""
        self.global_env.clear()
        self.walk(self.module_statements, self.global_env, None, ())
        texts: list[str] = []
        for class_name, methods in self.classes.items():
            if "construct" in methods:
                texts.extend(self.walk(methods["construct"].body, dict(self.global_env), class_name, ()))
        return texts

    # ---- statements (§3.2) -----------------------------------------------------------------------------------

    def walk(self, statements: list[ast.stmt], env: dict, class_name: str | None, stack: tuple) -> list[str]:
        texts: list[str] = []
        for statement in statements:
            texts.extend(self._statement(statement, env, class_name, stack))
        return texts

    def _statement(self, node: ast.stmt, env: dict, class_name: str | None, stack: tuple) -> list[str]:
        ev = self.evaluator

        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is None:  # bare annotation `x: int`
                return []
            texts = self.scan(node.value, env, class_name, stack)
            value = ev.value(node.value, env)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if value is not UNKNOWN:
                    bind_target(target, value, env)
                elif self._unbind_unknown:
                    # Q-TEXT-7 improved: an unknown value unbinds the target (reference keeps the stale constant).
                    unbind_target(target, env)
            return texts
        if isinstance(node, ast.Expr):
            return self.scan(node.value, env, class_name, stack)
        if isinstance(node, ast.Return):
            return self.scan(node.value, env, class_name, stack) if node.value is not None else []
        if isinstance(node, ast.For):
            texts = self.scan(node.iter, env, class_name, stack)
            iterable = ev.value(node.iter, env)
            if isinstance(iterable, (list, tuple)):
                self.loop_items += len(iterable)
                if self.loop_items > MAX_LOOP_ITEMS:
                    raise ExtractionBudgetExceeded(f"more than {MAX_LOOP_ITEMS} loop iterations to unroll")
                for item in iterable:
                    item_env = dict(env)
                    bind_target(node.target, item, item_env)
                    texts.extend(self.walk(node.body, item_env, class_name, stack))
                    # The else block runs once per item, with the item's environment (toolkit behaviour).
                    texts.extend(self.walk(node.orelse, item_env, class_name, stack))
            else:
                body_env = dict(env)
                if self._unbind_unknown:
                    unbind_target(node.target, body_env)  # Q-TEXT-7 improved: the loop variable is unknown
                texts.extend(self.walk(node.body, body_env, class_name, stack))
            return texts
        if isinstance(node, ast.If):
            texts = self.scan(node.test, env, class_name, stack)
            verdict = ev.condition(node.test, env)
            if verdict is not False:
                texts.extend(self.walk(node.body, dict(env), class_name, stack))
            if verdict is not True:
                texts.extend(self.walk(node.orelse, dict(env), class_name, stack))
            return texts
        if isinstance(node, ast.While):
            texts = self.scan(node.test, env, class_name, stack)
            texts.extend(self.walk(node.body, dict(env), class_name, stack))
            texts.extend(self.walk(node.orelse, dict(env), class_name, stack))
            return texts
        if isinstance(node, ast.With):
            texts = []
            body_env = dict(env)
            for item in node.items:
                texts.extend(self.scan(item.context_expr, env, class_name, stack))
                if self._unbind_unknown and item.optional_vars is not None:
                    unbind_target(item.optional_vars, body_env)  # Q-TEXT-7 improved: `as` target is unknown
            texts.extend(self.walk(node.body, body_env, class_name, stack))
            return texts
        if isinstance(node, ast.Try):
            texts = self.walk(node.body, dict(env), class_name, stack)
            for handler in node.handlers:
                texts.extend(self.walk(handler.body, dict(env), class_name, stack))
            texts.extend(self.walk(node.orelse, dict(env), class_name, stack))
            texts.extend(self.walk(node.finalbody, dict(env), class_name, stack))
            return texts
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if self._simulate_nested and isinstance(node, ast.FunctionDef):
                # Q-TEXT-6 improved: remember the nested def so that calls to it are simulated.
                env[_nested_def_key(node.name)] = node
            return []
        if isinstance(node, ast.ClassDef):
            return []
        # Anything else: scan the direct expression children. AugAssign does not update bindings.
        texts = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                texts.extend(self.scan(child, env, class_name, stack))
        if self._unbind_unknown and isinstance(node, ast.AugAssign):
            unbind_target(node.target, env)  # Q-TEXT-7 improved: the new value is not evaluated, so unknown
        return texts

    # ---- expressions (§3.3) ----------------------------------------------------------------------------------

    def scan(self, node: ast.AST, env: dict, class_name: str | None, stack: tuple) -> list[str]:
        texts: list[str] = []
        if isinstance(node, ast.Call):
            texts.extend(self.call_texts(node, env))
            texts.extend(self._simulate_callee(node, env, class_name, stack))
        for child in ast.iter_child_nodes(node):
            texts.extend(self.scan(child, env, class_name, stack))
        return texts

    def call_texts(self, node: ast.Call, env: dict) -> list[str]:
        """The display strings of one call per the tables of §2 (positionals first, then keywords in call
        order)."""
        name = callee_name(node.func)
        selection = self.constructors.get(name) if name is not None else None
        if selection is None and isinstance(node.func, ast.Attribute):
            selection = METHODS.get(node.func.attr)
        if selection is None:
            return []
        chosen: list[ast.expr] = []
        if selection.positional == "all":
            chosen.extend(node.args)
        elif isinstance(selection.positional, int) and len(node.args) > selection.positional:
            chosen.append(node.args[selection.positional])
        chosen.extend(kw.value for kw in node.keywords if kw.arg and kw.arg in selection.keywords)
        texts: list[str] = []
        for expr in chosen:
            texts.extend(flatten_to_strings(self.evaluator.value(expr, env)))
        return non_blank(texts)

    def _simulate_callee(self, node: ast.Call, env: dict, class_name: str | None, stack: tuple) -> list[str]:
        # The toolkit evaluates the positional arguments of every call, simulated or not.
        arg_values = [self.evaluator.value(arg, env) for arg in node.args]
        func = node.func
        if isinstance(func, ast.Name):
            nested = env.get(_nested_def_key(func.id)) if self._simulate_nested else None
            if nested is not None:
                # Q-TEXT-6 improved: a function nested in the walked body; it closes over the caller's scope.
                return self._simulate(nested, arg_values, class_name, env, stack, kind="nested")
            if func.id in self.functions:
                return self._simulate(self.functions[func.id], arg_values, class_name, env, stack, kind="function")
            init = self.classes.get(func.id, {}).get("__init__")
            if self._simulate_nested and init is not None:
                # Q-TEXT-6 improved: instantiating a top-level class runs its __init__.
                return self._simulate(init, arg_values, func.id, env, stack, kind="method")
            return []
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and class_name in self.classes
            and func.attr in self.classes[class_name]
        ):
            method = self.classes[class_name][func.attr]
            return self._simulate(method, arg_values, class_name, env, stack, kind="method")
        return []

    def _simulate(self, func: ast.FunctionDef, arg_values: list, class_name: str | None, caller_env: dict,
                  stack: tuple, *, kind: str) -> list[str]:
        if self.profile.fixes("Q-TEXT-2"):
            # Q-TEXT-2 improved: a function already on the simulation stack is not entered again.
            key: tuple = (class_name or "", func.name, func.lineno, func.col_offset)
        else:
            # Q-TEXT-2 reference: the key holds the stack depth, so it never matches; recursion ends in
            # RecursionError and the row becomes parse_fail.
            key = (class_name or "", func.name, len(stack))
        if key in stack:
            return []

        local_env = dict(self.global_env)
        if kind == "nested" or not self.profile.fixes("Q-TEXT-8"):
            # Q-TEXT-8 reference: the callee sees the caller's locals. (Improved: nested functions keep this,
            # because they really close over the enclosing scope.)
            local_env.update(caller_env)

        params = list(func.args.posonlyargs) + list(func.args.args)
        if kind == "method" and self.profile.fixes("Q-TEXT-1") and params and not _is_staticmethod(func):
            # Q-TEXT-1 improved: self/cls is the instance; the actual arguments bind to the next parameters.
            local_env[params[0].arg] = UNKNOWN
            params = params[1:]
        if self.profile.fixes("Q-TEXT-8"):
            # Q-TEXT-8 improved: every own parameter shadows globals, even when its value stays unknown.
            every_param = params + list(func.args.kwonlyargs)
            every_param += [a for a in (func.args.vararg, func.args.kwarg) if a is not None]
            for param in every_param:
                local_env[param.arg] = UNKNOWN
        defaults = list(func.args.defaults)
        first_default = len(params) - len(defaults)
        for index, param in enumerate(params):
            if index < len(arg_values):
                local_env[param.arg] = arg_values[index]
            elif index >= first_default:
                default = self.evaluator.value(defaults[index - first_default], local_env)
                if default is not UNKNOWN:
                    local_env[param.arg] = default
        return self.walk(func.body, local_env, class_name, stack + (key,))
