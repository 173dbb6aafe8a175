"""Name injection (spec §3 step 3): which assignments name their object."""

import ast

from prism_fast.audit.inject import inject_names


class Named:
    def __init__(self):
        self.name = type(self).__name__

    def set(self, **kw):
        self.__dict__.update(kw)
        return self


SRC = '''
a = Named()
b, c = Named(), Named()
holder = type("H", (), {})()
holder.x = Named()
d: Named = Named()
items = [Named() for _ in range(2)]
for e in [Named()]:
    pass
def f():
    inner = Named()
    return inner
g = f()
for _ in range(3):
    loop = Named()
n = 5
'''


def test_only_single_bare_name_assignments_are_named():
    ns = {"Named": Named}
    exec(compile(inject_names(ast.parse(SRC)), "<t>", "exec"), ns)
    assert ns["a"].name == "a"
    assert ns["b"].name == "Named" and ns["c"].name == "Named"   # tuple unpacking
    assert ns["holder"].x.name == "Named"                        # attribute target
    assert ns["d"].name == "Named"                               # AnnAssign
    assert [i.name for i in ns["items"]] == ["Named", "Named"]   # list not an object with .set
    assert ns["e"].name == "Named"                               # for target
    assert ns["g"].name == "g"                                   # inner then renamed by g = f()
    assert ns["loop"].name == "loop"
    assert ns["n"] == 5                                          # int has no .set: swallowed
